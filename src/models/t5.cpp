// t5: T5ForConditionalGeneration — pre-RMSNorm encoder and decoder over one shared embedding, no
// attention scaling, a relative position bias computed by the first layer of each stack (bidirectional
// buckets in the encoder, unidirectional in the decoder) and shared by all its layers. feed_forward_proj
// "relu" (wo(relu(wi x))) or "gated-gelu" (wo(gelu_new(wi_0 x) * wi_1 x), T5 v1.1). Tied (original T5):
// the decoder output is scaled by d_model^-0.5 before lm_head = shared (transformers 5: where the config's
// scale_decoder_outputs says so); untied (v1.1): lm_head.weight.
// mt5 (MT5ForConditionalGeneration): the same modules; gated-gelu by default, the output never scaled.
#include <cmath>

#include "hfx/core/error.h"
#include "relative_bucket.h"
#include "seq2seq.h"

namespace hfx::models {
namespace {

struct T5Options {
  int64_t d_model = 512, d_kv = 64, d_ff = 2048, layers = 6, decoder_layers = 6, heads = 8, buckets = 32,
          max_distance = 128, vocab = 32128;
  double eps = 1e-6;
  bool gated = false;
  std::string act = "relu";
};

// What mt5 changes: feed_forward_proj's default, and the decoder output is never scaled (MT5Config keeps no
// scale_decoder_outputs; MT5ForConditionalGeneration applies lm_head as it is).
bool is_mt5(const ModelConfig& c) { return c.model_type == "mt5"; }

T5Options options(const ModelConfig& c) {
  const json& j = c.raw;
  T5Options o;
  o.d_model = c.hidden_size;
  o.d_kv = c.head_dim;
  o.d_ff = jget<int64_t>(j, "d_ff", 2048);
  o.layers = jget<int64_t>(j, "num_layers", 6);
  o.decoder_layers = c.num_hidden_layers;
  o.heads = c.num_attention_heads;
  o.buckets = jget<int64_t>(j, "relative_attention_num_buckets", 32);
  o.max_distance = jget<int64_t>(j, "relative_attention_max_distance", 128);
  o.vocab = c.vocab_size;
  o.eps = c.norm_eps;
  // T5Config: "gated-gelu" → gated, gelu_new; "relu" / "gated-silu" / ... → act after the dash.
  std::string proj = jget<std::string>(j, "feed_forward_proj", is_mt5(c) ? "gated-gelu" : "relu");
  size_t dash = proj.find('-');
  o.gated = dash != std::string::npos && proj.substr(0, dash) == "gated";
  if (dash != std::string::npos && !o.gated)
    HFX_THROW("model", "expected feed_forward_proj 'ACT' or 'gated-ACT', got '{}'", proj);
  o.act = proj.substr(dash == std::string::npos ? 0 : dash + 1);
  if (proj == "gated-gelu") o.act = "gelu_new";
  if (o.buckets < 2 || o.max_distance <= o.buckets / 4)
    HFX_THROW("model",
              "expected relative_attention_num_buckets >= 2 and max_distance > buckets/4, got {} and {}",
              o.buckets, o.max_distance);
  return o;
}

ModelConfig parse_as(const json& j, const char* model_type) {
  if (!j.is_object()) HFX_THROW("model", "expected config.json to be an object, got {}", j.type_name());
  json m = j;
  m["hidden_size"] = jget<int64_t>(j, "d_model", 512);
  m["head_dim"] = jget<int64_t>(j, "d_kv", 64);
  int64_t layers = jget<int64_t>(j, "num_layers", 6);
  m["num_hidden_layers"] = jget<int64_t>(j, "num_decoder_layers", layers);
  m["num_attention_heads"] = jget<int64_t>(j, "num_heads", 8);
  m["num_key_value_heads"] = m["num_attention_heads"];
  m["intermediate_size"] = jget<int64_t>(j, "d_ff", 2048);
  ConfigDefaults d;
  d.vocab_size = 32128;
  d.norm_eps_key = "layer_norm_epsilon";
  d.norm_eps = 1e-6;
  d.tie_word_embeddings = true;
  d.bos = std::nullopt;
  d.eos = 1;
  ModelConfig c = parse_common(m, model_type, d);
  c.raw = j;
  if (!c.pad_token_id) c.pad_token_id = 0;
  (void)options(c);  // checks feed_forward_proj and the bucket settings
  return c;
}

WeightSpecs specs(const ModelConfig& c) {
  const T5Options o = options(c);
  const int64_t E = o.d_model, I = o.heads * o.d_kv;
  WeightSpecs s{{"shared.weight", {o.vocab, E}}};
  auto attn = [&](const std::string& p, bool bias) {
    for (const char* n : {"q", "k", "v"}) s.push_back({p + n + ".weight", {I, E}});
    s.push_back({p + "o.weight", {E, I}});
    if (bias) s.push_back({p + "relative_attention_bias.weight", {o.buckets, o.heads}});
  };
  for (const char* stack : {"encoder", "decoder"}) {
    const bool dec = std::string(stack) == "decoder";
    const int64_t n = dec ? o.decoder_layers : o.layers;
    for (int64_t i = 0; i < n; i++) {
      std::string p = std::string(stack) + ".block." + std::to_string(i) + ".layer.";
      attn(p + "0.SelfAttention.", i == 0);
      s.push_back({p + "0.layer_norm.weight", {E}});
      if (dec) {
        attn(p + "1.EncDecAttention.", false);
        s.push_back({p + "1.layer_norm.weight", {E}});
      }
      std::string f = p + (dec ? "2." : "1.");
      if (o.gated) {
        s.push_back({f + "DenseReluDense.wi_0.weight", {o.d_ff, E}});
        s.push_back({f + "DenseReluDense.wi_1.weight", {o.d_ff, E}});
      } else {
        s.push_back({f + "DenseReluDense.wi.weight", {o.d_ff, E}});
      }
      s.push_back({f + "DenseReluDense.wo.weight", {E, o.d_ff}});
      s.push_back({f + "layer_norm.weight", {E}});
    }
    s.push_back({std::string(stack) + ".final_layer_norm.weight", {E}});
  }
  if (!c.tie_word_embeddings) s.push_back({"lm_head.weight", {o.vocab, E}});
  return s;
}

class T5LM : public Seq2SeqLM {
 public:
  T5LM(ModelConfig c, std::shared_ptr<io::WeightStore> w)
      : Seq2SeqLM(std::move(c), std::move(w)), o_(options(config())) {}

