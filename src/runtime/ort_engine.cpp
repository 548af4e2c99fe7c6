// OrtEngine: generation over exported ONNX graphs with ONNX Runtime's C++ API directly (not OrtSession's
// byte-copying run): the int64 inputs are views of the loop's own buffers, and each step's present.N.*
// outputs are moved into the past_key_values.N.* slots of the next step, so the KV cache is never
// copied on the host. The first step of the merged graph gets empty pasts [B, Hkv, 0, D].
// State leaves (a state-space model's past_conv.N / past_ssm.N, as Transformers.js names them) have no
// past axis: their empty past is all zeros of the declared shape with the batch size, and each step's
// present_conv.N / present_ssm.N are moved into them the same way. A hybrid (lfm2) has key/value inputs on
// its attention layers only: the layers between them carry state leaves instead.
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <map>
#include <optional>

#include <fmt/ranges.h>
#include <onnxruntime/onnxruntime_cxx_api.h>
#include <nlohmann/json.hpp>

#include "hfx/core/error.h"
#include "hfx/io/safetensors.h"
#include "hfx/runtime/generator.h"
#include "hfx/runtime/ort_session.h"
#include "hfx/runtime/shape_restriction.h"

namespace hfx {
namespace fs = std::filesystem;

namespace {

constexpr const char* kComp = "generate";

// ORT keeps one environment per process; this handle shares it (CreateEnv returns the existing one).
Ort::Env& env() {
  static Ort::Env* e = new Ort::Env(ORT_LOGGING_LEVEL_FATAL, "hfx-generate");
  return *e;
}

struct Graph {
  Ort::Session session{nullptr};
  std::vector<std::string> in_names, out_names;
  std::vector<const char*> in_ptrs, out_ptrs;
  bool has_mask = false, has_pos = false;
  int64_t layers = 0;  // number of past_key_values.N.key inputs
  /// Their layer indices: 0..layers-1, or a hybrid's attention layers only (its other layers carry states).
  std::vector<int64_t> kv_layers;
  std::map<int64_t, ONNXTensorElementDataType> past_type;
  std::map<int64_t, std::vector<int64_t>> past_shape;  // declared [B, Hkv, P, D] (-1 where symbolic)
  int logits_index = -1;
  std::vector<int> present_key, present_value;  // output index of present.N.key/value (-1 if absent)
  std::vector<int64_t> logits_shape;
  /// State leaves: input past_X (not past_key_values.*) with its declared type and shape; output present_X.
  struct State {
    std::string name;
    ONNXTensorElementDataType type;
    std::vector<int64_t> shape;
    int present = -1;
  };
  std::vector<State> states;
  std::vector<rt::ShapeRestriction> restrictions;  // of the graph's hfx.contract metadata
};

bool is_state_leaf(const std::string& n) {
  return n.rfind("past_", 0) == 0 && n.rfind("past_key_values.", 0) != 0;
}

// The graph's inputs: names, whether it takes a mask and positions, each past layer's type and shape,
// and the recurrent state leaves.
void read_inputs(Graph& g, Ort::AllocatorWithDefaultOptions& alloc) {
  std::map<int64_t, std::pair<ONNXTensorElementDataType, std::vector<int64_t>>> pasts;
  for (size_t i = 0; i < g.session.GetInputCount(); i++) {
    std::string n = g.session.GetInputNameAllocated(i, alloc).get();
    g.in_names.push_back(n);
    if (n == "attention_mask") g.has_mask = true;
    if (n == "position_ids") g.has_pos = true;
    int layer = -1;
    if (std::sscanf(n.c_str(), "past_key_values.%d.key", &layer) == 1 &&
        n == fmt::format("past_key_values.{}.key", layer)) {
      Ort::TypeInfo type = g.session.GetInputTypeInfo(i);  // the shape info below is a view into it
      auto info = type.GetTensorTypeAndShapeInfo();
      pasts[layer] = {info.GetElementType(), info.GetShape()};
    }
    if (is_state_leaf(n)) {
      Ort::TypeInfo type = g.session.GetInputTypeInfo(i);
      auto info = type.GetTensorTypeAndShapeInfo();
      g.states.push_back({n, info.GetElementType(), info.GetShape(), -1});
    }
  }
  g.layers = static_cast<int64_t>(pasts.size());
  for (const auto& [l, p] : pasts) {
    g.kv_layers.push_back(l);
    g.past_type[l] = p.first;
    g.past_shape[l] = p.second;
  }
}

// Each state leaf's present output (and its fixed sizes), and the present.N.key/value output of every
// layer the cache has (prefill graphs have no past inputs but still present outputs).
void link_outputs(Graph& g, const fs::path& path) {
  for (auto& st : g.states) {
    std::string present = "present_" + st.name.substr(5);
    for (size_t i = 0; i < g.out_names.size(); i++)
      if (g.out_names[i] == present) st.present = static_cast<int>(i);
    HFX_CHECK(st.present >= 0, kComp, "expected output {} for the state input {} in {}, got outputs [{}]",
              present, st.name, path.string(), fmt::join(g.out_names, ", "));
    for (size_t a = 1; a < st.shape.size(); a++)
      HFX_CHECK(st.shape[a] > 0, kComp,
                "expected the state input {} of {} to have fixed sizes beyond the batch, got [{}]", st.name,
                path.string(), fmt::join(st.shape, ", "));
  }
  int64_t nl = g.kv_layers.empty() ? 0 : g.kv_layers.back() + 1;
  for (const auto& n : g.out_names) {
    int layer = -1;
    if (std::sscanf(n.c_str(), "present.%d.key", &layer) == 1) nl = std::max<int64_t>(nl, layer + 1);
  }
  g.present_key.assign(nl, -1);
  g.present_value.assign(nl, -1);
  for (size_t i = 0; i < g.out_names.size(); i++) {
    int layer = -1;
    const auto& n = g.out_names[i];
    if (std::sscanf(n.c_str(), "present.%d.", &layer) != 1 || layer < 0 || layer >= nl) continue;
    if (n == fmt::format("present.{}.key", layer)) g.present_key[layer] = static_cast<int>(i);
    if (n == fmt::format("present.{}.value", layer)) g.present_value[layer] = static_cast<int>(i);
  }
}

Graph load_graph(const fs::path& path, int threads) {
  Graph g;
  Ort::SessionOptions so;
  if (threads > 0) so.SetIntraOpNumThreads(threads);
  so.SetGraphOptimizationLevel(GraphOptimizationLevel::ORT_ENABLE_ALL);
  // MLAS prepacking as the export advises for this graph (onnx/session_options.json): off for float weights
  // (packing every MatMul weight is most of a large model's session creation, 1B f32: 28.9 s with it, 3.3 s
  // without, and a second copy of the weights; single-row decode MatMuls do not use it), on for MatMulNBits,
  // which computes from the packed blocks (1B int4 decode: 0.2 tok/s without, 21.6 with).
  if (!rt::resolve_prepacking(path)) so.AddConfigEntry("session.disable_prepacking", "1");
  try {
    g.session = Ort::Session(env(), path.c_str(), so);
  } catch (const Ort::Exception& e) {
    HFX_THROW(kComp, "expected a loadable ONNX graph at {}, got: {}", path.string(), e.what());
  }
  Ort::AllocatorWithDefaultOptions alloc;
  if (Ort::AllocatedStringPtr c =
          g.session.GetModelMetadata().LookupCustomMetadataMapAllocated("hfx.contract", alloc)) {
    auto j = nlohmann::json::parse(c.get(), nullptr, false);
    HFX_CHECK(!j.is_discarded(), kComp,
              "expected JSON in the hfx.contract metadata of {}, got unparsable text", path.string());
    g.restrictions = rt::restrictions_from_contract(j);
    // The axis ranges first: a prompt or a generation past the export's bounds is refused in the contract's
    // words (ONNX Runtime's own refusal names the check node inside a Reshape error).
    auto ranges = rt::axis_ranges_from_contract(
        j, "a longer prompt or generation needs an export with a larger --max-sequence (or --max-batch)");
    g.restrictions.insert(g.restrictions.begin(), ranges.begin(), ranges.end());
  }
  read_inputs(g, alloc);
  for (size_t i = 0; i < g.session.GetOutputCount(); i++)
    g.out_names.push_back(g.session.GetOutputNameAllocated(i, alloc).get());
  for (size_t i = 0; i < g.out_names.size(); i++)
    if (g.out_names[i] == "logits") {
      g.logits_index = static_cast<int>(i);
      g.logits_shape = g.session.GetOutputTypeInfo(i).GetTensorTypeAndShapeInfo().GetShape();
    }
  HFX_CHECK(g.logits_index >= 0, kComp, "expected an output named 'logits' in {}, got outputs [{}]",
            path.string(), fmt::join(g.out_names, ", "));
  for (const auto& n : g.in_names)
    HFX_CHECK(n == "input_ids" || n == "attention_mask" || n == "position_ids" || n.rfind("past_", 0) == 0,
              kComp,
              "expected inputs input_ids, attention_mask, position_ids, past_key_values.N.key/value and "
              "state leaves past_*.N in "
              "{}, got '{}'",
              path.string(), n);
  link_outputs(g, path);
  for (const auto& n : g.in_names) g.in_ptrs.push_back(n.c_str());
  for (const auto& n : g.out_names) g.out_ptrs.push_back(n.c_str());
  return g;
}

class OrtEngine final : public Engine {
 public:
  OrtEngine(const std::string& dir, int threads) {
    fs::path d(dir);
    fs::path onnx = fs::is_directory(d / "onnx") ? d / "onnx" : d;
    if (fs::exists(onnx / "model.onnx")) {
      main_ = load_graph(onnx / "model.onnx", threads);
    } else if (fs::exists(onnx / "prefill.onnx") && fs::exists(onnx / "decode.onnx")) {
      prefill_ = load_graph(onnx / "prefill.onnx", threads);
      main_ = load_graph(onnx / "decode.onnx", threads);
    } else {
      HFX_THROW(kComp, "expected {}/model.onnx (merged) or prefill.onnx + decode.onnx, got neither",
                onnx.string());
    }
    HFX_CHECK(main_.layers > 0 || !main_.states.empty(), kComp,
              "expected past_key_values.N.key/value or past_conv/past_ssm.N inputs in the {} graph, got none",
              prefill_ ? "decode" : "merged");
    if (prefill_)
      for (const auto& st : main_.states) {
        bool found = false;
        for (const auto& n : prefill_->out_names) found = found || n == "present_" + st.name.substr(5);
        HFX_CHECK(found, kComp, "expected the prefill graph to return present_{}, got outputs [{}]",
                  st.name.substr(5), fmt::join(prefill_->out_names, ", "));
      }
    for (int64_t l : main_.kv_layers)
      HFX_CHECK(main_.present_key[l] >= 0 && main_.present_value[l] >= 0, kComp,
                "expected outputs present.{0}.key and present.{0}.value, got outputs [{1}]", l,
                fmt::join(main_.out_names, ", "));
    if (prefill_)
      HFX_CHECK(prefill_->present_key.size() == main_.present_key.size(), kComp,
                "expected the prefill graph to return present.N.* up to layer {}, got {}",
                main_.present_key.size(), prefill_->present_key.size());
    auto cfg_path = d / "config.json";
    if (fs::exists(cfg_path))
      config_ = nlohmann::json::parse(io::read_file(cfg_path.string()), nullptr, false);
    // Past dims: declared Hkv and D when fixed, else config.json.
    const size_t slots = main_.present_key.size();  // highest KV layer + 1
    kv_heads_.assign(slots, 0);
    head_dim_.assign(slots, 0);
    for (int64_t l : main_.kv_layers) {
      const auto& s = main_.past_shape[l];
      HFX_CHECK(s.size() == 4, kComp, "expected past_key_values.{}.key of rank 4 [B, Hkv, P, D], got rank {}",
                l, s.size());
      int64_t h = s[1] > 0 ? s[1] : cfg_int("num_key_value_heads", cfg_int("num_attention_heads", -1));
      int64_t hd = s[3] > 0 ? s[3] : cfg_int("head_dim", -1);
      if (hd <= 0 && cfg_int("hidden_size", -1) > 0 && cfg_int("num_attention_heads", -1) > 0)
        hd = cfg_int("hidden_size", -1) / cfg_int("num_attention_heads", -1);
      HFX_CHECK(h > 0 && hd > 0, kComp,
                "expected fixed heads and head_dim in past_key_values.{}.key or a config.json beside the "
                "graphs, got neither",
                l);
      kv_heads_[static_cast<size_t>(l)] = h;
      head_dim_[static_cast<size_t>(l)] = hd;
    }
    const auto& ls = main_.logits_shape;
    vocab_ = !ls.empty() && ls.back() > 0 ? ls.back() : cfg_int("vocab_size", -1);
    HFX_CHECK(vocab_ > 0, kComp,
              "expected a fixed vocabulary dim on 'logits' or vocab_size in config.json, got neither");
    past_.resize(2 * slots);
  }

