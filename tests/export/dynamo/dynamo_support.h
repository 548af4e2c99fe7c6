// Helpers for the Dynamo backend tests: tiny random models per architecture, a reader for written
// .pt2 archives, and a checker of JSON documents against the kept torch export schema
// (tests/data/dynamo/schema_v8.json).
#pragma once
#include <gtest/gtest.h>

#include <cctype>
#include <filesystem>
#include <fstream>
#include <map>
#include <memory>
#include <random>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "hfx/core/error.h"
#include "hfx/io/safetensors.h"
#include "hfx/models/model.h"
#include "hfx/models/tiny.h"
#include "io/zip.h"

namespace hfx::dynamo::testing {

using json = nlohmann::json;

inline std::string slurp(const std::string& path) {
  std::ifstream f(path, std::ios::binary);
  return std::string((std::istreambuf_iterator<char>(f)), std::istreambuf_iterator<char>());
}

/// A tiny model of `a` (any structure) with deterministic random weights (norm weights near the
/// architecture's mean).
inline std::unique_ptr<Model> tiny_any_model(const Architecture& a, const std::string& preset = "tiny",
                                             uint64_t seed = 1) {
  json cfg = a.tiny_config(preset);
  ModelConfig mc = a.parse_config(cfg);
  std::map<std::string, Tensor> w;
  std::mt19937_64 rng(seed);
  std::uniform_real_distribution<float> u(-0.035f, 0.035f);
  for (const auto& [name, shape] : a.weight_specs(mc)) {
    int64_t n = shape_numel(shape);
    std::vector<float> v(n);
    bool norm = shape.size() == 1 && name.size() > 6 && name.compare(name.size() - 6, 6, "weight") == 0 &&
                (name.find("norm") != std::string::npos || name.find("ln_") != std::string::npos);
    for (auto& x : v) x = u(rng) + (norm ? static_cast<float>(a.tiny_norm_mean) : 0.f);
    w[name] = Tensor::from_floats(shape, v, DType::F32);
  }
  return make_model(cfg, io::WeightStore::from_tensors(w));
}

/// The same for a decoder-only causal LM.
inline std::unique_ptr<CausalLM> tiny_model(const Architecture& a, uint64_t seed = 1) {
  auto m = tiny_any_model(a, "tiny", seed);
  as_causal_lm(*m);
  return std::unique_ptr<CausalLM>(static_cast<CausalLM*>(m.release()));
}

/// An encoder-only model as `hfx create-tiny ARCH --head HEAD` makes it, in memory.
inline std::unique_ptr<Model> tiny_encoder(const std::string& arch, const std::string& head,
                                           uint64_t seed = 1) {
  TinyOptions o;
  o.head = head;
  json cfg = tiny_model_config(arch, o);
  return make_model(cfg,
                    io::WeightStore::from_tensors(tiny_weights(parse_model_config(cfg), DType::F32, seed)));
}

/// (model_type, head) of every encoder-only architecture (the ones with a masked_lm head).
inline std::vector<std::pair<std::string, std::string>> encoder_arch_heads() {
  std::vector<std::pair<std::string, std::string>> v;
  for (const Architecture* a : all_architectures()) {
    bool enc = false;
    for (const auto& h : a->heads) enc = enc || h.first == "masked_lm";
    if (enc)
      for (const auto& h : a->heads) v.emplace_back(a->model_type, h.first);
  }
  return v;
}
inline std::string encoder_case_name(const ::testing::TestParamInfo<std::pair<std::string, std::string>>& i) {
  std::string n = i.param.first + "_" + i.param.second;
  for (char& c : n)
    if (!std::isalnum(static_cast<unsigned char>(c))) c = '_';
  return n;
}

/// A written archive held in memory with its records by name (without the top folder).
struct Archive {
  std::string bytes, root;
  std::map<std::string, io::ZipRecord> records;
  static Archive open(const std::string& path) {
    Archive a;
    a.bytes = slurp(path);
    for (const auto& r : io::read_zip_index(a.bytes)) {
      auto slash = r.name.find('/');
      if (a.root.empty()) a.root = r.name.substr(0, slash);
      a.records[r.name.substr(slash + 1)] = r;
    }
    return a;
  }
  bool has(const std::string& name) const { return records.count(name) != 0; }
  std::string read(const std::string& name) const {
    auto it = records.find(name);
    if (it == records.end()) HFX_THROW("test", "expected record {} in the archive, got none", name);
    return bytes.substr(it->second.data_offset, it->second.size);
  }
  json read_json(const std::string& name) const { return json::parse(read(name)); }
};

/// Validates `v` as schema type `type`; appends "path: problem" lines to `errs`.
class SchemaChecker {
 public:
  explicit SchemaChecker(json schema) : s_(std::move(schema)) {}
  void check(const json& v, const std::string& type, const std::string& path,
             std::vector<std::string>& errs) const {
    auto err = [&](const std::string& m) { errs.push_back(path + ": " + m); };
    auto inner = [&](const std::string& pre) {
      return type.substr(pre.size(), type.size() - pre.size() - 1);
    };
    if (type.rfind("Optional[", 0) == 0) {
      if (!v.is_null()) check(v, inner("Optional["), path, errs);
      return;
    }
    if (type.rfind("List[", 0) == 0) {
      if (!v.is_array()) return err("expected a list, got " + v.dump().substr(0, 80));
      for (size_t i = 0; i < v.size(); i++)
        check(v[i], inner("List["), path + "[" + std::to_string(i) + "]", errs);
      return;
    }
    if (type.rfind("Dict[str, ", 0) == 0) {
      if (!v.is_object()) return err("expected a dict, got " + v.dump().substr(0, 80));
      for (auto it = v.begin(); it != v.end(); ++it)
        check(it.value(), inner("Dict[str, "), path + "." + it.key(), errs);
      return;
    }
    if (type == "str") {
      if (!v.is_string()) err("expected str");
      return;
    }
    if (type == "int") {
      if (!v.is_number_integer()) err("expected int, got " + v.dump());
      return;
    }
    if (type == "bool") {
      if (!v.is_boolean()) err("expected bool, got " + v.dump());
      return;
    }
    if (type == "float") {
      if (!(v.is_number() || (v.is_string() && (v == "Infinity" || v == "-Infinity"))))
        err("expected float, got " + v.dump());
      return;
    }
    if (s_["enums"].contains(type)) {
      bool ok = false;
      for (auto& [k, x] : s_["enums"][type].items()) ok = ok || (v.is_number_integer() && v == x);
      if (!ok) err("expected a " + type + " value, got " + v.dump());
      return;
    }
    bool is_union = s_["unions"].contains(type);
    if (!is_union && !s_["structs"].contains(type)) return err("unknown schema type " + type);
    const json& fields = is_union ? s_["unions"][type] : s_["structs"][type];
    if (!v.is_object()) return err("expected a " + type + " object, got " + v.dump().substr(0, 80));
    if (is_union && v.size() != 1)
      err("expected exactly one field of union " + type + ", got " + std::to_string(v.size()));
    for (auto it = v.begin(); it != v.end(); ++it) {
      if (!fields.contains(it.key())) {
        err("unknown field '" + it.key() + "' of " + type);
        continue;
      }
      if (!fields[it.key()]["emit"].get<bool>())
        err("field '" + it.key() + "' of " + type + " is newer than the emitted schema version");
      check(it.value(), fields[it.key()]["type"], path + "." + it.key(), errs);
    }
    if (!is_union)
      for (auto& [name, f] : fields.items())
        if (f["required"].get<bool>() && !v.contains(name))
          err("missing required field '" + name + "' of " + type);
  }

 private:
  json s_;
};

inline json kept_schema() {
  return json::parse(slurp(std::string(HFX_TEST_DATA) + "/dynamo/schema_v8.json"));
}

}  // namespace hfx::dynamo::testing