  Seq2SeqDims dims() const override { return {o_.d_model, o_.decoder_layers, o_.heads, o_.d_kv}; }

  Var encode(Builder& b, const Var& ids, const Var& attention_mask) const override {
    Scope se(b, "encoder");
    Var h = embed(b, ids);
    Sym S = ids.size(1);
    Var bias = position_bias(b, "block.0.layer.0.SelfAttention", Sym(0), S, S, true);  // [1, H, S, S]
    Var pad = padding_mask(b, attention_mask);
    Var mask = pad ? F::add(bias, pad) : bias;
    for (int64_t i = 0; i < o_.layers; i++) {
      Scope sb(b, "block." + std::to_string(i));
      Var att;
      {
        Scope sl(b, "layer.0");
        Var x = rms_norm(b, *this, h, "layer_norm", o_.eps, 0.0);
        Scope sa(b, "SelfAttention");
        att = seq2seq_self_attention(b, *this, x, layout(), mask, false, Var(), Var(), nullptr, nullptr);
      }
      h = F::add(h, att);
      h = F::add(h, ff(b, h, "layer.1"));
      b.name_output(h);
    }
    return rms_norm(b, *this, h, "final_layer_norm", o_.eps, 0.0);
  }

  Var decode(Builder& b, Seq2SeqDecoderArgs& a) const override {
    Var h;
    {
      Scope sd(b, "decoder");
      h = embed(b, a.input_ids);
      Sym S = a.input_ids.size(1);
      Sym past = a.cache && (*a.cache)[0].past_self_k ? (*a.cache)[0].past_self_k.size(2) : Sym(0);
      Var bias =
          position_bias(b, "block.0.layer.0.SelfAttention", past, S, past + S, false);  // [1, H, S, past + S]
      Var enc_mask = padding_mask(b, a.encoder_attention_mask);
      for (int64_t i = 0; i < o_.decoder_layers; i++) {
        Scope sb(b, "block." + std::to_string(i));
        h = decoder_block(b, h, bias, a.encoder_hidden_states, enc_mask,
                          a.cache ? &(*a.cache)[static_cast<size_t>(i)] : nullptr);
      }
      h = rms_norm(b, *this, h, "final_layer_norm", o_.eps, 0.0);
    }
    h = keep_last(h, a.logits_to_keep);
    const bool tied = config().tie_word_embeddings;
    // T5ForConditionalGeneration scales by d_model^-0.5 where transformers 4 tied the head (tie true) and
    // transformers 5 writes scale_decoder_outputs (a v1.1 config saved by 5.x says tie true, scale false).
    const bool scale = !is_mt5(config()) && jget<bool>(config().raw, "scale_decoder_outputs", tied);
    if (scale) h = F::mul(h, std::pow(static_cast<double>(o_.d_model), -0.5));
    Scope sl(b, "lm_head");
    Var logits = matmul_weight(b, *this, h, tied ? "shared.weight" : "lm_head.weight");
    b.name_output(logits);
    return logits;
  }