  std::string name() const override { return "ort"; }
  int64_t vocab_size() const override { return vocab_; }
  int64_t past_length() const override { return past_len_; }
  void reset() override {
    for (auto& v : past_) v = Ort::Value(nullptr);
    state_.clear();
    past_len_ = 0;
  }

  // Copies the first `length` positions of every past [B, Hkv, P, D] into new tensors. State leaves
  // (conv/ssm) have no positions to cut: false.
  bool crop(int64_t length) override {
    if (length <= 0 || length > past_len_ || !main_.states.empty()) return false;
    for (const auto& v : past_) {
      if (!v) return false;
      const auto et = v.GetTensorTypeAndShapeInfo().GetElementType();
      if (et != ONNX_TENSOR_ELEMENT_DATA_TYPE_FLOAT && et != ONNX_TENSOR_ELEMENT_DATA_TYPE_FLOAT16 &&
          et != ONNX_TENSOR_ELEMENT_DATA_TYPE_BFLOAT16)
        return false;
    }
    for (auto& v : past_) {
      auto info = v.GetTensorTypeAndShapeInfo();
      const auto et = info.GetElementType();
      std::vector<int64_t> shape = info.GetShape(), cut = shape;
      cut[2] = length;
      Ort::Value c = Ort::Value::CreateTensor(alloc_, cut.data(), cut.size(), et);
      const size_t row = static_cast<size_t>(shape[3]) * (et == ONNX_TENSOR_ELEMENT_DATA_TYPE_FLOAT ? 4 : 2);
      const char* src = static_cast<const char*>(v.GetTensorRawData());
      char* dst = static_cast<char*>(c.GetTensorMutableRawData());
      for (int64_t bh = 0; bh < shape[0] * shape[1]; bh++)
        std::memcpy(dst + bh * length * row, src + bh * shape[2] * row, length * row);
      v = std::move(c);
    }
    past_len_ = length;
    return true;
  }

