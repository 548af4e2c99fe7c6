// PT2 archive writer (see pt2_archive.h).
#include "export/dynamo/pt2_archive.h"

#include <fmt/format.h>

#include <cmath>
#include <filesystem>

#include "export/dynamo/emitter.h"
#include "export/dynamo/program.h"
#include "hfx/core/error.h"
#include "io/zip.h"

namespace hfx::dynamo {

using json = nlohmann::json;

std::string weights_config_path(const std::string& m) { return "data/weights/" + m + "_weights_config.json"; }
std::string constants_config_path(const std::string& m) {
  return "data/constants/" + m + "_constants_config.json";
}
std::string sample_inputs_path(const std::string& m) { return "data/sample_inputs/" + m + ".pt"; }

namespace {

// Streams one tensor's bytes into an open record (in chunks, so a mapped weight is never copied whole).
void stream_tensor(io::AlignedZipWriter& z, const std::string& record, const Tensor& t) {
  Tensor c = t.is_contiguous() ? t : t.contiguous();
  const size_t n = c.nbytes();
  z.begin(record, n);
  const char* p = static_cast<const char*>(c.raw());
  constexpr size_t kChunk = size_t{1} << 24;
  for (size_t off = 0; off < n; off += kChunk) z.append(p + off, std::min(kChunk, n - off));
  z.end();
}
}  // namespace

json concrete_tensor_meta(DType dt, const Shape& shape) {
  json sizes = json::array(), strides = json::array();
  for (int64_t d : shape) sizes.push_back(json{{"as_int", d}});
  for (int64_t s : contiguous_strides(shape)) strides.push_back(json{{"as_int", s}});
  return json{{"dtype", detail::scalar_type(dt)},
              {"sizes", sizes},
              {"requires_grad", false},
              {"device", {{"type", "cpu"}, {"index", nullptr}}},
              {"strides", strides},
              {"storage_offset", {{"as_int", 0}}},
              {"layout", 7}};
}

uint64_t write_pt2(const std::string& path, const SerializedProgram& sp, const Pt2WriteOptions& o) {
  std::string root = std::filesystem::path(path).stem().string();
  if (root.empty()) root = "archive";
  io::AlignedZipWriter z(io::file_sink(path), root);
  z.add("archive_format", std::string("pt2"));
  z.add("archive_version", std::string(kArchiveVersion));
  z.add("byteorder", std::string("little"));
  z.add(".data/version", std::string(kFileFormatVersion));
  z.add("models/" + o.model_name + ".json", sp.program.dump());

  // Weights: one raw record per parameter, streamed from the checkpoint and released after.
  json wcfg = json::object();
  int idx = 0;
  for (const LiftedTensor& p : sp.parameters) {
    std::string file = fmt::format("weight_{}", idx++);
    bool from_store = o.weights && o.weights->has(p.fqn);
    Tensor t = from_store ? o.weights->get(p.fqn) : p.value->data;
    if (!t.defined()) HFX_THROW("dynamo", "expected data for parameter '{}', got none", p.fqn);
    if (t.dtype() != p.value->type.dtype) t = t.to(p.value->type.dtype);
    stream_tensor(z, "data/weights/" + file, t);
    wcfg[p.fqn] = json{{"path_name", file},
                       {"is_param", true},
                       {"use_pickle", false},
                       {"tensor_meta", concrete_tensor_meta(t.dtype(), t.shape())}};
    t = Tensor();
    if (from_store) o.weights->release(p.fqn);
  }
  z.add(weights_config_path(o.model_name), json{{"config", wcfg}}.dump());

  json ccfg = json::object();
  idx = 0;
  for (const LiftedTensor& c : sp.constants) {
    std::string file = fmt::format("tensor_{}", idx++);
    const Tensor& t = c.value->data;
    stream_tensor(z, "data/constants/" + file, t);
    ccfg[c.fqn] = json{{"path_name", file},
                       {"is_param", false},
                       {"use_pickle", false},
                       {"tensor_meta", concrete_tensor_meta(t.dtype(), t.shape())}};
  }
  z.add(constants_config_path(o.model_name), json{{"config", ccfg}}.dump());

  std::string samples =
      o.sample_inputs.kind == PyObj::Kind::None ? std::string() : torch_save(o.sample_inputs);
  z.add(sample_inputs_path(o.model_name), samples);
  for (const auto& [name, content] : o.extra) z.add("extra/" + name, content);
  z.finish();
  return std::filesystem::file_size(path);
}

PyObj sample_inputs_for(const Graph& g, int64_t vocab) {
  const ShapeEnv& env = g.env();
  std::vector<std::pair<std::string, PyObj>> kwargs;
  std::vector<PyObj> layers;
  int64_t past = 0;
  std::vector<std::string> names;
  for (const Value* v : g.inputs()) {
    names.push_back(v->name);
    if (v->name == "past_key_values.0.key") past = env.hint(v->type.shape.at(2));
  }
  const bool group = groups_kv_leaves(names);
  for (const Value* v : g.inputs()) {
    Shape s;
    for (const auto& d : v->type.shape) s.push_back(env.hint(d));
    Tensor t = Tensor::zeros(s, v->type.dtype);
    int64_t n = t.numel();
    if (v->name == "input_ids") {
      std::vector<int64_t> ids(n);
      for (int64_t i = 0; i < n; i++) ids[i] = (7 * i + 3) % std::max<int64_t>(vocab, 1);
      t = Tensor::from_ints(s, ids, v->type.dtype);
    } else if (v->name == "attention_mask" || v->name == "encoder_attention_mask") {
      t = Tensor::full(s, 1.0, v->type.dtype);
    } else if (v->name == "position_ids") {
      std::vector<int64_t> pos(n);
      int64_t seq = s.empty() ? 1 : s.back();
      for (int64_t i = 0; i < n; i++) pos[i] = past + i % seq;
      t = Tensor::from_ints(s, pos, v->type.dtype);
    } else if (dtype_is_float(v->type.dtype)) {
      std::vector<float> f(n);
      uint64_t h = std::hash<std::string>{}(v->name);
      for (int64_t i = 0; i < n; i++)
        f[i] =
            0.5f * static_cast<float>(std::sin(0.37 * static_cast<double>(i) + static_cast<double>(h % 97)));
      t = Tensor::from_floats(s, f, v->type.dtype);
    }
    int layer = -1;
    char kind[16] = {0};
    // Grouped exactly as the input treespec groups them (program.cpp): only ".key" / ".value" leaves
    // form the (key, value) layers; other cache leaves (past_key_values.N.decoder.key) stay flat keywords.
    if (group && std::sscanf(v->name.c_str(), "past_key_values.%d.%15s", &layer, kind) == 2 &&
        (std::string(kind) == "key" || std::string(kind) == "value")) {
      if (static_cast<int>(layers.size()) <= layer) layers.resize(layer + 1, PyObj::tuple({}));
      layers[layer].items.push_back(PyObj::tensor(t));
      continue;
    }
    kwargs.emplace_back(kwarg_name(v->name), PyObj::tensor(t));
  }
  if (!layers.empty()) kwargs.emplace_back("past_key_values", PyObj::list(layers));
  return PyObj::tuple({PyObj::tuple({}), PyObj::dict(kwargs)});
}

}  // namespace hfx::dynamo
