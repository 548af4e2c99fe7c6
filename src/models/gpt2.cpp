// gpt2: GPT2LMHeadModel — learned positions (wpe), LayerNorm, Conv1D weights stored [in, out] (x @ W + b),
// fused c_attn, gelu_new, lm_head tied to wte. Config names n_embd / n_head / n_layer / n_positions /
// n_inner / layer_norm_epsilon / activation_function, as GPT2Config's attribute_map reads them.
#include <cmath>

#include "blocks.h"

namespace hfx::models {
namespace {

ModelConfig parse(const json& j) {
  json m = j;
  int64_t E = jget<int64_t>(j, "n_embd", 768);
  m["hidden_size"] = E;
  m["num_attention_heads"] = jget<int64_t>(j, "n_head", 12);
  m["num_key_value_heads"] = m["num_attention_heads"];
  m["num_hidden_layers"] = jget<int64_t>(j, "n_layer", 12);
  m["max_position_embeddings"] = jget<int64_t>(j, "n_positions", 1024);
  m["intermediate_size"] = jget<int64_t>(j, "n_inner", 4 * E);
  m.erase("head_dim");
  ConfigDefaults d;
  d.vocab_size = 50257;
  d.norm_eps = 1e-5;
  d.norm_eps_key = "layer_norm_epsilon";
  d.tie_word_embeddings = true;
  d.bos = 50256;
  d.eos = 50256;
  ModelConfig c = parse_common(m, "gpt2", d);
  c.raw = j;
  set_layer_types(c, [](int64_t) { return false; });
  return c;
}

WeightSpecs specs(const ModelConfig& c) {
  const int64_t E = c.hidden_size, I = c.intermediate_size;
  WeightSpecs s{{"transformer.wte.weight", {c.vocab_size, E}},
                {"transformer.wpe.weight", {c.max_position_embeddings, E}}};
  for (int64_t i = 0; i < c.num_hidden_layers; i++) {
    std::string p = "transformer.h." + std::to_string(i) + ".";
    s.push_back({p + "ln_1.weight", {E}});
    s.push_back({p + "ln_1.bias", {E}});
    s.push_back({p + "attn.c_attn.weight", {E, 3 * E}});
    s.push_back({p + "attn.c_attn.bias", {3 * E}});
    s.push_back({p + "attn.c_proj.weight", {E, E}});
    s.push_back({p + "attn.c_proj.bias", {E}});
    s.push_back({p + "ln_2.weight", {E}});
    s.push_back({p + "ln_2.bias", {E}});
    s.push_back({p + "mlp.c_fc.weight", {E, I}});
    s.push_back({p + "mlp.c_fc.bias", {I}});
    s.push_back({p + "mlp.c_proj.weight", {I, E}});
    s.push_back({p + "mlp.c_proj.bias", {E}});
  }
  s.push_back({"transformer.ln_f.weight", {E}});
  s.push_back({"transformer.ln_f.bias", {E}});
  if (!c.tie_word_embeddings) s.push_back({"lm_head.weight", {c.vocab_size, E}});
  return s;
}

class GPT2LM : public CausalLM {
 public:
  using CausalLM::CausalLM;