 private:
  AttnLayout layout() const { return AttnLayout{o_.heads, o_.d_kv, 1.0, false, "q", "k", "v", "o"}; }

  Var embed(Builder& b, const Var& ids) const {
    Scope s(b, "embed_tokens");
    Var h = F::to(F::embedding(w(b, "shared.weight"), ids), DType::F32);
    b.name_output(h);
    return h;
  }

  // T5Attention.compute_bias for queries at positions [q0, q0 + S) and keys [0, T): [1, H, S, T].
  Var position_bias(Builder& b, const std::string& module, const Sym& q0, const Sym& S, const Sym& T,
                    bool bidi) const {
    Scope s(b, module + ".relative_attention_bias");
    Var ctx = F::unsqueeze(F::arange(b, q0, q0 + S), 1);                                   // [S, 1]
    Var mem = F::unsqueeze(F::arange(b, Sym(0), T), 0);                                    // [1, T]
    Var bucket = relative_bucket(b, F::sub(mem, ctx), bidi, o_.buckets, o_.max_distance);  // [S, T]
    Var v = F::to(F::embedding(w(b, b.scope() + ".weight"), bucket), DType::F32);          // [S, T, H]
    v = F::unsqueeze(F::permute(v, {2, 0, 1}), 0);
    b.name_output(v);
    return v;
  }

  Var ff(Builder& b, const Var& h, const std::string& layer) const {
    Scope sl(b, layer);
    Var x = rms_norm(b, *this, h, "layer_norm", o_.eps, 0.0);
    Scope sd(b, "DenseReluDense");
    Var y = o_.gated ? F::mul(activation(linear(b, *this, x, "wi_0", false), o_.act),
                              linear(b, *this, x, "wi_1", false))
                     : activation(linear(b, *this, x, "wi", false), o_.act);
    y = linear(b, *this, y, "wo", false);
    b.name_output(y);
    return y;
  }