  void step(std::span<const int64_t> input_ids, std::span<const int64_t> attention_mask,
            std::span<const int64_t> position_ids, int64_t batch, int64_t seq,
            std::vector<float>& logits) override {
    const int64_t total = past_len_ + seq;
    HFX_CHECK(static_cast<int64_t>(input_ids.size()) == batch * seq &&
                  static_cast<int64_t>(attention_mask.size()) == batch * total &&
                  static_cast<int64_t>(position_ids.size()) == batch * seq,
              kComp,
              "expected input_ids/position_ids [{0}, {1}] and attention_mask [{0}, {2}], got {3}, {4} and "
              "{5} values",
              batch, seq, total, input_ids.size(), position_ids.size(), attention_mask.size());
    Graph& g = (past_len_ == 0 && prefill_) ? *prefill_ : main_;
    // A shape combination the graph's contract excludes is refused here, in the contract's words.
    rt::check_restrictions(
        g.restrictions,
        [&](const std::string& input, int axis) -> int64_t {
          if (input == "input_ids" || input == "position_ids")
            return axis == 0 ? batch : axis == 1 ? seq : -1;
          if (input == "attention_mask") return axis == 0 ? batch : axis == 1 ? total : -1;
          if (input.rfind("past_key_values.", 0) == 0 && axis == 2) return past_len_;
          return -1;
        },
        kComp);
    build_feeds(g, input_ids, attention_mask, position_ids, batch, seq);
    std::vector<Ort::Value> outs;
    try {
      outs = g.session.Run(Ort::RunOptions{nullptr}, g.in_ptrs.data(), feeds_.data(), feeds_.size(),
                           g.out_ptrs.data(), g.out_ptrs.size());
      feeds_.clear();  // drop the old pasts now: only the presents stay alive between steps
    } catch (const Ort::Exception& e) {
      feeds_.clear();
      HFX_THROW(kComp, "ONNX Runtime failed on a step with batch {}, sequence {}, past {}: {}", batch, seq,
                past_len_, e.what());
    }
    last_logits(outs[g.logits_index], batch, logits);
    keep_presents(g, outs, total);
    past_len_ = total;
  }

