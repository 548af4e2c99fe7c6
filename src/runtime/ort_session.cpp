// ONNX Runtime session wrapper; see include/hfx/runtime/ort_session.h.
#include "hfx/runtime/ort_session.h"

#include <algorithm>
#include <cctype>
#include <cstdlib>
#include <cstring>
#include <map>

#include <onnxruntime/onnxruntime_cxx_api.h>

#include "hfx/core/error.h"
#include "hfx/export/onnx.h"
#include "hfx/runtime/shape_restriction.h"

namespace hfx::rt {
namespace {

constexpr const char* kComp = "ort";

// ORT's own log goes to stderr. Its errors reach callers as hfx::Error anyway, so by default it only
// prints fatal messages; HFX_ORT_LOG=verbose|info|warning|error|fatal changes that.
OrtLoggingLevel log_level_from_env() {
  const char* v = std::getenv("HFX_ORT_LOG");
  std::string_view s = v ? v : "fatal";
  if (s == "verbose") return ORT_LOGGING_LEVEL_VERBOSE;
  if (s == "info") return ORT_LOGGING_LEVEL_INFO;
  if (s == "warning") return ORT_LOGGING_LEVEL_WARNING;
  if (s == "error") return ORT_LOGGING_LEVEL_ERROR;
  return ORT_LOGGING_LEVEL_FATAL;
}

// One Ort::Env per process, created on first use and never destroyed (ORT must outlive every session,
// including those held by other static objects).
Ort::Env& shared_env() {
  static Ort::Env* env = new Ort::Env(log_level_from_env(), "hfx");
  return *env;
}

struct DTypeEntry {
  const char* name;
  ONNXTensorElementDataType ort;
  size_t size;
};

constexpr DTypeEntry kDTypes[] = {
    {"float32", ONNX_TENSOR_ELEMENT_DATA_TYPE_FLOAT, 4},
    {"float16", ONNX_TENSOR_ELEMENT_DATA_TYPE_FLOAT16, 2},
    {"bfloat16", ONNX_TENSOR_ELEMENT_DATA_TYPE_BFLOAT16, 2},
    {"float64", ONNX_TENSOR_ELEMENT_DATA_TYPE_DOUBLE, 8},
    {"int64", ONNX_TENSOR_ELEMENT_DATA_TYPE_INT64, 8},
    {"int32", ONNX_TENSOR_ELEMENT_DATA_TYPE_INT32, 4},
    {"int16", ONNX_TENSOR_ELEMENT_DATA_TYPE_INT16, 2},
    {"int8", ONNX_TENSOR_ELEMENT_DATA_TYPE_INT8, 1},
    {"uint8", ONNX_TENSOR_ELEMENT_DATA_TYPE_UINT8, 1},
    {"uint16", ONNX_TENSOR_ELEMENT_DATA_TYPE_UINT16, 2},
    {"uint32", ONNX_TENSOR_ELEMENT_DATA_TYPE_UINT32, 4},
    {"uint64", ONNX_TENSOR_ELEMENT_DATA_TYPE_UINT64, 8},
    {"bool", ONNX_TENSOR_ELEMENT_DATA_TYPE_BOOL, 1},
};

const DTypeEntry* find_dtype(std::string_view name) {
  for (const auto& e : kDTypes)
    if (name == e.name) return &e;
  return nullptr;
}

std::string dtype_of(ONNXTensorElementDataType t) {
  for (const auto& e : kDTypes)
    if (e.ort == t) return e.name;
  if (t == ONNX_TENSOR_ELEMENT_DATA_TYPE_STRING) return "string";
  return fmt::format("onnx_type_{}", static_cast<int>(t));
}

std::string shape_str(const std::vector<int64_t>& shape) {
  return fmt::format("[{}]", fmt::join(shape, ","));
}

std::string names_str(const std::vector<IoInfo>& io) {
  std::vector<std::string> names;
  for (const auto& i : io) names.push_back("'" + i.name + "'");
  return fmt::format("{}", fmt::join(names, ", "));
}

// Runs `f`, turning ORT's exceptions into hfx::Error("ort") with ORT's message and `what` as context.
template <typename F>
auto guarded(std::string_view what, F&& f) -> decltype(f()) {
  try {
    return f();
  } catch (const Ort::Exception& e) {
    std::string msg = e.what();
    while (!msg.empty() && std::isspace(static_cast<unsigned char>(msg.back()))) msg.pop_back();
    HFX_THROW(kComp, "{} failed: {} (OrtErrorCode {})", what, msg, static_cast<int>(e.GetOrtErrorCode()));
  }
}

IoInfo describe(const std::string& name, const Ort::TypeInfo& type) {
  IoInfo info;
  info.name = name;
  switch (type.GetONNXType()) {
    case ONNX_TYPE_TENSOR:
    case ONNX_TYPE_SPARSETENSOR: {
      auto ts = type.GetTensorTypeAndShapeInfo();
      info.dtype = dtype_of(ts.GetElementType());
      std::vector<int64_t> dims = ts.GetShape();
      std::vector<const char*> syms = ts.GetSymbolicDimensions();
      for (size_t d = 0; d < dims.size(); ++d) {
        Dim dim;
        dim.value = dims[d] >= 0 ? dims[d] : -1;
        if (dim.value < 0 && d < syms.size() && syms[d]) dim.symbol = syms[d];
        info.shape.push_back(std::move(dim));
      }
      break;
    }
    case ONNX_TYPE_SEQUENCE:
      info.dtype = "sequence";
      break;
    case ONNX_TYPE_MAP:
      info.dtype = "map";
      break;
    case ONNX_TYPE_OPTIONAL:
      info.dtype = "optional";
      break;
    default:
      info.dtype = "unknown";
      break;
  }
  return info;
}

const IoInfo* find_io(const std::vector<IoInfo>& io, std::string_view name) {
  for (const auto& i : io)
    if (i.name == name) return &i;
  return nullptr;
}

// Checks one feed against its declaration; `bound` maps symbolic dim names to the first value seen and
// the input that set it.
void check_feed(const IoInfo& decl, const RtTensor& t,
                std::map<std::string, std::pair<int64_t, std::string>>& bound) {
  HFX_CHECK(t.dtype == decl.dtype, kComp, "input '{}': expected dtype {}, got {}", decl.name, decl.dtype,
            t.dtype);
  const DTypeEntry* dt = find_dtype(t.dtype);
  HFX_CHECK(dt, kComp, "input '{}': expected a tensor dtype, got {}", decl.name, t.dtype);
  HFX_CHECK(t.shape.size() == decl.shape.size(), kComp,
            "input '{}': expected shape {} (rank {}), got {} (rank {})", decl.name, decl.shape_str(),
            decl.shape.size(), shape_str(t.shape), t.shape.size());
  for (size_t d = 0; d < t.shape.size(); ++d) {
    const Dim& dim = decl.shape[d];
    int64_t got = t.shape[d];
    HFX_CHECK(got >= 0, kComp, "input '{}': expected dims >= 0, got {}", decl.name, shape_str(t.shape));
    if (dim.fixed()) {
      HFX_CHECK(got == dim.value, kComp, "input '{}': expected shape {} (dim {} = {}), got {}", decl.name,
                decl.shape_str(), d, dim.value, shape_str(t.shape));
    } else if (!dim.symbol.empty()) {
      auto [it, fresh] = bound.try_emplace(dim.symbol, got, decl.name);
      HFX_CHECK(fresh || it->second.first == got, kComp,
                "input '{}': expected dim {} ('{}') = {} as bound by input '{}', got {} in shape {}",
                decl.name, d, dim.symbol, it->second.first, it->second.second, got, shape_str(t.shape));
    }
  }
  size_t want = static_cast<size_t>(t.numel()) * dt->size;
  HFX_CHECK(t.data.size() == want, kComp, "input '{}': expected {} bytes for {} {}, got {}", decl.name, want,
            t.dtype, shape_str(t.shape), t.data.size());
}

}  // namespace

// ---- RtTensor ----

size_t dtype_size(std::string_view dtype) {
  const DTypeEntry* e = find_dtype(dtype);
  HFX_CHECK(e, kComp,
            "expected a dtype name (float32, float16, bfloat16, float64, int64, int32, int16, int8, "
            "uint8, uint16, uint32, uint64, bool), got '{}'",
            dtype);
  return e->size;
}

int64_t RtTensor::numel() const {
  int64_t n = 1;
  for (int64_t d : shape) n *= d;
  return n;
}

namespace {
template <typename T>
RtTensor make(const char* dtype, std::vector<int64_t> shape, std::span<const T> values) {
  RtTensor t;
  t.dtype = dtype;
  t.shape = std::move(shape);
  HFX_CHECK(t.numel() == static_cast<int64_t>(values.size()), kComp,
            "expected {} values for shape {}, got {}", t.numel(), shape_str(t.shape), values.size());
  t.data.resize(values.size_bytes());
  if (!values.empty()) std::memcpy(t.data.data(), values.data(), values.size_bytes());
  return t;
}

template <typename T>
T load(const uint8_t* p) {
  T v;
  std::memcpy(&v, p, sizeof(T));
  return v;
}
}  // namespace

RtTensor RtTensor::f32(std::vector<int64_t> shape, std::span<const float> values) {
  return make("float32", std::move(shape), values);
}
RtTensor RtTensor::i64(std::vector<int64_t> shape, std::span<const int64_t> values) {
  return make("int64", std::move(shape), values);
}
RtTensor RtTensor::i32(std::vector<int64_t> shape, std::span<const int32_t> values) {
  return make("int32", std::move(shape), values);
}
RtTensor RtTensor::f16_from_f32(std::vector<int64_t> shape, std::span<const float> values) {
  std::vector<uint16_t> bits(values.size());
  for (size_t i = 0; i < values.size(); ++i) bits[i] = Ort::Float16_t(values[i]).val;
  RtTensor t = make("float16", std::move(shape), std::span<const uint16_t>(bits));
  return t;
}
RtTensor RtTensor::zeros(std::string dtype, std::vector<int64_t> shape) {
  RtTensor t;
  t.dtype = std::move(dtype);
  t.shape = std::move(shape);
  HFX_CHECK(t.numel() >= 0, kComp, "expected dims >= 0, got {}", shape_str(t.shape));
  t.data.assign(static_cast<size_t>(t.numel()) * dtype_size(t.dtype), 0);
  return t;
}

std::vector<float> RtTensor::to_f32() const {
  size_t n = data.size() / dtype_size(dtype);
  std::vector<float> out(n);
  const uint8_t* p = data.data();
  if (dtype == "float32") {
    if (n) std::memcpy(out.data(), p, n * 4);
  } else if (dtype == "float16") {
    for (size_t i = 0; i < n; ++i) out[i] = Ort::Float16_t::FromBits(load<uint16_t>(p + 2 * i)).ToFloat();
  } else if (dtype == "bfloat16") {
    for (size_t i = 0; i < n; ++i) out[i] = Ort::BFloat16_t::FromBits(load<uint16_t>(p + 2 * i)).ToFloat();
  } else if (dtype == "float64") {
    for (size_t i = 0; i < n; ++i) out[i] = static_cast<float>(load<double>(p + 8 * i));
  } else {
    HFX_THROW(kComp, "to_f32: expected float32, float16, bfloat16 or float64, got {}", dtype);
  }
  return out;
}

std::vector<int64_t> RtTensor::to_i64() const {
  size_t n = data.size() / dtype_size(dtype);
  std::vector<int64_t> out(n);
  const uint8_t* p = data.data();
  if (dtype == "int64") {
    if (n) std::memcpy(out.data(), p, n * 8);
  } else if (dtype == "int32") {
    for (size_t i = 0; i < n; ++i) out[i] = load<int32_t>(p + 4 * i);
  } else if (dtype == "int16") {
    for (size_t i = 0; i < n; ++i) out[i] = load<int16_t>(p + 2 * i);
  } else if (dtype == "int8") {
    for (size_t i = 0; i < n; ++i) out[i] = static_cast<int8_t>(p[i]);
  } else if (dtype == "uint8" || dtype == "bool") {
    for (size_t i = 0; i < n; ++i) out[i] = p[i];
  } else {
    HFX_THROW(kComp, "to_i64: expected int64, int32, int16, int8, uint8 or bool, got {}", dtype);
  }
  return out;
}

std::string IoInfo::shape_str() const {
  std::vector<std::string> parts;
  for (const auto& d : shape)
    parts.push_back(d.fixed() ? std::to_string(d.value) : (d.symbol.empty() ? std::string("?") : d.symbol));
  return fmt::format("[{}]", fmt::join(parts, ","));
}

const RtTensor& find_tensor(const NamedTensors& tensors, std::string_view name) {
  for (const auto& [n, t] : tensors)
    if (n == name) return t;
  std::vector<std::string> names;
  for (const auto& [n, t] : tensors) names.push_back("'" + n + "'");
  HFX_THROW(kComp, "expected a tensor named '{}' among [{}], got none", name, fmt::join(names, ", "));
}

std::string ort_version() { return Ort::GetVersionString(); }

// ---- OrtSession ----

struct OrtSession::Impl {
  Ort::Session session{nullptr};
  std::vector<IoInfo> inputs, outputs;
  std::vector<IoInfo> overridable;  ///< inputs backed by an initializer (defaults); not required
  std::string model_path;
  bool profiling = false;
  std::vector<ShapeRestriction> restrictions;  // of the graph's hfx.contract metadata
};

bool resolve_prepacking(const std::filesystem::path& model, std::optional<bool> requested) {
  if (const char* env = std::getenv("HFX_ORT_PREPACK")) {
    const std::string v = env;
    HFX_CHECK(v == "0" || v == "1", kComp,
              "expected HFX_ORT_PREPACK to be 0 or 1, got '{}'; unset it to use "
              "what the export advises (onnx/session_options.json)",
              v);
    return v == "1";
  }
  if (requested) return *requested;
  if (auto advice = read_ort_session_advice(model)) return advice->prepacking;
  return false;
}

OrtSession::OrtSession(const std::filesystem::path& model, const SessionOptions& options)
    : impl_(std::make_unique<Impl>()) {
  impl_->model_path = model.string();
  HFX_CHECK(std::filesystem::exists(model), kComp, "expected an ONNX model file, got no file at '{}'",
            impl_->model_path);
  guarded(fmt::format("loading '{}'", impl_->model_path), [&] {
    Ort::SessionOptions so;
    so.SetIntraOpNumThreads(options.intra_op_threads);
    so.SetInterOpNumThreads(1);
    GraphOptimizationLevel level = ORT_ENABLE_ALL;
    switch (options.graph_opt) {
      case GraphOpt::Disabled:
        level = ORT_DISABLE_ALL;
        break;
      case GraphOpt::Basic:
        level = ORT_ENABLE_BASIC;
        break;
      case GraphOpt::Extended:
        level = ORT_ENABLE_EXTENDED;
        break;
      case GraphOpt::All:
        level = ORT_ENABLE_ALL;
        break;
    }
    so.SetGraphOptimizationLevel(level);
    if (!resolve_prepacking(model, options.prepacking)) so.AddConfigEntry("session.disable_prepacking", "1");
    if (!options.profile_prefix.empty()) {
      so.EnableProfiling(options.profile_prefix.c_str());
      impl_->profiling = true;
    }
    if (!options.optimized_model_path.empty())
      so.SetOptimizedModelFilePath(options.optimized_model_path.c_str());
    impl_->session = Ort::Session(shared_env(), model.c_str(), so);

    Ort::AllocatorWithDefaultOptions alloc;
    for (size_t i = 0, n = impl_->session.GetInputCount(); i < n; ++i)
      impl_->inputs.push_back(
          describe(impl_->session.GetInputNameAllocated(i, alloc).get(), impl_->session.GetInputTypeInfo(i)));
    for (size_t i = 0, n = impl_->session.GetOverridableInitializerCount(); i < n; ++i)
      impl_->overridable.push_back(
          describe(impl_->session.GetOverridableInitializerNameAllocated(i, alloc).get(),
                   impl_->session.GetOverridableInitializerTypeInfo(i)));
    for (size_t i = 0, n = impl_->session.GetOutputCount(); i < n; ++i)
      impl_->outputs.push_back(describe(impl_->session.GetOutputNameAllocated(i, alloc).get(),
                                        impl_->session.GetOutputTypeInfo(i)));
    Ort::AllocatedStringPtr contract =
        impl_->session.GetModelMetadata().LookupCustomMetadataMapAllocated("hfx.contract", alloc);
    if (contract) {
      auto j = nlohmann::json::parse(contract.get(), nullptr, false);
      HFX_CHECK(!j.is_discarded(), kComp,
                "expected JSON in the hfx.contract metadata of '{}', got unparsable text", impl_->model_path);
      impl_->restrictions = restrictions_from_contract(j);
    }
  });
}

OrtSession::~OrtSession() = default;
OrtSession::OrtSession(OrtSession&&) noexcept = default;
OrtSession& OrtSession::operator=(OrtSession&&) noexcept = default;

const std::vector<IoInfo>& OrtSession::inputs() const { return impl_->inputs; }
const std::vector<ShapeRestriction>& OrtSession::restrictions() const { return impl_->restrictions; }
const std::vector<IoInfo>& OrtSession::outputs() const { return impl_->outputs; }

std::vector<std::string> OrtSession::input_names() const {
  std::vector<std::string> v;
  for (const auto& i : impl_->inputs) v.push_back(i.name);
  return v;
}
std::vector<std::string> OrtSession::overridable_input_names() const {
  std::vector<std::string> v;
  for (const auto& i : impl_->overridable) v.push_back(i.name);
  return v;
}

std::vector<std::string> OrtSession::output_names() const {
  std::vector<std::string> v;
  for (const auto& o : impl_->outputs) v.push_back(o.name);
  return v;
}

const IoInfo& OrtSession::input(std::string_view name) const {
  const IoInfo* i = find_io(impl_->inputs, name);
  HFX_CHECK(i, kComp, "expected an input named one of [{}], got '{}'", names_str(impl_->inputs), name);
  return *i;
}
const IoInfo& OrtSession::output(std::string_view name) const {
  const IoInfo* o = find_io(impl_->outputs, name);
  HFX_CHECK(o, kComp, "expected an output named one of [{}], got '{}'", names_str(impl_->outputs), name);
  return *o;
}

NamedTensors OrtSession::run(const NamedTensors& feeds, const std::vector<std::string>& fetch) const {
  // Validate first, so that mistakes name the input in our words.
  std::map<std::string, std::pair<int64_t, std::string>> bound;
  for (size_t i = 0; i < feeds.size(); ++i) {
    const auto& [name, tensor] = feeds[i];
    for (size_t j = 0; j < i; ++j)
      HFX_CHECK(feeds[j].first != name, kComp, "expected each input once, got '{}' twice", name);
    const IoInfo* over = find_io(impl_->overridable, name);  // an input with a default may be fed too
    check_feed(over ? *over : input(name), tensor, bound);
  }
  std::vector<std::string> missing;
  for (const auto& decl : impl_->inputs) {
    bool fed = std::any_of(feeds.begin(), feeds.end(), [&](const auto& f) { return f.first == decl.name; });
    if (!fed && decl.dtype != "optional")
      missing.push_back("'" + decl.name + "' " + decl.dtype + decl.shape_str());
  }
  HFX_CHECK(missing.empty(), kComp, "expected a value for every input, got none for {}",
            fmt::join(missing, ", "));
  // Combinations of sizes the graph's contract excludes (e.g. GroupQueryAttention's batch-1 rule).
  check_restrictions(
      impl_->restrictions,
      [&](const std::string& input, int axis) -> int64_t {
        for (const auto& [name, t] : feeds)
          if (name == input)
            return axis < static_cast<int>(t.shape.size()) ? t.shape[static_cast<size_t>(axis)] : -1;
        return -1;
      },
      kComp);
  std::vector<std::string> out_names = fetch.empty() ? output_names() : fetch;
  for (const auto& n : out_names) output(n);

  return guarded(fmt::format("running '{}'", impl_->model_path), [&] {
    static uint8_t empty_buffer[8] = {};
    Ort::MemoryInfo mem = Ort::MemoryInfo::CreateCpu(OrtArenaAllocator, OrtMemTypeDefault);
    std::vector<Ort::Value> values;
    std::vector<const char*> in_c, out_c;
    values.reserve(feeds.size());
    for (const auto& [name, t] : feeds) {
      const DTypeEntry* dt = find_dtype(t.dtype);
      // ORT does not write to input buffers; it needs a non-null pointer even for empty tensors.
      void* p = t.data.empty() ? static_cast<void*>(empty_buffer) : const_cast<uint8_t*>(t.data.data());
      values.push_back(
          Ort::Value::CreateTensor(mem, p, t.data.size(), t.shape.data(), t.shape.size(), dt->ort));
      in_c.push_back(name.c_str());
    }
    for (const auto& n : out_names) out_c.push_back(n.c_str());

    std::vector<Ort::Value> results = impl_->session.Run(Ort::RunOptions{nullptr}, in_c.data(), values.data(),
                                                         values.size(), out_c.data(), out_c.size());
    NamedTensors out;
    out.reserve(results.size());
    for (size_t i = 0; i < results.size(); ++i) {
      const Ort::Value& v = results[i];
      HFX_CHECK(v.IsTensor(), kComp, "output '{}': expected a tensor, got another ONNX value type",
                out_names[i]);
      auto info = v.GetTensorTypeAndShapeInfo();
      RtTensor t;
      t.dtype = dtype_of(info.GetElementType());
      HFX_CHECK(find_dtype(t.dtype), kComp, "output '{}': expected a numeric dtype, got {}", out_names[i],
                t.dtype);
      t.shape = info.GetShape();
      size_t bytes = info.GetElementCount() * dtype_size(t.dtype);
      t.data.resize(bytes);
      if (bytes) std::memcpy(t.data.data(), v.GetTensorRawData(), bytes);
      out.emplace_back(out_names[i], std::move(t));
    }
    return out;
  });
}

std::string OrtSession::end_profiling() {
  if (!impl_->profiling) return {};
  impl_->profiling = false;
  return guarded("end_profiling", [&] {
    Ort::AllocatorWithDefaultOptions alloc;
    return std::string(impl_->session.EndProfilingAllocated(alloc).get());
  });
}

DecoderCache::DecoderCache(const OrtSession& decoder, const std::string& component) {
  for (const IoInfo& i : decoder.inputs())
    if (i.name.rfind("past_key_values.", 0) == 0) {
      HFX_CHECK(i.shape.size() == 4 && i.shape[1].fixed() && i.shape[3].fixed(), component,
                "expected {} of the merged decoder to be [batch, heads, past, head_dim] with fixed heads and "
                "head_dim, got {}",
                i.name, i.shape_str());
      names_.push_back(i.name);
      presents_.push_back("present" + i.name.substr(std::string("past_key_values").size()));
      dims_.push_back({i.shape[1].value, i.shape[3].value});
    }
}

void DecoderCache::reset(int64_t batch) {
  past_.clear();
  for (size_t i = 0; i < names_.size(); i++)
    past_.emplace_back(names_[i], RtTensor::zeros("float32", {batch, dims_[i].first, 0, dims_[i].second}));
}

void DecoderCache::feed(NamedTensors& feeds) {
  for (auto& p : past_) feeds.emplace_back(p.first, std::move(p.second));
  past_.clear();
}

void DecoderCache::take(NamedTensors& out, size_t first) {
  past_.clear();
  for (size_t i = 0; i < names_.size(); i++)
    past_.emplace_back(names_[i], std::move(out.at(first + i).second));
}

}  // namespace hfx::rt

#if defined(__SANITIZE_ADDRESS__)
// ONNX Runtime is not built with sanitizers and keeps a few small allocations for the life of the
// process; LeakSanitizer would fail every binary that loads it. Only ORT's own frames are suppressed.
extern "C" const char* __lsan_default_suppressions() { return "leak:libonnxruntime.so\n"; }
#endif
