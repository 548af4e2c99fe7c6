// tools/sweep/plan.cpp — reads a sweep plan (JSON) and expands it into tasks. Every key is checked: a
// misspelt or unsupported key is an error rather than a silently ignored setting.
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <ctime>
#include <set>

#include <fmt/format.h>

#include "hfx/core/error.h"
#include "hfx/io/safetensors.h"
#include "sweep.h"

namespace hfx::sweep {

namespace {

constexpr const char* kComp = "sweep";

void check_keys(const json& j, const std::set<std::string>& known, const std::string& where) {
  HFX_CHECK(j.is_object(), kComp, "expected {} to be a JSON object, got {}", where, j.type_name());
  for (const auto& [k, v] : j.items()) {
    if (known.count(k)) continue;
    if (k == "dtypes" || k == "quantization" || k == "dtype")
      HFX_THROW(kComp,
                "expected no '{}' in {}: hfx export has no dtype or quantization option; write one "
                "checkpoint per dtype (hfx create-tiny --dtype D) and list each as a model",
                k, where);
    std::string list;
    for (const auto& s : known) list += (list.empty() ? "" : ", ") + s;
    HFX_THROW(kComp, "unknown key '{}' in {}; expected one of: {}", k, where, list);
  }
}

template <typename T>
T get(const json& j, const std::string& key, const std::string& where, T dflt) {
  if (!j.contains(key)) return dflt;
  try {
    return j.at(key).get<T>();
  } catch (const json::exception&) {
    HFX_THROW(kComp, "expected '{}' in {} to be a {}, got {} {}", key, where,
              std::is_same_v<T, std::string> ? "string"
              : std::is_same_v<T, bool>      ? "boolean"
                                             : "number/list",
              j.at(key).type_name(), j.at(key).dump());
  }
}

// Ids become folder names and Slurm log names: keep them to a safe alphabet.
std::string safe_name(const std::string& s, const std::string& where) {
  HFX_CHECK(!s.empty(), kComp, "expected a non-empty name in {}, got \"\"", where);
  for (char c : s)
    HFX_CHECK(std::isalnum(static_cast<unsigned char>(c)) || c == '-' || c == '_', kComp,
              "expected {} name of letters, digits, '-' or '_', got '{}'", where, s);
  return s;
}

// Verify options: the plan's, overridden key by key by the variant's.
std::vector<std::string> verify_args(const json& v, const std::string& where) {
  check_keys(v, {"shapes", "tokens", "warm_runs", "threads"}, where);
  std::vector<std::string> a;
  if (v.contains("shapes")) a.insert(a.end(), {"--shapes", get<std::string>(v, "shapes", where, "")});
  for (const char* k : {"tokens", "warm_runs", "threads"}) {
    if (!v.contains(k)) continue;
    std::string flag = std::string("--") + k;
    if (flag == "--warm_runs") flag = "--warm-runs";
    a.insert(a.end(), {flag, std::to_string(get<int>(v, k, where, 0))});
  }
  return a;
}

Variant parse_variant(const json& j, const json& plan_verify, size_t i) {
  std::string where = fmt::format("variants[{}]", i);
  check_keys(
      j, {"name", "format", "target", "backend", "opset", "static", "external_data", "export_args", "verify"},
      where);
  Variant v;
  v.format = get<std::string>(j, "format", where, "");
  HFX_CHECK(v.format == "onnx" || v.format == "executorch" || v.format == "dynamo", kComp,
            "expected {}.format onnx | executorch | dynamo, got '{}'", where, v.format);
  v.target = get<std::string>(j, "target", where, "");
  v.backend = get<std::string>(j, "backend", where, "");
  v.opset = get<int>(j, "opset", where, 0);
  v.is_static = get<bool>(j, "static", where, false);
  v.external_data = get<bool>(j, "external_data", where, false);
  HFX_CHECK(v.format == "onnx" || (v.target.empty() && v.opset == 0 && !v.external_data), kComp,
            "expected target/opset/external_data only on onnx variants, got them in {} (format {})", where,
            v.format);
  HFX_CHECK(v.format == "executorch" || v.backend.empty(), kComp,
            "expected backend only on executorch variants, got it in {} (format {})", where, v.format);
  v.export_args = get<std::vector<std::string>>(j, "export_args", where, {});
  json verify = plan_verify;
  if (j.contains("verify")) {
    check_keys(j["verify"], {"shapes", "tokens", "warm_runs", "threads"}, where + ".verify");
    verify.update(j["verify"]);
  }
  v.verify_args = verify_args(verify, where + ".verify");
  std::string dflt =
      v.format + (v.target.empty() ? "" : "-" + v.target) + (v.backend.empty() ? "" : "-" + v.backend);
  v.name = safe_name(get<std::string>(j, "name", where, dflt), where);
  return v;
}

Model parse_model(const json& j, const fs::path& base, size_t i) {
  std::string where = fmt::format("models[{}]", i);
  Model m;
  std::string path;
  if (j.is_string()) {
    path = j.get<std::string>();
  } else {
    check_keys(j, {"name", "path", "variants"}, where);
    path = get<std::string>(j, "path", where, "");
    m.name = get<std::string>(j, "name", where, "");
    m.variants = get<std::vector<std::string>>(j, "variants", where, {});
  }
  m.path = fs::weakly_canonical(base / path);
  HFX_CHECK(fs::is_regular_file(m.path / "config.json"), kComp,
            "expected {} to be a checkpoint folder with config.json, got '{}'; models are local folders "
            "(download a hub id first, or make one with hfx create-tiny)",
            where, m.path.string());
  if (m.name.empty()) m.name = m.path.filename().string();
  safe_name(m.name, where);
  return m;
}

Resources parse_resources(const json& j) {
  check_keys(j, {"cpus", "mem_mb", "time_min"}, "resources");
  Resources r;
  r.cpus = get<int>(j, "cpus", "resources", r.cpus);
  r.mem_mb = get<int64_t>(j, "mem_mb", "resources", r.mem_mb);
  r.time_min = get<int>(j, "time_min", "resources", r.time_min);
  HFX_CHECK(r.cpus >= 1 && r.mem_mb >= 64 && r.time_min >= 1, kComp,
            "expected resources cpus >= 1, mem_mb >= 64, time_min >= 1, got {}, {}, {}", r.cpus, r.mem_mb,
            r.time_min);
  return r;
}

}  // namespace

Plan load_plan(const fs::path& file) {
  std::string ext = file.extension().string();
  if (ext == ".yaml" || ext == ".yml")
    HFX_THROW(kComp,
              "expected a JSON plan, got '{}': YAML plans are not supported; write the same keys as JSON",
              file.string());
  HFX_CHECK(fs::is_regular_file(file), kComp, "expected a plan file, got '{}' (no such file)", file.string());
  Plan p;
  p.file = file;
  json j;
  try {
    j = json::parse(io::read_file(file.string()));
  } catch (const json::exception& e) {
    HFX_THROW(kComp, "expected a JSON plan in {}, got a parse error: {}", file.string(), e.what());
  }
  check_keys(j, {"name", "models", "variants", "verify", "resources"}, "the plan");
  p.name = get<std::string>(j, "name", "the plan", file.stem().string());
  HFX_CHECK(j.contains("models") && j["models"].is_array() && !j["models"].empty(), kComp,
            "expected 'models' to be a non-empty list of checkpoint folders in {}", file.string());
  HFX_CHECK(j.contains("variants") && j["variants"].is_array() && !j["variants"].empty(), kComp,
            "expected 'variants' to be a non-empty list in {}, e.g. [{{\"format\": \"onnx\"}}]",
            file.string());
  json plan_verify = j.value("verify", json::object());
  check_keys(plan_verify, {"shapes", "tokens", "warm_runs", "threads"}, "verify");
  fs::path base = fs::absolute(file).parent_path();
  for (size_t i = 0; i < j["models"].size(); ++i) p.models.push_back(parse_model(j["models"][i], base, i));
  for (size_t i = 0; i < j["variants"].size(); ++i)
    p.variants.push_back(parse_variant(j["variants"][i], plan_verify, i));
  if (j.contains("resources")) p.resources = parse_resources(j["resources"]);
  p.source = j;
  std::set<std::string> ids, names;
  for (const Variant& v : p.variants) names.insert(v.name);
  for (size_t i = 0; i < p.models.size(); ++i) {
    p.source["models"][i] = {{"name", p.models[i].name}, {"path", p.models[i].path}};
    if (!p.models[i].variants.empty()) p.source["models"][i]["variants"] = p.models[i].variants;
    for (const auto& v : p.models[i].variants)
      HFX_CHECK(names.count(v), kComp, "expected models[{}].variants to name variants of the plan, got '{}'",
                i, v);
  }
  for (const Model& m : p.models)
    for (const Variant& v : p.variants) {
      if (!m.variants.empty() && std::find(m.variants.begin(), m.variants.end(), v.name) == m.variants.end())
        continue;
      Task t{static_cast<int>(p.tasks.size()), m.name + "." + v.name, &m, &v};
      HFX_CHECK(ids.insert(t.id).second, kComp,
                "expected unique model and variant names, got task '{}' twice; "
                "give the models or variants distinct 'name's",
                t.id);
      p.tasks.push_back(t);
    }
  return p;
}

std::vector<std::string> export_argv(const Task& t, const fs::path& out) {
  const Variant& v = *t.variant;
  std::vector<std::string> a = {"export", t.model->path.string(), "--format", v.format};
  if (!v.target.empty()) a.insert(a.end(), {"--target", v.target});
  if (!v.backend.empty()) a.insert(a.end(), {"--backend", v.backend});
  if (v.opset) a.insert(a.end(), {"--opset", std::to_string(v.opset)});
  if (v.is_static) a.push_back("--static");
  if (v.external_data) a.push_back("--external-data");
  a.insert(a.end(), v.export_args.begin(), v.export_args.end());
  a.insert(a.end(), {"-o", out.string()});
  return a;
}

std::vector<std::string> verify_argv(const Task& t, const fs::path& out) {
  std::vector<std::string> a = {"verify", out.string()};
  a.insert(a.end(), t.variant->verify_args.begin(), t.variant->verify_args.end());
  return a;
}

std::string self_exe() {
  std::error_code ec;
  fs::path p = fs::read_symlink("/proc/self/exe", ec);
  HFX_CHECK(!ec, kComp, "expected /proc/self/exe to name the hfx binary, got an error: {}", ec.message());
  return p.string();
}

std::string new_run_id() {
  std::time_t now = std::time(nullptr);
  char buf[32];
  std::strftime(buf, sizeof buf, "%Y%m%dT%H%M%SZ", std::gmtime(&now));
  return fmt::format("{}-{}", buf, ::getpid());
}

}  // namespace hfx::sweep