  Var decoder_block(Builder& b, Var h, const Var& bias, const Var& enc, const Var& enc_mask,
                    Seq2SeqLayerCache* c) const {
    Var att;
    {
      Scope sl(b, "layer.0");
      Var x = rms_norm(b, *this, h, "layer_norm", o_.eps, 0.0);
      Scope sa(b, "SelfAttention");
      att = seq2seq_self_attention(b, *this, x, layout(), bias, /*causal=*/true, c ? c->past_self_k : Var(),
                                   c ? c->past_self_v : Var(), c ? &c->self_k : nullptr,
                                   c ? &c->self_v : nullptr);
    }
    h = F::add(h, att);
    {
      Scope sl(b, "layer.1");
      Var x = rms_norm(b, *this, h, "layer_norm", o_.eps, 0.0);
      Scope sa(b, "EncDecAttention");
      att = seq2seq_cross_attention(b, *this, x, enc, layout(), enc_mask, c ? c->past_cross_k : Var(),
                                    c ? c->past_cross_v : Var(), c ? &c->cross_k : nullptr,
                                    c ? &c->cross_v : nullptr);
    }
    h = F::add(h, att);
    h = F::add(h, ff(b, h, "layer.2"));
    b.name_output(h);
    return h;
  }

  T5Options o_;
};

json tiny_as(const std::string& preset, const char* model_type) {
  const bool mt5 = std::string(model_type) == "mt5";
  if (mt5 && preset != "tiny") unknown_preset(model_type, preset, "tiny");
  if (preset != "tiny" && preset != "tiny-gated") unknown_preset(model_type, preset, "tiny, tiny-gated");
  const bool gated = mt5 || preset == "tiny-gated";  // T5 v1.1 and mT5: gated-gelu, untied lm_head
  return json{{"architectures", {mt5 ? "MT5ForConditionalGeneration" : "T5ForConditionalGeneration"}},
              {"model_type", model_type},
              {"vocab_size", 512},
              {"d_model", 64},
              {"d_kv", 16},
              {"d_ff", 128},
              {"num_layers", 2},
              {"num_decoder_layers", 2},
              {"num_heads", 4},
              {"relative_attention_num_buckets", 8},
              {"relative_attention_max_distance", 20},
              {"layer_norm_epsilon", 1e-6},
              {"feed_forward_proj", gated ? "gated-gelu" : "relu"},
              {"dense_act_fn", gated ? "gelu_new" : "relu"},
              {"is_gated_act", gated},
              {"tie_word_embeddings", !gated},
              {"initializer_factor", 1.0},
              {"initializer_range", 0.1},  // create-tiny's std
              {"is_encoder_decoder", true},
              {"decoder_start_token_id", 0},
              {"use_cache", true},
              {"torch_dtype", "float32"},
              {"transformers_version", "4.47.0"}};
}

using ParseFn = ModelConfig (*)(const json&);
using TinyFn = json (*)(const std::string&);

Architecture t5_family(const char* model_type, const char* class_name, ParseFn parse, TinyFn tiny) {
  return Architecture{
      .model_type = model_type,
      .parse_config = parse,
      .weight_specs = specs,
      .create = [](ModelConfig c, std::shared_ptr<io::WeightStore> w) -> std::unique_ptr<Model> {
        return std::make_unique<T5LM>(std::move(c), std::move(w));
      },
      .tiny_config = tiny,
      .tiny_tokenizer = "t5_unigram",
      .tiny_norm_mean = 1.0,
      // Tied copies of `shared`, and the unused cross-attention bias old checkpoints (t5-small) carry, which
      // transformers ignores too (_keys_to_ignore_on_load_unexpected).
      .optional_weights =
          {R"((en|de)coder\.embed_tokens\.weight)",
           R"(decoder\.block\.0\.layer\.1\.EncDecAttention\.relative_attention_bias\.weight)"},
      .heads = {{"seq2seq_lm", class_name}},
  };
}

}  // namespace

const Architecture& t5_architecture() {
  static const Architecture a = t5_family(
      "t5", "T5ForConditionalGeneration", [](const json& j) { return parse_as(j, "t5"); },
      [](const std::string& p) { return tiny_as(p, "t5"); });
  return a;
}

const Architecture& mt5_architecture() {
  static const Architecture a = t5_family(
      "mt5", "MT5ForConditionalGeneration", [](const json& j) { return parse_as(j, "mt5"); },
      [](const std::string& p) { return tiny_as(p, "mt5"); });
  return a;
}

}  // namespace hfx::models
