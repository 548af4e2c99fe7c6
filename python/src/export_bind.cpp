// Export bindings: a checkpoint folder or model id, or a live model's weights passed in place (DLPack), into
// an export folder written by hfx::artifact::export_folder — the same call `hfx export` makes, so the folders
// are the same byte for byte.
#include <nanobind/ndarray.h>
#include <nanobind/stl/string.h>

#include <filesystem>
#include <map>

#include "bindings.h"
#include "hfx/artifact/export_folder.h"
#include "hfx/core/error.h"
#include "hfx/export/exporter.h"
#include "hfx/export/registry.h"
#include "hfx/io/hub.h"
#include "hfx/io/safetensors.h"
#include "hfx/models/model.h"

namespace fs = std::filesystem;

namespace hfx::py {

namespace {

using Array = nb::ndarray<nb::ro, nb::device::cpu>;

// A checkpoint folder, or a model id through the Hugging Face cache (then the Hub), as the CLI resolves it.
std::string resolve_source(const std::string& arg) {
  std::error_code ec;
  if (!arg.empty() && fs::is_directory(arg, ec)) return arg;
  if (!hub::looks_like_model_id(arg))
    HFX_THROW("hub",
              "expected an existing folder or a model id ORG/NAME[@REVISION], got '{}' (no such folder)",
              arg);
  std::string why;
  std::optional<hub::ModelId> id = hub::parse_model_id(arg, &why);
  if (!id)
    HFX_THROW("hub", "expected a model id ORG/NAME[@REVISION] or an existing folder, got '{}' ({})", arg,
              why);
  return hub::resolve(*id, hub::HubOptions::from_env()).dir;
}

DType dtype_of(const Array& a, const std::string& name) {
  const nb::dlpack::dtype t = a.dtype();
  using C = nb::dlpack::dtype_code;
  const auto code = static_cast<C>(t.code);
  if (t.lanes == 1) {
    if (code == C::Float && t.bits == 32) return DType::F32;
    if (code == C::Float && t.bits == 16) return DType::F16;
    if (code == C::Bfloat && t.bits == 16) return DType::BF16;
    if (code == C::Int && t.bits == 64) return DType::I64;
    if (code == C::Int && t.bits == 32) return DType::I32;
    if (code == C::Int && t.bits == 8) return DType::I8;
    if (code == C::UInt && t.bits == 8) return DType::U8;
    if (code == C::Bool && t.bits == 8) return DType::Bool;
  }
  HFX_THROW(
      "python",
      "expected weight '{}' as float32, float16, bfloat16, int64, int32, int8, uint8 or bool, got DLPack "
      "type code {} with {} bits; convert it with .to(torch.float32)",
      name, int(t.code), int(t.bits));
}

// One live tensor viewed in place: the storage borrows the array's memory and keeps the array (and so the
// Python tensor) alive; dropping it takes the GIL, as it may run on a thread that released it.
Tensor borrow_tensor(const std::string& name, const Array& a) {
  Shape shape(a.ndim());
  for (size_t i = 0; i < a.ndim(); ++i) shape[i] = static_cast<int64_t>(a.shape(i));
  const Shape strides = contiguous_strides(shape);
  for (size_t i = 0; i < a.ndim(); ++i)
    HFX_CHECK(a.shape(i) == 1 || a.stride(i) == strides[i], "python",
              "expected weight '{}' contiguous (row-major), got strides that are not; pass "
              "tensor.contiguous()",
              name);
  const DType dt = dtype_of(a, name);
  auto* held = new Array(a);
  std::shared_ptr<void> owner(held, [](void* p) {
    nb::gil_scoped_acquire gil;
    delete static_cast<Array*>(p);
  });
  const size_t nbytes = static_cast<size_t>(shape_numel(shape)) * dtype_size(dt);
  return Tensor(Storage::borrow(const_cast<void*>(a.data()), nbytes, std::move(owner)), dt, shape, strides);
}

std::unique_ptr<ExportConfig> config_from(const nb::dict& config) {
  nlohmann::json j = from_python(config, "the export config");
  HFX_CHECK(j.contains("format") && j.at("format").is_string(), "config",
            "expected the export config to name its format (onnx, executorch, dynamo, gguf), got {}",
            j.dump());
  std::unique_ptr<ExportConfig> cfg = make_config(j.at("format").get<std::string>());
  cfg->from_json(j);
  return cfg;
}

nb::dict result_dict(const artifact::ExportFolderResult& r) {
  nb::dict d;
  d["out_dir"] = r.out_dir;
  nb::list files;
  for (const ArtifactFile& f : r.export_result.files) {
    nb::dict fd;
    fd["component"] = f.component;
    fd["path"] = f.path;
    fd["role"] = f.role;
    files.append(fd);
  }
  d["files"] = files;
  nb::list programs, warnings, notes;
  for (const CapturedProgram& p : r.export_result.programs) programs.append(p.component);
  for (const std::string& w : r.export_result.warnings) warnings.append(w);
  for (const std::string& n : r.export_result.notes) notes.append(n);
  d["programs"] = programs;
  d["warnings"] = warnings;
  d["notes"] = notes;
  d["manifest"] = to_python(r.manifest.to_json());
  return d;
}

// Runs export_folder without the GIL; `progress` (a Python callable or None) gets one dict per step.
nb::dict run_export(const Model& model, const std::string& side_dir, const std::string& out,
                    const ExportConfig& cfg, bool generation, nb::object progress) {
  CallbackGuard guard;
  artifact::ExportFolderProgress on_stage;
  if (!progress.is_none())
    on_stage = [&](const std::string& stage, const ExportStep* step) {
      guard.call([&] {
        nb::dict d;
        d["stage"] = stage;
        d["component"] = step ? nb::cast(step->component) : nb::none();
        d["component_index"] = step ? step->component_index : 0;
        d["components"] = step ? step->components : 0;
        d["stage_index"] = step ? step->stage_index : 0;
        d["stages"] = step ? step->stages : 0;
        d["bytes_written"] = step ? step->bytes_written : 0;
        progress(d);
      });
    };
  std::optional<artifact::ExportFolderResult> r;
  try {
    nb::gil_scoped_release release;
    r.emplace(artifact::export_folder(model, side_dir, out, cfg, on_stage, generation));
  } catch (const CallbackRaised&) {
    guard.rethrow();
  }
  return result_dict(*r);
}

nb::dict export_checkpoint(const std::string& source, const std::string& out, const nb::dict& config,
                           bool generation, nb::object progress) {
  std::unique_ptr<ExportConfig> cfg = config_from(config);
  std::string dir;
  std::unique_ptr<Model> model;
  {
    nb::gil_scoped_release release;
    dir = resolve_source(source);
    model = load_model(dir);
  }
  return run_export(*model, dir, out, *cfg, generation, std::move(progress));
}

}  // namespace

std::unique_ptr<Model> live_model(const nb::dict& model_config, const nb::dict& tensors) {
  std::map<std::string, Tensor> weights;
  for (auto [key, value] : tensors) {
    const std::string name = nb::cast<std::string>(key);
    Array a;
    if (!nb::try_cast(value, a))
      HFX_THROW(
          "python",
          "expected weight '{}' as a CPU tensor or array (DLPack), got {}; detach it and move it to the "
          "CPU",
          name, nb::cast<std::string>(nb::str(value.type())));
    weights.emplace(name, borrow_tensor(name, a));
  }
  nlohmann::json cj = from_python(model_config, "the model config");
  return make_model(cj, io::WeightStore::from_tensors(std::move(weights)));
}

namespace {

nb::dict export_live(const nb::dict& model_config, const nb::dict& tensors, const std::string& side_dir,
                     const std::string& out, const nb::dict& config, bool generation, nb::object progress) {
  std::unique_ptr<ExportConfig> cfg = config_from(config);
  std::unique_ptr<Model> model = live_model(model_config, tensors);
  return run_export(*model, side_dir, out, *cfg, generation, std::move(progress));
}

// What `hfx.inspect` reports of a checkpoint: the architecture, its programs and their signatures.
nb::dict inspect_json(const Model& m, const std::string& dir) {
  const Model* model = &m;
  const ModelConfig& c = model->config();
  nlohmann::json j = {{"path", dir},
                      {"model_type", c.model_type},
                      {"head", model->head()},
                      {"structure", structure_name(model->structure())},
                      {"dtype", dtype_name(c.dtype)},
                      {"num_hidden_layers", c.num_hidden_layers},
                      {"hidden_size", c.hidden_size},
                      {"vocab_size", c.vocab_size}};
  uint64_t bytes = 0, params = 0;
  for (const std::string& n : model->weights().names()) {
    const io::TensorInfo& t = model->weights().info(n);
    params += static_cast<uint64_t>(shape_numel(t.shape));
    bytes += static_cast<uint64_t>(shape_numel(t.shape)) * dtype_size(t.dtype);
  }
  j["parameters"] = params;
  j["weight_bytes"] = bytes;
  nlohmann::json comps = nlohmann::json::object();
  for (const ComponentDecl& d : model->components()) {
    nlohmann::json ins = nlohmann::json::array();
    for (const InputDecl& in : d.inputs)
      ins.push_back(
          {{"name", in.name}, {"dtype", dtype_name(in.dtype)}, {"axes", in.axes}, {"optional", in.optional}});
    comps[d.name] = {{"inputs", ins}, {"outputs", d.outputs}, {"cache_leaves", d.cache.size()}};
  }
  j["components"] = comps;
  return nb::cast<nb::dict>(to_python(j));
}

nb::dict inspect_checkpoint(const std::string& source) {
  std::string dir;
  std::unique_ptr<Model> model;
  {
    nb::gil_scoped_release release;
    dir = resolve_source(source);
    model = load_model(dir);
  }
  return inspect_json(*model, dir);
}

}  // namespace

void bind_export(nb::module_& m) {
  m.def("export_checkpoint", &export_checkpoint, nb::arg("source"), nb::arg("out"), nb::arg("config"),
        nb::arg("generation") = true, nb::arg("progress").none() = nb::none(),
        "Exports a checkpoint folder or model id into OUT (replaced atomically): its generation programs, or "
        "with generation=False its one call; returns the files, programs, warnings and manifest.");
  m.def("export_live", &export_live, nb::arg("model_config"), nb::arg("tensors"), nb::arg("side_dir"),
        nb::arg("out"), nb::arg("config"), nb::arg("generation") = true,
        nb::arg("progress").none() = nb::none(),
        "Exports a model given as its config.json dict and its weights (name → CPU tensor, read in place "
        "through DLPack; nothing copied); side_dir holds the config, tokenizer and generation files copied "
        "beside the artifacts.");
  m.def("inspect", &inspect_checkpoint, nb::arg("source"),
        "The architecture, head, structure, parameter count and program signatures of a checkpoint.");
  m.def(
      "inspect_live",
      [](const nb::dict& model_config, const nb::dict& tensors) {
        return inspect_json(*live_model(model_config, tensors), "");
      },
      nb::arg("model_config"), nb::arg("tensors"), "inspect() of a model given as export_live takes it.");
  m.def(
      "default_config", [](const std::string& format) { return to_python(make_config(format)->to_json()); },
      nb::arg("format"), "The default export config of a format, as JSON data.");
}

}  // namespace hfx::py
