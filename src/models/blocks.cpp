// Shared blocks of the architectures. The decoder follows transformers' LlamaDecoderLayer and its
// relatives line by line: pre-norm residual blocks, GQA attention through hfx.sdpa (causal, per-layer
// window, softcap), rope on q/k before the cache update, SwiGLU/GeGLU MLP.
#include "blocks.h"

#include <algorithm>
#include <cmath>
#include <limits>

#include "hfx/core/error.h"
#include "hfx/ops/linear_q.h"
#include "hfx/quant/quantize.h"

namespace hfx::models {

bool jhas(const json& j, const char* key) {
  auto it = j.find(key);
  return it != j.end() && !it->is_null();
}

int64_t scaled_size(double factor, int64_t base, const char* key) {
  const double size = factor * static_cast<double>(base);
  if (!std::isfinite(factor) || factor <= 0 || !(size < 0x1p40))
    HFX_THROW("model",
              "expected config.json.{} to be a positive number giving a size below 2^40 (x {}), got {}", key,
              base, factor);
  return static_cast<int64_t>(size);
}

static std::vector<int64_t> id_list(const json& j, const char* key) {
  std::vector<int64_t> r;
  if (!jhas(j, key)) return r;
  const json& v = j[key];
  if (v.is_number_integer())
    r.push_back(v.get<int64_t>());
  else if (v.is_array())
    r = jsonc::as<std::vector<int64_t>>(v, "model", std::string("config.json.") + key);
  else
    HFX_THROW("model", "expected {} to be an int or a list of ints, got {}", key, v.dump());
  return r;
}

ModelConfig parse_common(const json& j, const std::string& model_type, const ConfigDefaults& d) {
  if (!j.is_object()) HFX_THROW("model", "expected config.json to be an object, got {}", j.type_name());
  ModelConfig c;
  c.raw = j;
  c.model_type = model_type;
  try {
    c.vocab_size = jget<int64_t>(j, "vocab_size", d.vocab_size);
    c.hidden_size = jget<int64_t>(j, "hidden_size", d.hidden_size);
    c.intermediate_size = jget<int64_t>(j, "intermediate_size", d.intermediate_size);
    c.num_hidden_layers = jget<int64_t>(j, "num_hidden_layers", d.num_hidden_layers);
    c.num_attention_heads = jget<int64_t>(j, "num_attention_heads", d.num_attention_heads);
    c.num_key_value_heads = jget<int64_t>(j, "num_key_value_heads", c.num_attention_heads);
    c.max_position_embeddings = jget<int64_t>(j, "max_position_embeddings", d.max_position_embeddings);
    c.norm_eps = jget<double>(j, d.norm_eps_key, d.norm_eps);
    c.rope_theta = jget<double>(j, "rope_theta", d.rope_theta);
    if (jhas(j, "rope_parameters") && j["rope_parameters"].is_object())
      c.rope_theta = jget<double>(j["rope_parameters"], "rope_theta", c.rope_theta);
    c.tie_word_embeddings = jget<bool>(j, "tie_word_embeddings", d.tie_word_embeddings);
    if (c.num_attention_heads <= 0 || c.hidden_size <= 0)
      HFX_THROW("model", "expected positive hidden_size and num_attention_heads, got {} and {}",
                c.hidden_size, c.num_attention_heads);
    int64_t hd_default = d.head_dim ? d.head_dim : c.hidden_size / c.num_attention_heads;
    c.head_dim = jget<int64_t>(j, "head_dim", hd_default);
    std::string dt = jget<std::string>(j, "torch_dtype", jget<std::string>(j, "dtype", "float32"));
    c.dtype = dtype_from_name(dt);
    auto bos = id_list(j, "bos_token_id");
    auto pad = id_list(j, "pad_token_id");
    c.eos_token_ids = id_list(j, "eos_token_id");
    if (!jhas(j, "bos_token_id")) {
      if (d.bos) c.bos_token_id = d.bos;
    } else if (!bos.empty())
      c.bos_token_id = bos[0];
    if (!pad.empty()) c.pad_token_id = pad[0];
    if (!jhas(j, "eos_token_id") && d.eos) c.eos_token_ids = {*d.eos};
  } catch (const nlohmann::json::exception& e) {
    HFX_THROW("model", "expected config.json fields of the right types for {}, got: {}", model_type,
              e.what());
  }
  if (c.num_key_value_heads <= 0 || c.num_attention_heads % c.num_key_value_heads)
    HFX_THROW("model", "expected num_attention_heads ({}) to be a multiple of num_key_value_heads ({})",
              c.num_attention_heads, c.num_key_value_heads);
  if (c.num_hidden_layers <= 0)
    HFX_THROW("model", "expected num_hidden_layers > 0, got {}", c.num_hidden_layers);
  c.layer_types.assign(c.num_hidden_layers, "full_attention");
  return c;
}

void set_layer_types(ModelConfig& cfg, const std::function<bool(int64_t)>& sliding,
                     const std::vector<std::string>& supported) {
  const json& j = cfg.raw;
  cfg.layer_types.clear();
  if (jhas(j, "layer_types")) {
    if (!j["layer_types"].is_array())
      HFX_THROW("model", "expected layer_types to be a list of strings, got {}", j["layer_types"].dump());
    auto join = [](const std::vector<std::string>& v) {
      std::string r;
      for (const auto& x : v) r += (r.empty() ? "" : ", ") + x;
      return r;
    };
    int64_t i = 0;
    for (const auto& t : j["layer_types"]) {
      if (!t.is_string()) HFX_THROW("model", "expected a layer type string at layer {}, got {}", i, t.dump());
      std::string s = t.get<std::string>();
      if (std::find(kLayerTypes.begin(), kLayerTypes.end(), s) == kLayerTypes.end())
        HFX_THROW("model", "expected a layer type among [{}], got '{}' at layer {}", join(kLayerTypes), s, i);
      if (std::find(supported.begin(), supported.end(), s) == supported.end())
        HFX_THROW("model", "expected a layer type {} runs ({}), got '{}' at layer {}", cfg.model_type,
                  join(supported), s, i);
      cfg.layer_types.push_back(s);
      i++;
    }
    if (static_cast<int64_t>(cfg.layer_types.size()) != cfg.num_hidden_layers)
      HFX_THROW("model", "expected {} layer_types (num_hidden_layers), got {}", cfg.num_hidden_layers,
                cfg.layer_types.size());
  } else {
    for (int64_t i = 0; i < cfg.num_hidden_layers; i++)
      cfg.layer_types.push_back(sliding(i) ? "sliding_attention" : "full_attention");
  }
  for (const auto& t : cfg.layer_types)
    if (t == "sliding_attention" && cfg.sliding_window <= 0)
      HFX_THROW("model", "expected a positive sliding_window for sliding_attention layers, got {}",
                cfg.sliding_window);
}

json with_common_names(const json& j, int64_t default_hidden) {
  json k = j;
  for (const auto& [gpt2, common] :
       std::vector<std::pair<const char*, const char*>>{{"n_embd", "hidden_size"},
                                                        {"n_layer", "num_hidden_layers"},
                                                        {"n_head", "num_attention_heads"},
                                                        {"n_positions", "max_position_embeddings"}})
    if (jhas(j, gpt2)) k[common] = j[gpt2];
  k["intermediate_size"] = jget<int64_t>(j, "n_inner", 4 * jget<int64_t>(k, "hidden_size", default_hidden));
  return k;
}

double softcap_of(const json& j, const char* key, double def) {
  if (!j.contains(key)) return def;
  return j[key].is_null() ? 0.0 : jget<double>(j, key, def);
}

RopeConfig rope_config_partial(const ModelConfig& c, double partial) {
  const json& j = c.raw;
  const bool in_params = jhas(j, "rope_parameters") && j["rope_parameters"].is_object() &&
                         jhas(j["rope_parameters"], "partial_rotary_factor");
  if (in_params || jhas(j, "partial_rotary_factor")) return rope_config(c);
  ModelConfig with = c;
  with.raw["partial_rotary_factor"] = partial;
  return rope_config(with);
}

void refuse_knob(const ModelConfig& c, const char* key, const json& expected, const char* what) {
  if (!jhas(c.raw, key) || c.raw[key] == expected) return;
  HFX_THROW("model",
            "expected config.json.{} to be {} for {} (hfx does not implement {} yet), got {}; see "
            "docs/adding-an-architecture.md",
            key, expected.dump(), c.model_type, what, c.raw[key].dump());
}

Var W(Builder& b, const Model& m, const std::string& name) { return F::to(m.w(b, name), DType::F32); }

// x @ weight^T: hfx.linear_q when the store holds the weight's quantized form (quant::quantize_model),
// else aten.linear on the f32 weight.
Var matmul_weight(Builder& b, const Model& m, const Var& x, const std::string& weight) {
  const quant::QuantNames q = quant::quant_names(weight);
  if (!m.weights().has(m.weight_name(q.qweight))) return F::linear(x, W(b, m, weight));
  Var codes = m.w(b, q.qweight), scales = m.w(b, q.scales), zp = m.w_opt(b, q.zero_points);
  // bits and group size follow from the shapes: codes [N, K / group, group · bits / 8]
  const int64_t K = x.size(-1).value(), group = K / codes.size(1).value();
  return F::linear_q(x, codes, scales, zp, codes.size(2).value() * 8 / group, group,
                     m.config().int8_activations ? 8 : 0);
}

Var linear(Builder& b, const Model& m, const Var& x, const std::string& local, bool bias) {
  Scope s(b, local);
  std::string n = b.scope();
  Var y;
  if (m.weights().has(m.weight_name(quant::quant_names(n + ".weight").qweight))) {
    y = matmul_weight(b, m, x, n + ".weight");
    if (bias) y = F::add(y, W(b, m, n + ".bias"));
  } else {
    y = F::linear(x, W(b, m, n + ".weight"), bias ? W(b, m, n + ".bias") : Var());
  }
  b.name_output(y);
  return y;
}

Var rms_norm(Builder& b, const Model& m, const Var& x, const std::string& local, double eps, double offset) {
  Scope s(b, local);
  Var y = F::rms_norm(x, W(b, m, b.scope() + ".weight"), eps, offset);
  b.name_output(y);
  return y;
}

Var activation(const Var& x, const std::string& name) {
  if (name == "silu" || name == "swish") return F::silu(x);
  if (name == "gelu") return F::gelu(x, "none");
  if (name == "gelu_new" || name == "gelu_pytorch_tanh" || name == "gelu_fast" || name == "gelu_python_tanh")
    return F::gelu(x, "tanh");
  if (name == "gelu_ggml") {
    // ggml's CPU GELU (GGML_GELU_FP16, what llama.cpp runs for the tanh GELU): a table of ggml_gelu_f32 over
    // the f16 inputs, stored as f16 — 0.5x(1 + tanhf(S x (1 + A x x))) in ggml's float order at the
    // f16-rounded input, rounded to f16; x <= -10 gives 0, x >= 10 gives x. ggml's builds for FMA CPUs
    // contract 1 + A x x into one fma, which changes one entry of the table (x = -1.9990234375:
    // -0.045501708984375, not -0.04547); with it this is llama.cpp's table on every input (ctest
    // GgmlBlocks.GeluGgmlIsLlamaCppsTable). read_back_gguf sets it, so that the eager model of a GGUF file
    // computes what llama.cpp does.
    auto f16 = [](const Var& v) { return F::to(F::to(v, DType::F16), DType::F32); };
    const Var h = f16(x), zero = F::mul(x, 0.0);
    const Var inner = F::add(F::mul(F::mul(h, 0.044715), h), 1.0);
    const Var t = F::tanh(F::mul(F::mul(h, 0.79788456080286535587989211986876), inner));
    Var g = f16(F::mul(F::mul(h, 0.5), F::add(t, 1.0)));
    g = F::where(F::eq(h, F::add(zero, -1.9990234375)), F::add(zero, -0.045501708984375), g);
    return F::where(F::le(x, F::add(zero, -10.0)), zero, F::where(F::ge(x, F::add(zero, 10.0)), x, g));
  }
  if (name == "relu") return F::relu(x);
  if (name == "relu2") {  // ReLUSquaredActivation (Nemotron)
    Var r = F::relu(x);
    return F::mul(r, r);
  }
  if (name == "quick_gelu") return F::mul(x, F::sigmoid(F::mul(x, 1.702)));  // QuickGELUActivation
  if (name == "tanh") return F::tanh(x);                                     // DeBERTa's conv_act default
  HFX_THROW(
      "model",
      "expected a supported activation (silu, gelu, gelu_new, gelu_pytorch_tanh, gelu_ggml, relu, relu2, "
      "quick_gelu, tanh), got "
      "'{}'",
      name);
}

Var padding_mask(Builder& b, const Var& attention_mask) {
  if (!attention_mask.defined()) return Var();
  Var keep = F::to(attention_mask, DType::Bool);  // [B, T]
  keep = F::unsqueeze(F::unsqueeze(keep, 1), 1);  // [B, 1, 1, T]
  Var zero = b.constant(Tensor::scalar(0.0));
  Var minv = b.constant(Tensor::scalar(static_cast<double>(std::numeric_limits<float>::lowest())));
  return F::where(keep, zero, minv);  // f32 [B, 1, 1, T]
}

Var positions(Builder& b, const ForwardArgs& a, const Sym& past) {
  if (a.position_ids.defined()) return a.position_ids;
  const Var& tokens = a.inputs_embeds.defined() ? a.inputs_embeds : a.input_ids;
  Sym B = tokens.size(0), S = tokens.size(1);
  Var p = F::unsqueeze(F::arange(b, past, past + S), 0);  // [1, S]
  return F::expand(p, {B, S});
}

std::pair<Var, Var> image_text_masks(Builder& b, const Var& token_type_ids, const Var& attention_mask,
                                     const Sym& past, int64_t window) {
  const Sym B = token_type_ids.size(0), S = token_type_ids.size(1);
  // An ONNX caller may leave token_type_ids out (its default is zeros [1, 1], InputDecl::zero_default):
  // expanded to the declared [B, S] (the embeddings' sizes) before it is indexed.
  const Var types = F::expand(token_type_ids, {B, S});
  Var qpos = F::unsqueeze(F::arange(b, past, past + S), 1);  // [S, 1]
  Var rel = F::arange(b, Sym(0) - past, S);                  // key position - past: [T]
  Var kpos = F::unsqueeze(F::add(rel, b.constant(Tensor::from_ints({}, {0}))), 0);
  kpos = F::add(kpos, F::unsqueeze(F::arange(b, past, past + Sym(1)), 0));  // key positions 0 .. T-1: [1, T]
  Var one = b.constant(Tensor::from_ints({}, {1})), zero = b.constant(Tensor::from_ints({}, {0}));
  // The keys' token types: this chunk's for its own positions, none (text) for the cached ones.
  Var kt = F::index_select(types, 1, F::maximum(rel, zero));                // [B, T]
  Var kimg = F::logical_and(F::eq(kt, one), F::ge(rel, zero));              // [B, T]
  Var qimg = F::unsqueeze(F::unsqueeze(F::eq(types, one), 1), 3);           // [B, 1, S, 1]
  Var both = F::logical_and(qimg, F::unsqueeze(F::unsqueeze(kimg, 1), 2));  // [B, 1, S, T]
  // Image tokens see each other only within their own image (one run of image tokens), as transformers 5
  // does (its token_type_ids mask groups the runs); 4.x let every image token see every other one.
  Var is_img = F::to(F::eq(types, one), DType::I64);  // [B, S]
  Var prev = F::cat({F::mul(F::slice(is_img, 1, 0, 1), zero), F::slice(is_img, 1, 0, S - Sym(1))}, 1);
  Var group = F::mul(F::cumsum(F::mul(is_img, F::sub(one, prev)), 1), is_img);  // run number, 0: text
  Var kgroup = F::index_select(group, 1, F::maximum(rel, zero));                // [B, T]
  both = F::logical_and(
      both, F::eq(F::unsqueeze(F::unsqueeze(group, 1), 3), F::unsqueeze(F::unsqueeze(kgroup, 1), 2)));
  Var allowed = F::logical_or(F::le(kpos, qpos), both);
  if (attention_mask.defined())
    allowed = F::logical_and(allowed, F::unsqueeze(F::unsqueeze(F::to(attention_mask, DType::Bool), 1), 1));
  Var near = F::gt(kpos, F::sub(qpos, b.constant(Tensor::from_ints({}, {window}))));  // q - k < window
  Var fzero = b.constant(Tensor::scalar(0.0));
  Var minv = b.constant(Tensor::scalar(static_cast<double>(std::numeric_limits<float>::lowest())));
  return {F::where(allowed, fzero, minv), F::where(F::logical_and(allowed, near), fzero, minv)};
}

Var keep_last(const Var& h, int64_t keep) {
  if (keep <= 0) return h;
  Sym S = h.size(1);
  return F::slice(h, 1, sym_max(S - Sym(keep), Sym(0)), S);
}

// ---- decoder ----

MoeOptions parse_moe(const ModelConfig& c, const char* experts_key, int64_t def_experts, int64_t def_top_k) {
  MoeOptions m;
  // transformers 5 writes some configs' expert count under the other name (qwen3_moe's config.json says
  // num_local_experts; its attribute_map reads it back as num_experts): either spelling is the count.
  const std::string key = experts_key;
  const char* alias = key == "num_experts" ? "num_local_experts" : "num_experts";
  if (!jhas(c.raw, experts_key) && jhas(c.raw, alias)) experts_key = alias;
  try {
    m.num_experts = jget<int64_t>(c.raw, experts_key, def_experts);
    m.top_k = jget<int64_t>(c.raw, "num_experts_per_tok", def_top_k);
  } catch (const nlohmann::json::exception& e) {
    HFX_THROW("model", "expected integer {} and num_experts_per_tok, got: {}", experts_key, e.what());
  }
  if (m.num_experts <= 0) HFX_THROW("model", "expected {} > 0, got {}", experts_key, m.num_experts);
  if (m.top_k <= 0 || m.top_k > m.num_experts)
    HFX_THROW("model", "expected 0 < num_experts_per_tok <= {} ({}), got {}", experts_key, m.num_experts,
              m.top_k);
  return m;
}

std::vector<bool> sparse_layers_by_step(const ModelConfig& c) {
  int64_t step = jget<int64_t>(c.raw, "decoder_sparse_step", 1);
  std::vector<int64_t> dense = jget<std::vector<int64_t>>(c.raw, "mlp_only_layers", {});
  if (step <= 0) HFX_THROW("model", "expected decoder_sparse_step > 0, got {}", step);
  std::vector<bool> r;
  for (int64_t i = 0; i < c.num_hidden_layers; i++)
    r.push_back(std::find(dense.begin(), dense.end(), i) == dense.end() && (i + 1) % step == 0);
  return r;
}

}  // namespace hfx::models

