// tools/sweep/plan_yaml.cpp — a YAML plan read with yaml-cpp (Debian's libyaml-cpp-dev) and turned into
// the JSON document it spells, so YAML and JSON plans go through one reader (plan.cpp) and expand alike.
// yaml-cpp leaves plain scalars untyped; they are typed here by the YAML 1.2 core schema, the one
// PyYAML-era surprises (yes/no/on/off as booleans, 010 as octal) are not part of.
#include <yaml-cpp/yaml.h>

#include <cmath>
#include <cstdlib>
#include <regex>

#include <fmt/format.h>

#include "commands.h"
#include "sweep.h"

namespace hfx::sweep {

namespace {

constexpr const char* kComp = "sweep";

// A plain scalar by the YAML 1.2 core schema: null, bool, int (decimal, 0o octal, 0x hex), float, else
// string.
json plain_scalar(const std::string& s) {
  static const std::regex null_re("~|null|Null|NULL|"), true_re("true|True|TRUE"),
      false_re("false|False|FALSE"), int_re("[-+]?[0-9]+"), oct_re("0o[0-7]+"), hex_re("0x[0-9a-fA-F]+"),
      float_re("[-+]?(\\.[0-9]+|[0-9]+(\\.[0-9]*)?)([eE][-+]?[0-9]+)?"), inf_re("[-+]?\\.(inf|Inf|INF)"),
      nan_re("\\.(nan|NaN|NAN)");
  if (std::regex_match(s, null_re)) return nullptr;
  if (std::regex_match(s, true_re)) return true;
  if (std::regex_match(s, false_re)) return false;
  if (std::regex_match(s, int_re)) return std::stoll(s);
  if (std::regex_match(s, oct_re)) return std::stoll(s.substr(2), nullptr, 8);
  if (std::regex_match(s, hex_re)) return std::stoll(s.substr(2), nullptr, 16);
  if (std::regex_match(s, float_re)) return std::strtod(s.c_str(), nullptr);  // strtod reads ".5" and "1."
  if (std::regex_match(s, inf_re)) return json(s[0] == '-' ? -HUGE_VAL : HUGE_VAL);
  if (std::regex_match(s, nan_re)) return json(std::nan(""));
  return s;
}

json to_json(const YAML::Node& n) {
  switch (n.Type()) {
    case YAML::NodeType::Null:
    case YAML::NodeType::Undefined:
      return nullptr;
    case YAML::NodeType::Scalar:
      // "?" is a plain scalar; quoted ones ("!") and explicit !!str tags are strings as written.
      return n.Tag() == "?" ? plain_scalar(n.Scalar()) : json(n.Scalar());
    case YAML::NodeType::Sequence: {
      json a = json::array();
      for (const auto& x : n) a.push_back(to_json(x));
      return a;
    }
    case YAML::NodeType::Map: {
      json o = json::object();
      for (const auto& kv : n) {
        if (!kv.first.IsScalar())
          throw cli::UsageError(
              kComp, fmt::format("expected plain keys in the YAML plan, got a {} key at line {}",
                                 kv.first.IsMap() ? "mapping" : "sequence", kv.first.Mark().line + 1));
        o[kv.first.Scalar()] = to_json(kv.second);
      }
      return o;
    }
  }
  return nullptr;
}

}  // namespace

json yaml_to_json(const std::string& text, const fs::path& file) {
  try {
    return to_json(YAML::Load(text));
  } catch (const YAML::Exception& e) {
    throw cli::UsageError(
        kComp, fmt::format("expected a YAML plan in {}, got a parse error at line {}, column {}: {}; "
                           "check the indentation and quoting there",
                           file.string(), e.mark.line + 1, e.mark.column + 1, e.msg));
  }
}

}  // namespace hfx::sweep