 private:
  // The feeds of one step, in the graph's input order (kept across steps: only the small Ort::Value handles
  // are rebuilt). ORT only reads inputs; the const_casts hand it views of the caller's buffers.
  void build_feeds(Graph& g, std::span<const int64_t> input_ids, std::span<const int64_t> attention_mask,
                   std::span<const int64_t> position_ids, int64_t batch, int64_t seq) {
    const int64_t ids_shape[2] = {batch, seq}, mask_shape[2] = {batch, past_len_ + seq};
    auto i64 = [&](std::span<const int64_t> s, const int64_t* shape) {
      return Ort::Value::CreateTensor<int64_t>(mem_, const_cast<int64_t*>(s.data()), s.size(), shape, 2);
    };
    feeds_.clear();
    feeds_.reserve(g.in_names.size());
    for (const auto& n : g.in_names) {
      if (n == "input_ids")
        feeds_.push_back(i64(input_ids, ids_shape));
      else if (n == "attention_mask")
        feeds_.push_back(i64(attention_mask, mask_shape));
      else if (n == "position_ids")
        feeds_.push_back(i64(position_ids, ids_shape));
      else if (is_state_leaf(n))
        feeds_.push_back(std::move(state_feed(g, n, batch)));
      else
        feeds_.push_back(std::move(past_feed(g, n, batch)));
    }
  }

