// Per-layer diff: the ONNX lowering keeps Hugging Face module names as value names (model.layers.1,
// model.layers.1.self_attn, model.layers.1.mlp, model.norm, ...), so a debug copy of the graph that
// also outputs those values can be compared, name by name in the graph's topological order, against
// EagerBuilder::collect_intermediates. The first module whose error leaves the tolerance is where the
// artifact and the model part ways.
#include <algorithm>
#include <cmath>
#include <fstream>
#include <regex>
#include <set>

#include <fmt/format.h>
#include <onnx/onnx_pb.h>

#include "hfx/core/error.h"
#include "hfx/io/safetensors.h"
#include "hfx/verify/verify.h"

namespace hfx::verify {

namespace {

onnx::ModelProto read_model(const std::string& path) {
  onnx::ModelProto m;
  std::ifstream f(path, std::ios::binary);
  HFX_CHECK(f && m.ParseFromIstream(&f), "verify",
            "expected {} to parse as an ONNX model, got a malformed protobuf", path);
  return m;
}

// A module path: dot-separated identifiers and layer indices, no '/' (sub-op values carry one).
bool is_module_name(const std::string& n) {
  static const std::regex re(
      R"(^(model|transformer|gpt_neox|lm_head)(\.[A-Za-z_][A-Za-z0-9_]*|\.\d+)*$|^logits$)");
  return std::regex_match(n, re);
}

}  // namespace

std::vector<std::string> onnx_module_values(const std::string& onnx_path) {
  onnx::ModelProto m = read_model(onnx_path);
  std::set<std::string> seen;
  std::vector<std::string> out;
  for (const auto& n : m.graph().node())
    for (const auto& o : n.output())
      if (is_module_name(o) && seen.insert(o).second) out.push_back(o);
  return out;
}

void write_debug_onnx(const std::string& onnx_path, const std::vector<std::string>& names,
                      const std::string& debug_path) {
  onnx::ModelProto m = read_model(onnx_path);
  auto* g = m.mutable_graph();
  std::set<std::string> outs;
  for (const auto& o : g->output()) outs.insert(o.name());
  std::map<std::string, const onnx::ValueInfoProto*> typed;
  for (const auto& v : g->value_info()) typed[v.name()] = &v;
  for (const auto& n : names) {
    if (outs.count(n)) continue;
    auto* o = g->add_output();
    auto it = typed.find(n);
    if (it != typed.end())
      *o = *it->second;
    else
      o->set_name(n);
    outs.insert(n);
  }
  std::string bytes;
  HFX_CHECK(m.SerializeToString(&bytes), "verify",
            "expected to serialize the debug copy of {}, got a protobuf error", onnx_path);
  io::write_file_atomic(debug_path, bytes);
}

LayerDiff compare_layers(const std::vector<std::string>& order, const std::map<std::string, Tensor>& eager,
                         const std::map<std::string, Tensor>& artifact, double abs_tol, double rel_tol) {
  LayerDiff d;
  for (const auto& name : order) {
    auto e = eager.find(name);
    auto a = artifact.find(name);
    if (e == eager.end() || a == artifact.end()) continue;
    if (e->second.numel() != a->second.numel())
      continue;  // a differently shaped view of the same module (e.g. kept logits)
    std::vector<float> ev = e->second.to_floats(), av = a->second.to_floats();
    LayerError le;
    le.name = name;
    double ref_max = 0;
    bool finite = true;
    for (size_t i = 0; i < ev.size(); i++) {
      if (!std::isfinite(ev[i]) || !std::isfinite(av[i])) {
        if (!(std::isinf(ev[i]) && ev[i] == av[i])) finite = false;
        continue;
      }
      le.max_abs = std::max(le.max_abs, static_cast<double>(std::fabs(ev[i] - av[i])));
      ref_max = std::max(ref_max, static_cast<double>(std::fabs(ev[i])));
    }
    if (!finite) le.max_abs = std::numeric_limits<double>::infinity();
    le.max_rel = ref_max > 0 ? le.max_abs / ref_max : le.max_abs;
    le.diverged = !(le.max_abs <= abs_tol + rel_tol * ref_max);
    if (le.diverged && !d.first_divergence) d.first_divergence = le;
    d.layers.push_back(le);
  }
  return d;
}

nlohmann::json LayerDiff::to_json() const {
  nlohmann::json j;
  nlohmann::json ls = nlohmann::json::array();
  for (const auto& l : layers)
    ls.push_back({{"name", l.name},
                  {"max_abs", std::isfinite(l.max_abs) ? nlohmann::json(l.max_abs) : nlohmann::json("inf")},
                  {"max_rel", std::isfinite(l.max_rel) ? nlohmann::json(l.max_rel) : nlohmann::json("inf")},
                  {"diverged", l.diverged}});
  j["layers"] = ls;
  if (first_divergence)
    j["first_divergence"] = {
        {"name", first_divergence->name},
        {"max_abs", std::isfinite(first_divergence->max_abs) ? first_divergence->max_abs : 1e300},
        {"max_rel", std::isfinite(first_divergence->max_rel) ? first_divergence->max_rel : 1e300}};
  else
    j["first_divergence"] = nullptr;
  return j;
}

}  // namespace hfx::verify