namespace hfx::models {

int64_t sliding_window_of(const json& j, int64_t def) {
  auto it = j.find("sliding_window");
  if (it == j.end()) return def;
  if (it->is_null()) return 0;
  return it->get<int64_t>();
}

json tiny_decoder_config(const char* architecture_class, const char* model_type) {
  return json{{"architectures", {architecture_class}},
              {"model_type", model_type},
              {"vocab_size", 512},
              {"hidden_size", 64},
              {"intermediate_size", 128},
              {"num_hidden_layers", 2},
              {"num_attention_heads", 4},
              {"num_key_value_heads", 2},
              {"head_dim", 16},
              {"max_position_embeddings", 2048},
              {"initializer_range", 0.1},  // create-tiny's std: larger than HF's 0.02 so attention matters
              {"rms_norm_eps", 1e-6},
              {"rope_theta", 10000.0},
              {"tie_word_embeddings", false},
              {"use_cache", true},
              {"torch_dtype", "float32"},
              {"transformers_version", "4.56.0"}};
}

void unknown_preset(const std::string& model_type, const std::string& preset, const std::string& known) {
  HFX_THROW("model", "expected a {} preset ({}), got '{}'", model_type, known, preset);
}

std::vector<double> alibi_slopes_bloom(int64_t heads) {
  // float32 as torch computes them: base^powers with base = 2^(-(2^-(log2(n) - 3))).
  int64_t n = 1;
  while (n * 2 <= heads) n *= 2;
  auto base_of = [](int64_t m) {
    return static_cast<float>(std::pow(2.0, -std::pow(2.0, -(std::log2(static_cast<double>(m)) - 3))));
  };
  std::vector<double> s;
  const float base = base_of(n), extra = base_of(2 * n);
  for (int64_t i = 1; i <= n; i++) s.push_back(std::pow(base, static_cast<float>(i)));
  for (int64_t i = 0; i < std::min(n, heads - n); i++)
    s.push_back(std::pow(extra, static_cast<float>(2 * i + 1)));
  return s;
}

std::vector<double> alibi_slopes_mpt(int64_t heads, double bias_max) {
  int64_t n = 1;
  while (n < heads) n *= 2;
  std::vector<double> all;
  for (int64_t i = 1; i <= n; i++)
    all.push_back(
        1.0f / std::pow(2.0f, static_cast<float>(i) * static_cast<float>(bias_max / static_cast<double>(n))));
  if (n == heads) return all;
  std::vector<double> s;  // slopes[1::2] then slopes[::2], the first `heads`
  for (int64_t i = 1; i < n; i += 2) s.push_back(all[static_cast<size_t>(i)]);
  for (int64_t i = 0; i < n; i += 2) s.push_back(all[static_cast<size_t>(i)]);
  s.resize(static_cast<size_t>(heads));
  return s;
}

// M2M100 / XGLM SinusoidalPositionalEmbedding.get_embedding, in float32 as torch computes it: column j <
// half: sin(pos * exp(-j * ln(10000) / (half - 1))), column half + j: cos of the same; row `pad` zero.
Tensor fairseq_sinusoidal_table(int64_t n, int64_t dim, int64_t pad) {
  Tensor t = Tensor::empty({n, dim}, DType::F32);
  float* p = t.data<float>();
  const int64_t half = dim / 2;
  const auto step = static_cast<float>(-std::log(10000.0) / static_cast<double>(half - 1));
  for (int64_t pos = 0; pos < n; pos++) {
    for (int64_t j = 0; j < half; j++) {
      const float angle = static_cast<float>(pos) * std::exp(static_cast<float>(j) * step);
      p[pos * dim + j] = pos == pad ? 0.0f : std::sin(angle);
      p[pos * dim + half + j] = pos == pad ? 0.0f : std::cos(angle);
    }
    if (dim % 2) p[pos * dim + dim - 1] = 0.0f;
  }
  return t;
}

}  // namespace hfx::models