  // A recurrent state leaf's value; the first step gets the zero state, [B, declared sizes...].
  Ort::Value& state_feed(const Graph& g, const std::string& n, int64_t batch) {
    Ort::Value& v = state_[n];
    if (v) return v;
    const Graph::State* st = nullptr;
    for (const auto& x : g.states)
      if (x.name == n) st = &x;
    std::vector<int64_t> shape = st->shape;
    shape[0] = batch;
    v = Ort::Value::CreateTensor(alloc_, shape.data(), shape.size(), st->type);
    auto info = v.GetTensorTypeAndShapeInfo();
    const size_t bytes = info.GetElementCount() * (st->type == ONNX_TENSOR_ELEMENT_DATA_TYPE_FLOAT ? 4 : 2);
    std::memset(v.GetTensorMutableRawData(), 0, bytes);
    return v;
  }

  // past_key_values.L.key / .value; the first step gets an empty past [B, Hkv, 0, D].
  Ort::Value& past_feed(const Graph& g, const std::string& n, int64_t batch) {
    int layer = -1;
    char kind[8] = {0};
    std::sscanf(n.c_str(), "past_key_values.%d.%5s", &layer, kind);
    const bool key = std::string(kind) == "key";
    Ort::Value& v = past_.at(2 * layer + (key ? 0 : 1));
    if (!v) {
      const int64_t shape[4] = {batch, kv_heads_[layer], 0, head_dim_[layer]};
      v = Ort::Value::CreateTensor(alloc_, shape, 4, g.past_type.at(layer));
    }
    return v;
  }