  ForwardOut forward(Builder& b, const ForwardArgs& a) const override {
    const auto& c = config();
    const int64_t E = c.hidden_size, H = c.num_attention_heads, D = c.head_dim;
    const std::string act = jget<std::string>(c.raw, "activation_function", "gelu_new");
    const bool inv_layer = jget<bool>(c.raw, "scale_attn_by_inverse_layer_idx", false);
    Sym B = a.input_ids.size(0), S = a.input_ids.size(1);
    Sym past = a.cache ? a.cache->past_length() : Sym(0);
    Var h;
    {
      Scope st(b, "transformer");
      Var te, pe;
      {
        Scope s(b, "wte");
        te = F::embedding(w(b, "transformer.wte.weight"), a.input_ids);
        b.name_output(te);
      }
      {
        Scope s(b, "wpe");
        // Learned positions exist only up to n_positions: past + S must stay inside the table. When
        // tracing, the ranges cannot tell, so this records a guard that export turns into a runtime check.
        if (!b.env().le(past + S, Sym(c.max_position_embeddings)))
          HFX_THROW("gpt2", "expected past + sequence <= n_positions = {}, got {}", c.max_position_embeddings,
                    b.env().hint(past + S));
        pe = F::embedding(w(b, "transformer.wpe.weight"), positions(b, a, past));
        b.name_output(pe);
      }
      h = F::add(F::to(te, DType::F32), F::to(pe, DType::F32));
      Var mask = padding_mask(b, a.attention_mask);
      for (int64_t i = 0; i < c.num_hidden_layers; i++) {
        Scope sl(b, "h." + std::to_string(i));
        Var x = layer_norm(b, h, "ln_1");
        Var att;
        {
          Scope sa(b, "attn");
          Var qkv = conv1d(b, x, "c_attn");
          Var q = F::transpose(F::reshape(F::slice(qkv, -1, 0, E), {B, S, H, D}), 1, 2);
          Var k = F::transpose(F::reshape(F::slice(qkv, -1, E, 2 * E), {B, S, H, D}), 1, 2);
          Var v = F::transpose(F::reshape(F::slice(qkv, -1, 2 * E, 3 * E), {B, S, H, D}), 1, 2);
          if (a.cache) std::tie(k, v) = a.cache->update(static_cast<int>(i), k, v);
          double scale = 1.0 / std::sqrt(static_cast<double>(D));
          if (inv_layer) scale /= static_cast<double>(i + 1);
          Var o = F::sdpa(q, k, v, mask, scale, /*causal=*/true);
          o = F::reshape(F::transpose(o, 1, 2), {B, S, E});
          att = conv1d(b, o, "c_proj");
          b.name_output(att);
        }
        h = F::add(h, att);
        x = layer_norm(b, h, "ln_2");
        Var m;
        {
          Scope sm(b, "mlp");
          m = conv1d(b, activation(conv1d(b, x, "c_fc"), act), "c_proj");
          b.name_output(m);
        }
        h = F::add(h, m);
        b.name_output(h);
      }
      h = layer_norm(b, h, "ln_f");
    }
    h = keep_last(h, a.logits_to_keep);
    Scope sl(b, "lm_head");
    Var logits =
        matmul_weight(b, *this, h, c.tie_word_embeddings ? "transformer.wte.weight" : "lm_head.weight");
    b.name_output(logits);
    return {logits};
  }

 private:
  // Conv1D: y = x @ W[in, out] + b; quantized, the codes hold W^T [out, in]
  // (Architecture::transposed_weights).
  Var conv1d(Builder& b, const Var& x, const std::string& local) const {
    Scope s(b, local);
    std::string n = b.scope();
    const bool quantized = weights().has(weight_name(quant::quant_names(n + ".weight").qweight));
    Var y = F::add(
        quantized ? matmul_weight(b, *this, x, n + ".weight") : F::matmul(x, W(b, *this, n + ".weight")),
        W(b, *this, n + ".bias"));
    b.name_output(y);
    return y;
  }
  Var layer_norm(Builder& b, const Var& x, const std::string& local) const {
    Scope s(b, local);
    std::string n = b.scope();
    Var y = F::layer_norm(x, W(b, *this, n + ".weight"), W(b, *this, n + ".bias"), config().norm_eps);
    b.name_output(y);
    return y;
  }
};

json tiny(const std::string& preset) {
  if (preset != "tiny") unknown_preset("gpt2", preset, "tiny");
  return json{{"architectures", {"GPT2LMHeadModel"}},
              {"model_type", "gpt2"},
              {"vocab_size", 512},
              {"n_embd", 64},
              {"n_head", 4},
              {"n_layer", 2},
              {"n_positions", 256},
              {"n_inner", nullptr},
              {"activation_function", "gelu_new"},
              {"layer_norm_epsilon", 1e-5},
              {"initializer_range", 0.1},
              {"scale_attn_weights", true},
              {"tie_word_embeddings", true},
              {"use_cache", true},
              {"torch_dtype", "float32"},
              {"transformers_version", "4.56.0"}};
}

}  // namespace

const Architecture& gpt2_architecture() {
  static const Architecture a{
      .model_type = "gpt2",
      .parse_config = parse,
      .weight_specs = specs,
      .create = [](ModelConfig c, std::shared_ptr<io::WeightStore> w) -> std::unique_ptr<Model> {
        return std::make_unique<GPT2LM>(std::move(c), std::move(w));
      },
      .tiny_config = tiny,
      .tiny_tokenizer = "byte_level",
      .tiny_norm_mean = 1.0,
      .optional_weights = {R"(transformer\.h\.\d+\.attn\.(masked_)?bias)"},
      .transposed_weights =
          {R"(transformer\.h\.\d+\.(attn\.c_attn|attn\.c_proj|mlp\.c_fc|mlp\.c_proj)\.weight)"},
  };
  return a;
}

}  // namespace hfx::models
