// Configs (JSON round trip) and the one table of exporters by format name.
#include "hfx/export/exporter.h"
#include <algorithm>

#include "export/executorch/executorch_exporter.h"
#include "hfx/core/error.h"
#include "hfx/core/json.h"
#include "hfx/export/gguf.h"

namespace hfx {

// Backend factories, defined next to each exporter.
std::unique_ptr<Exporter> make_onnx_exporter();
std::unique_ptr<Exporter> make_executorch_exporter();
std::unique_ptr<Exporter> make_dynamo_exporter();
std::unique_ptr<Exporter> make_gguf_exporter();

namespace {

template <typename C>
std::unique_ptr<ExportConfig> make_cfg() {
  return std::make_unique<C>();
}

// The one table of backends.
const std::vector<ExporterEntry>& exporter_table() {
  static const std::vector<ExporterEntry> t = [] {
    return std::vector<ExporterEntry>{
        {"onnx", make_onnx_exporter, make_cfg<OnnxConfig>},
        {"executorch", make_executorch_exporter, make_cfg<ExecutorchConfig>},
        {"dynamo", make_dynamo_exporter, make_cfg<DynamoConfig>},
        {"gguf", make_gguf_exporter, make_cfg<GgufConfig>},
    };
  }();
  return t;
}

const ExporterEntry& entry(const std::string& format) {
  for (const auto& e : exporter_table())
    if (e.format == format) return e;
  std::string known;
  for (const auto& e : exporter_table()) known += (known.empty() ? "" : ", ") + e.format;
  HFX_THROW("export", "expected a format among [{}], got '{}'", known, format);
}

nlohmann::json dim_json(const Dim& d) { return {{"name", d.name}, {"min", d.min}, {"max", d.max}}; }

template <typename T>
void take(const nlohmann::json& j, const char* key, T& out, const std::string& format) {
  if (!j.contains(key)) return;
  out = jsonc::as<T>(j.at(key), "config", fmt::format("'{}' of the {} export config", key, format));
}

void check_keys(const nlohmann::json& j, const std::vector<std::string>& allowed, const std::string& format) {
  if (!j.is_object())
    HFX_THROW("config", "expected a JSON object for the {} config, got {}", format, j.dump());
  for (auto it = j.begin(); it != j.end(); ++it) {
    if (std::find(allowed.begin(), allowed.end(), it.key()) == allowed.end()) {
      std::string list;
      for (const auto& a : allowed) list += (list.empty() ? "" : ", ") + a;
      HFX_THROW("config", "expected keys of the {} config among [{}], got unknown '{}'", format, list,
                it.key());
    }
  }
}

const std::vector<std::string> kCommonKeys = {
    "format",    "dynamic",      "dynamic_shapes", "prefer_deferred_runtime_asserts_over_guards",
    "max_batch", "max_sequence", "dtype"};

std::vector<std::string> with_common(std::vector<std::string> extra) {
  extra.insert(extra.end(), kCommonKeys.begin(), kCommonKeys.end());
  return extra;
}

}  // namespace

DType export_dtype_from_name(const std::string& name) {
  if (name == "f32") return DType::F32;
  if (name == "f16") return DType::F16;
  if (name == "bf16") return DType::BF16;
  HFX_THROW("config", "expected dtype among [auto, f32, f16, bf16], got '{}'", name);
}

const char* export_dtype_name(DType dt) {
  switch (dt) {
    case DType::F32:
      return "f32";
    case DType::F16:
      return "f16";
    case DType::BF16:
      return "bf16";
    default:
      HFX_THROW("config", "expected a floating dtype (f32, f16, bf16), got {}", dtype_name(dt));
  }
}

DType ExportConfig::weight_dtype(DType checkpoint) const {
  return dtype == "auto" ? auto_dtype(checkpoint) : export_dtype_from_name(dtype);
}

nlohmann::json ExportConfig::precision(DType checkpoint) const {
  const DType w = weight_dtype(checkpoint);
  const char* source = dtype_is_float(checkpoint) ? export_dtype_name(checkpoint) : dtype_name(checkpoint);
  // Exact when the stored weights hold the checkpoint's values unchanged (same dtype, or widened to f32).
  const bool exact = w == checkpoint || w == DType::F32;
  return {{"dtype", export_dtype_name(w)},
          {"requested", dtype},
          {"checkpoint", source},
          {"key", exact ? "exact" : export_dtype_name(w)}};
}

nlohmann::json OnnxConfig::precision(DType checkpoint) const {
  nlohmann::json p = ExportConfig::precision(checkpoint);
  if (quantize.int8_activations) p["key"] = "int8-activations";  // MatMulNBits accuracy_level 4
  // Standard ONNX: ONNX Runtime's graph optimizations (its default; Transformers.js' too) fuse each blocked
  // DequantizeLinear → MatMul into MatMulNBits with accuracy level 4 at session creation, so the runtime
  // computes with int8 activations as well (docs/quantization.md).
  if (quantize.enabled() && target == "standard") p["key"] = "int8-activations";
  return p;
}

DType ExecutorchConfig::auto_dtype(DType) const { return et::backend_prep(backend).constant_dtype; }

CaptureOptions merge_config(const CaptureOptions& base, const ExportConfig& c) {
  CaptureOptions o = base;
  o.dynamic = c.dynamic;
  for (const auto& [input, axes] : c.dynamic_shapes)
    for (const auto& [axis, dim] : axes) o.dynamic_shapes[input][axis] = dim;
  o.prefer_deferred_runtime_asserts_over_guards = c.prefer_deferred_runtime_asserts_over_guards;
  // The config's bounds cap the caller's ranges (never widen them).
  o.batch.max = std::min(o.batch.max, c.max_batch);
  o.sequence.max = std::min(o.sequence.max, c.sequence_bound());
  o.past.max = std::min(o.past.max, c.sequence_bound());
  o.sample_batch = std::min(o.sample_batch, o.batch.max);
  o.sample_sequence = std::min(o.sample_sequence, o.sequence.max);
  o.sample_past = std::min(o.sample_past, o.past.max);
  return o;
}

namespace {

// The quantize options of a format's config; null for a format without them.
const quant::QuantOptions* quantize_of(const ExportConfig& c) {
  if (const auto* o = dynamic_cast<const OnnxConfig*>(&c)) return &o->quantize;
  if (const auto* e = dynamic_cast<const ExecutorchConfig*>(&c)) return &e->quantize;
  if (const auto* d = dynamic_cast<const DynamoConfig*>(&c)) return &d->quantize;
  return nullptr;
}
quant::QuantOptions* quantize_of(ExportConfig& c) {
  return const_cast<quant::QuantOptions*>(quantize_of(static_cast<const ExportConfig&>(c)));
}

// What XNNPACK can hold of a pre-quantized checkpoint as it is (no re-encoding): 4-bit symmetric codes, whose
// zero point is XNNPACK's fixed 8. The block scales are rounded to bf16 on the way
// (check_executorch_quantize).
void check_prequantized_for_executorch(const quant::QuantOptions& pre, const std::string& model_type) {
  if (pre.bits != 4)
    HFX_THROW("export",
              "expected a 4-bit GPTQ checkpoint for --format executorch, got {} bits in groups of {} ({}): "
              "XNNPACK's 8-bit weights take one scale per output channel, this checkpoint has one per group; "
              "export it with --format onnx, or export the float checkpoint with --quantize int8 --symmetric",
              pre.bits, pre.group_size, model_type);
  if (!pre.symmetric)
    HFX_THROW("export",
              "expected symmetric codes (GPTQ sym true) for --format executorch, got a zero point per group "
              "({}): XNNPACK's 4-bit weights have the fixed zero point 8 and hfx does not re-encode a "
              "checkpoint's codes; export it with --format onnx, or export the float checkpoint with "
              "--quantize int4 --symmetric",
              model_type);
}

}  // namespace

quant::QuantOptions common_quantize(const std::map<std::string, const ExportConfig*>& configs) {
  quant::QuantOptions q;
  std::string first;
  for (const auto& [name, c] : configs) {
    const quant::QuantOptions* p = quantize_of(*c);
    const quant::QuantOptions mine = p ? *p : quant::QuantOptions{};
    if (first.empty()) {
      q = mine, first = name;
    } else if (quant::to_json(mine) != quant::to_json(q)) {
      HFX_THROW("export",
                "expected one quantize setting for every component, got {} for '{}' and {} for '{}'",
                quant::to_json(q).dump(), first, quant::to_json(mine).dump(), name);
    }
  }
  return q;
}

std::unique_ptr<ExportConfig> config_for_checkpoint(const Model& model, const ExportConfig& config) {
  const quant::QuantOptions& pre = model.config().prequantized;
  if (!pre.enabled()) return nullptr;
  auto copy = config.clone();
  quant::QuantOptions* qp = quantize_of(*copy);
  if (!qp)
    HFX_THROW("export",
              "expected --format onnx, executorch or dynamo for a pre-quantized (GPTQ / AWQ) checkpoint, got "
              "--format {}",
              config.format);
  quant::QuantOptions& q = *qp;
  if (q.enabled())
    HFX_THROW("export",
              "expected no --quantize for a checkpoint that is already quantized ({}, groups of {}), got "
              "--quantize {}; drop the flag: the export keeps the checkpoint's codes",
              pre.method(), pre.group_size, q.method());
  if (config.format == "executorch") check_prequantized_for_executorch(pre, model.config().model_type);
  nlohmann::json j = copy->to_json();
  j["quantize"] = quant::to_json(pre);
  try {
    // The checks of an explicit quantize apply: ONNX's opset >= 21 on target standard; ExecuTorch's
    // backend xnnpack, which also marks the scales bf16 (the export and verify's reference round them).
    copy->from_json(j);
  } catch (const Error& e) {
    HFX_THROW("export",
              "expected a {} config that can hold this pre-quantized checkpoint's {} codes, got: {}",
              config.format, pre.method(), e.what());
  }
  return copy;
}

CaptureOptions contract_options(const Model& model, const ExportConfig& c) {
  CaptureOptions o = merge_config(CaptureOptions{}, c);
  o.batch.max = c.max_batch;
  const int64_t bound = c.sequence_bound();
  const int64_t positions = model.config().max_position_embeddings;
  const int64_t max_pos = positions > 0 ? positions : bound;
  o.sequence.max = std::min(bound, max_pos);
  o.past.max = std::max<int64_t>(1, std::min(bound, max_pos) - 1);
  o.sample_batch = std::min(o.sample_batch, o.batch.max);
  o.sample_sequence = std::min(o.sample_sequence, o.sequence.max);
  o.sample_past = std::min(o.sample_past, o.past.max);
  return o;
}

std::vector<ProgramSpec> export_programs(const Model& model, const CaptureOptions& opts,
                                         bool for_generation) {
  if (!for_generation && model.structure() == Structure::DecoderOnly)
    return {causal_lm_program(as_causal_lm(model), opts)};
  return generation_programs(model, opts);
}

std::vector<std::pair<ProgramSpec, const ExportConfig*>> generation_plan(
    const Model& model, const CaptureOptions& opts,
    const std::map<std::string, const ExportConfig*>& configs) {
  std::vector<RecordedCall> calls = record_generation(model, generation_samples(model, opts));
  std::vector<std::pair<ProgramSpec, const ExportConfig*>> out;
  for (const ProgramSpec& p : plan_generation(model, calls, opts)) {
    const ExportConfig& c = config_for(configs, p.name);
    for (ProgramSpec& q : plan_generation(model, calls, merge_config(opts, c)))
      if (q.name == p.name) out.emplace_back(std::move(q), &c);
  }
  return out;
}

const ExportConfig& config_for(const std::map<std::string, const ExportConfig*>& configs,
                               const std::string& component) {
  for (const char* key : {component.c_str(), "*", "default", ""})
    if (auto it = configs.find(key); it != configs.end() && it->second) return *it->second;
  if (configs.size() == 1 && configs.begin()->second) return *configs.begin()->second;
  HFX_THROW("export", "expected a config for component '{}' (or '*'), got none", component);
}

nlohmann::json ExportConfig::to_json() const {
  nlohmann::json ds = nlohmann::json::object();
  for (const auto& [input, axes] : dynamic_shapes)
    for (const auto& [axis, d] : axes) ds[input][std::to_string(axis)] = dim_json(d);
  return {{"format", format},
          {"dynamic", dynamic},
          {"dynamic_shapes", ds},
          {"prefer_deferred_runtime_asserts_over_guards", prefer_deferred_runtime_asserts_over_guards},
          {"max_batch", max_batch},
          {"max_sequence", max_sequence},
          {"dtype", dtype}};
}

void ExportConfig::from_json(const nlohmann::json& j) {
  if (j.contains("format") && j.at("format") != format)
    HFX_THROW("config", "expected format '{}', got {}", format, j.at("format").dump());
  take(j, "dynamic", dynamic, format);
  take(j, "prefer_deferred_runtime_asserts_over_guards", prefer_deferred_runtime_asserts_over_guards, format);
  take(j, "max_batch", max_batch, format);
  take(j, "max_sequence", max_sequence, format);
  take(j, "dtype", dtype, format);
  if (dtype != "auto") export_dtype_from_name(dtype);  // throws for a name outside kExportDtypes
  if (j.contains("dynamic_shapes")) {
    dynamic_shapes.clear();
    const auto& ds = j.at("dynamic_shapes");
    if (!ds.is_object())
      HFX_THROW("config", "expected dynamic_shapes to map input names to axes, got {}", ds.dump());
    for (auto it = ds.begin(); it != ds.end(); ++it) {
      const std::string input = "dynamic_shapes." + it.key();
      jsonc::object(it.value(), "config", input + " (axis index → Dim)");
      for (auto at = it.value().begin(); at != it.value().end(); ++at) {
        const std::string where = input + "." + at.key();
        if (at.key().empty() || at.key().size() > 3 ||
            at.key().find_first_not_of("0123456789") != std::string::npos)
          HFX_THROW("config", "expected an axis index (0, 1, ...) as key of {}, got '{}'", input, at.key());
        Dim dim;
        dim.name = jsonc::get<std::string>(at.value(), "name", "config", where);
        dim.min = jsonc::get<int64_t>(at.value(), "min", "config", where);
        dim.max = jsonc::get<int64_t>(at.value(), "max", "config", where);
        if (dim.min > dim.max)
          HFX_THROW("config", "expected min <= max for Dim '{}', got [{}, {}]", dim.name, dim.min, dim.max);
        dynamic_shapes[it.key()][std::stoi(at.key())] = dim;
      }
    }
  }
}

nlohmann::json OnnxConfig::to_json() const {
  auto j = ExportConfig::to_json();
  j["opset"] = opset;
  j["external_data"] = external_data;
  j["optimize"] = optimize;
  j["target"] = target;
  if (quantize.enabled()) j["quantize"] = quant::to_json(quantize);
  return j;
}
void OnnxConfig::from_json(const nlohmann::json& j) {
  check_keys(j, with_common({"opset", "external_data", "optimize", "target", "quantize"}), format);
  ExportConfig::from_json(j);
  take(j, "opset", opset, format);
  take(j, "external_data", external_data, format);
  take(j, "optimize", optimize, format);
  take(j, "target", target, format);
  if (j.contains("quantize")) quantize = quant::from_json(j.at("quantize"));
  // Unless the opset is fixed, the quantized form picks the one it needs: blocked DequantizeLinear (target
  // standard) is opset 21.
  if (!j.contains("opset") && quantize.enabled() && target == "standard") opset = std::max(opset, 21);
  if (opset < kMinOpset || opset > kMaxOpset)
    HFX_THROW("config", "expected an ONNX opset in [{}, {}], got {}", kMinOpset, kMaxOpset, opset);
  if (target != "standard" && target != "ort")
    HFX_THROW("config", "expected target 'standard' or 'ort', got '{}'", target);
  if (quantize.int8_activations && target != "ort")
    HFX_THROW("config",
              "expected --target ort with --activations int8 (ONNX Runtime's MatMulNBits computes "
              "with int8 activations; standard ONNX has no such op), got target {}",
              target);
  if (quantize.enabled() && target == "standard" && opset < 21)
    HFX_THROW("config",
              "expected opset ≥ 21 with quantize {} on target standard (blocked DequantizeLinear), got {}; "
              "use --opset 21 (or leave the opset out: it is then derived) or --target ort",
              quantize.method(), opset);
}

nlohmann::json ExecutorchConfig::to_json() const {
  auto j = ExportConfig::to_json();
  j["backend"] = backend;
  j["max_seq_len"] = max_seq_len;
  if (quantize.enabled()) j["quantize"] = quant::to_json(quantize);
  return j;
}
void ExecutorchConfig::from_json(const nlohmann::json& j) {
  check_keys(j, with_common({"backend", "max_seq_len", "quantize"}), format);
  ExportConfig::from_json(j);
  take(j, "backend", backend, format);
  take(j, "max_seq_len", max_seq_len, format);
  et::backend_prep(
      backend);  // throws "[executorch] expected a backend among [...]" for a name hfx does not write
  if (max_seq_len < 1) HFX_THROW("config", "expected max_seq_len >= 1, got {}", max_seq_len);
  if (j.contains("quantize")) quantize = quant::from_json(j.at("quantize"));
  if (!quantize.enabled()) return;
  check_executorch_quantize();
  // XNNPACK fixes the scales' layout (check_executorch_quantize sets it); a file that asks for the other
  // one would otherwise be silently overridden (tests/integration/config_keys_test.cpp).
  const nlohmann::json& q = j.at("quantize");
  const std::string want_scales = quantize.bf16_scales ? "bf16" : "f32";
  if (q.contains("scales") && q["scales"] != want_scales)
    HFX_THROW(
        "executorch",
        "expected quantize scales \"{}\" with --quantize {} on XNNPACK, got {}: its kernel reads {} scales",
        want_scales, quantize.method(), q["scales"].dump(), want_scales);
  if (q.contains("per_channel") && q["per_channel"] != quantize.per_channel)
    HFX_THROW(
        "executorch",
        "expected quantize per_channel {} with --quantize {} on XNNPACK, got {}: its {}-bit kernel has {}",
        quantize.per_channel, quantize.method(), q["per_channel"].dump(), quantize.bits,
        quantize.per_channel ? "one scale per output channel" : "block scales");
}

// What XNNPACK's quantized fully-connected runs (docs/quantization.md, "ExecuTorch"): the refusals name
// the flag that fixes each case.
void ExecutorchConfig::check_executorch_quantize() {
  const std::string m = quantize.method();
  if (backend != "xnnpack")
    HFX_THROW(
        "executorch",
        "expected --backend xnnpack with --quantize {}, got --backend {}: ExecuTorch's portable kernels "
        "have no quantized linear, the XNNPACK delegate runs it",
        m, backend);
  if (!quantize.symmetric)
    HFX_THROW("executorch",
              "expected --symmetric with --quantize {} --backend xnnpack, got asymmetric codes: XNNPACK's "
              "quantized weights have a fixed zero point (8 for 4-bit, 0 for 8-bit; add --symmetric)",
              m);
  if (quantize.int8_activations)
    HFX_THROW("executorch",
              "expected no --activations int8 with --format executorch, got it: the XNNPACK pattern always "
              "quantizes the activations to int8 per token at run time");
  if (quantize.embedding)
    HFX_THROW("executorch",
              "expected no --quantize-embedding with --format executorch, got it: the embedding gather "
              "stays a portable kernel over float rows");
  if (dtype != "auto" && dtype != "f32")
    HFX_THROW("executorch",
              "expected --dtype auto or f32 with --quantize {} on executorch, got --dtype {}: the "
              "quantized linears hold their own bf16 scales and the other weights stay float32",
              m, dtype);
  // What XNNPACK's kernels read, so eager quantizes to the very weights the delegate runs: 4-bit blocks with
  // bf16 scales (qb4w), 8-bit with one f32 scale per output channel (qc8w; --group-size only lays it out).
  quantize.bf16_scales = quantize.bits == 4;
  quantize.per_channel = quantize.bits == 8;
}

nlohmann::json ExecutorchConfig::precision(DType checkpoint) const {
  nlohmann::json p = ExportConfig::precision(checkpoint);
  if (quantize.enabled()) p["key"] = "int8-dynamic-activations";
  return p;
}

nlohmann::json DynamoConfig::to_json() const {
  nlohmann::json j = ExportConfig::to_json();
  if (quantize.enabled()) j["quantize"] = quant::to_json(quantize);
  return j;
}
void DynamoConfig::from_json(const nlohmann::json& j) {
  check_keys(j, with_common({"quantize"}), format);
  ExportConfig::from_json(j);
  if (j.contains("quantize")) quantize = quant::from_json(j.at("quantize"));
  if (quantize.int8_activations)
    HFX_THROW("dynamo",
              "expected no --activations int8 with --format dynamo, got it: the program de-quantizes the "
              "weights and runs aten.linear in f32 (the int8 rounding is ONNX Runtime's MatMulNBits math)");
  if (quantize.embedding)
    HFX_THROW("dynamo",
              "expected no --quantize-embedding with --format dynamo, got it: the embedding gather stays an "
              "aten.embedding over float rows");
}

nlohmann::json GgufConfig::to_json() const {
  nlohmann::json j = ExportConfig::to_json();
  if (!quantize.empty()) j["quantize"] = quantize;
  return j;
}
void GgufConfig::from_json(const nlohmann::json& j) {
  check_keys(j, with_common({"quantize"}), format);
  ExportConfig::from_json(j);
  if (!j.contains("quantize")) return;
  // The CLI's --quantize sends {"method": ...} as for every format; a config file may name the type alone.
  const nlohmann::json& q = j.at("quantize");
  quantize = q.is_object() ? q.value("method", std::string()) : q.is_string() ? q.get<std::string>() : "";
  const auto& known = kGgufQuantTypes;
  HFX_CHECK(std::find(std::begin(known), std::end(known), quantize) != std::end(known), "gguf",
            "expected --quantize q8_0, q4_0, q4_k, q4_k_m, q5_k_m or q6_k for GGUF (ggml's block types and "
            "llama-quantize's Q4_K_M / Q5_K_M mixes; f16 / bf16 / f32 are --dtype), got {}",
            q.dump());
  HFX_CHECK(dtype == "auto" || dtype == "f32", "gguf",
            "expected no --dtype {} with --quantize {}: the quantized matrices replace the float ones (norms "
            "stay f32)",
            dtype, quantize);
}

std::unique_ptr<Exporter> make_exporter(const std::string& format) { return entry(format).make(); }
std::unique_ptr<ExportConfig> make_config(const std::string& format) { return entry(format).make_config(); }
std::vector<std::string> exporter_formats() {
  std::vector<std::string> v;
  for (const auto& e : exporter_table()) v.push_back(e.format);
  return v;
}
std::unique_ptr<ExportConfig> config_from_json(const nlohmann::json& j) {
  if (!j.is_object() || !j.contains("format") || !j.at("format").is_string())
    HFX_THROW("config", "expected a JSON object with a string 'format', got {}", j.dump());
  auto c = make_config(j.at("format").get<std::string>());
  c->from_json(j);
  return c;
}

}  // namespace hfx