  // logits [B, S', V] → the last position of each row, as f32.
  void last_logits(Ort::Value& lv, int64_t batch, std::vector<float>& logits) const {
    auto info = lv.GetTensorTypeAndShapeInfo();
    auto ls = info.GetShape();
    HFX_CHECK(ls.size() == 3 && ls[0] == batch && ls[2] == vocab_, kComp,
              "expected logits [{}, S, {}], got [{}]", batch, vocab_, fmt::join(ls, ", "));
    const int64_t S = ls[1], V = vocab_;
    logits.resize(static_cast<size_t>(batch * V));
    const auto et = info.GetElementType();
    for (int64_t b = 0; b < batch; b++) {
      const int64_t off = (b * S + (S - 1)) * V;
      float* dst = logits.data() + b * V;
      if (et == ONNX_TENSOR_ELEMENT_DATA_TYPE_FLOAT) {
        const float* src = lv.GetTensorData<float>() + off;
        std::copy(src, src + V, dst);
      } else if (et == ONNX_TENSOR_ELEMENT_DATA_TYPE_FLOAT16) {
        const Ort::Float16_t* src = lv.GetTensorData<Ort::Float16_t>() + off;
        for (int64_t i = 0; i < V; i++) dst[i] = src[i].ToFloat();
      } else if (et == ONNX_TENSOR_ELEMENT_DATA_TYPE_BFLOAT16) {
        const Ort::BFloat16_t* src = lv.GetTensorData<Ort::BFloat16_t>() + off;
        for (int64_t i = 0; i < V; i++) dst[i] = src[i].ToFloat();
      } else {
        HFX_THROW(kComp, "expected float32, float16 or bfloat16 logits, got element type {}",
                  static_cast<int>(et));
      }
    }
  }

  // present → next past, and present_X → past_X state leaves, moved (no copy); a prefill graph (no state
  // inputs) fills the states for the decode graph.
  void keep_presents(const Graph& g, std::vector<Ort::Value>& outs, int64_t total) {
    for (int64_t l : main_.kv_layers) {
      int ki = g.present_key.size() > static_cast<size_t>(l) ? g.present_key[l] : -1;
      int vi = g.present_value.size() > static_cast<size_t>(l) ? g.present_value[l] : -1;
      HFX_CHECK(ki >= 0 && vi >= 0, kComp, "expected outputs present.{0}.key/value, got outputs [{1}]", l,
                fmt::join(g.out_names, ", "));
      past_[2 * l] = std::move(outs[ki]);
      past_[2 * l + 1] = std::move(outs[vi]);
      auto ps = past_[2 * l].GetTensorTypeAndShapeInfo().GetShape();
      HFX_CHECK(ps.size() == 4 && ps[2] == total, kComp, "expected present.{}.key [B, Hkv, {}, D], got [{}]",
                l, total, fmt::join(ps, ", "));
    }
    for (const auto& st : main_.states) {
      const std::string present = "present_" + st.name.substr(5);
      for (size_t i = 0; i < g.out_names.size(); i++)
        if (g.out_names[i] == present) state_[st.name] = std::move(outs[i]);
    }
  }

  int64_t cfg_int(const char* key, int64_t def) const {
    if (!config_.is_object()) return def;
    auto it = config_.find(key);
    return it != config_.end() && it->is_number_integer() ? it->get<int64_t>() : def;
  }

  Graph main_;
  std::optional<Graph> prefill_;
  nlohmann::json config_;
  std::vector<int64_t> kv_heads_, head_dim_;
  int64_t vocab_ = 0;
  Ort::AllocatorWithDefaultOptions alloc_;
  Ort::MemoryInfo mem_ = Ort::MemoryInfo::CreateCpu(OrtArenaAllocator, OrtMemTypeDefault);
  std::vector<Ort::Value> feeds_;
  std::vector<Ort::Value> past_;             // [2 * layer + 0/1] = key/value
  std::map<std::string, Ort::Value> state_;  // state leaves by past input name
  int64_t past_len_ = 0;
};

}  // namespace

std::unique_ptr<Engine> make_ort_engine(const std::string& dir, int threads) {
  return std::make_unique<OrtEngine>(dir, threads);
}

}  // namespace hfx
