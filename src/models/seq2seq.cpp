// Shared encoder-decoder pieces: the two components and their cache leaves, attention with self and
// cross caches, and the BART-family stacks following BartEncoderLayer / BartDecoderLayer line by line
// (post-LN or pre-LN residual blocks, q scaled by head_dim^-0.5, lm_head + final_logits_bias).
#include "seq2seq.h"

#include <cmath>

#include <fmt/format.h>

#include "hfx/core/error.h"

namespace hfx::models {

std::vector<ComponentDecl> Seq2SeqLM::components() const {
  const Seq2SeqDims d = dims();
  ComponentDecl enc;
  enc.name = "encoder";
  enc.inputs = {{"input_ids", DType::I64, {"batch_size", "encoder_sequence_length"}},
                {"attention_mask", DType::I64, {"batch_size", "encoder_sequence_length"}}};
  enc.outputs = {"last_hidden_state"};
  ComponentDecl dec;
  dec.name = "decoder";
  dec.inputs = {{"input_ids", DType::I64, {"batch_size", "decoder_sequence_length"}},
                {"encoder_attention_mask", DType::I64, {"batch_size", "encoder_sequence_length"}},
                {"encoder_hidden_states",
                 DType::F32,
                 {"batch_size", "encoder_sequence_length", std::to_string(d.d_model)}}};
  dec.outputs = {"logits"};
  const std::string H = std::to_string(d.heads), D = std::to_string(d.head_dim);
  for (int64_t i = 0; i < d.decoder_layers; i++) {
    for (const char* side : {"decoder", "encoder"}) {
      const bool self = std::string(side) == "decoder";
      for (const char* kv : {"key", "value"}) {
        std::string kind = fmt::format("{}.{}", side, kv);
        std::string past = fmt::format("past_key_values.{}.{}", i, kind),
                    present = fmt::format("present.{}.{}", i, kind);
        dec.inputs.push_back(
            {past,
             DType::F32,
             {"batch_size", H, self ? "past_decoder_sequence_length" : "past_encoder_sequence_length", D},
             true});
        dec.outputs.push_back(present);
        dec.cache.push_back(
            {static_cast<int>(i), kind, self ? "full_attention" : "cross_attention", 0, past, present});
      }
    }
  }
  return {enc, dec};
}

NamedVars Seq2SeqLM::call(const std::string& component, Builder& b, const NamedVars& in,
                          const CallOptions& opts) const {
  auto need = [&](const char* name) {
    Var v = get(in, name);
    if (!v)
      HFX_THROW("model", "expected input '{}' for component '{}' of {}, got none", name, component,
                config().model_type);
    return v;
  };
  if (component == "encoder")
    return {{"last_hidden_state", encode(b, need("input_ids"), get(in, "attention_mask"))}};
  if (component != "decoder") (void)this->component(component);  // throws, listing the components
  Seq2SeqDecoderArgs a;
  a.input_ids = need("input_ids");
  a.encoder_hidden_states = need("encoder_hidden_states");
  a.encoder_attention_mask = get(in, "encoder_attention_mask");
  a.logits_to_keep = opts.logits_to_keep;
  const int64_t L = dims().decoder_layers;
  std::vector<Seq2SeqLayerCache> cache(static_cast<size_t>(L));
  if (opts.use_cache) {
    a.cache = &cache;
    for (int64_t i = 0; i < L; i++) {
      auto past = [&](const char* kind) { return get(in, fmt::format("past_key_values.{}.{}", i, kind)); };
      Seq2SeqLayerCache& c = cache[static_cast<size_t>(i)];
      c.past_self_k = past("decoder.key");
      c.past_self_v = past("decoder.value");
      c.past_cross_k = past("encoder.key");
      c.past_cross_v = past("encoder.value");
    }
  }
  NamedVars r{{"logits", decode(b, a)}};
  if (!opts.use_cache) return r;
  for (int64_t i = 0; i < L; i++) {
    const Seq2SeqLayerCache& c = cache[static_cast<size_t>(i)];
    if (!c.self_k || !c.self_v || !c.cross_k || !c.cross_v)
      HFX_THROW("model", "expected the decoder of {} to fill cache layer {}, got no key/value",
                config().model_type, i);
    r.emplace_back(fmt::format("present.{}.decoder.key", i), c.self_k);
    r.emplace_back(fmt::format("present.{}.decoder.value", i), c.self_v);
    r.emplace_back(fmt::format("present.{}.encoder.key", i), c.cross_k);
    r.emplace_back(fmt::format("present.{}.encoder.value", i), c.cross_v);
  }
  return r;
}

namespace {

// [B, S, H*D] → [B, H, S, D]
Var split_heads(const Var& x, int64_t H, int64_t D) {
  return F::transpose(F::reshape(x, {x.size(0), x.size(1), Sym(H), Sym(D)}), 1, 2);
}

Var attend(Builder& b, const Model& m, const Var& q, const Var& k, const Var& v, const AttnLayout& a,
           const Var& mask, bool causal) {
  Var o = F::sdpa(q, k, v, mask, a.scale, causal);
  o = F::transpose(o, 1, 2);
  o = F::reshape(o, {o.size(0), o.size(1), Sym(a.heads * a.head_dim)});
  o = linear(b, m, o, a.o, a.bias);
  b.name_output(o);
  return o;
}

}  // namespace

Var seq2seq_self_attention(Builder& b, const Model& m, const Var& x, const AttnLayout& a, const Var& mask,
                           bool causal, const Var& past_k, const Var& past_v, Var* present_k,
                           Var* present_v) {
  Var q = split_heads(linear(b, m, x, a.q, a.bias), a.heads, a.head_dim);
  Var k = split_heads(linear(b, m, x, a.k, a.bias && a.k_bias), a.heads, a.head_dim);
  Var v = split_heads(linear(b, m, x, a.v, a.bias), a.heads, a.head_dim);
  if (past_k && past_v) {
    k = F::cat({past_k, k}, 2);
    v = F::cat({past_v, v}, 2);
  }
  if (present_k) *present_k = k;
  if (present_v) *present_v = v;
  return attend(b, m, q, k, v, a, mask, causal);
}

Var seq2seq_cross_attention(Builder& b, const Model& m, const Var& x, const Var& enc, const AttnLayout& a,
                            const Var& mask, const Var& past_k, const Var& past_v, Var* present_k,
                            Var* present_v) {
  Var q = split_heads(linear(b, m, x, a.q, a.bias), a.heads, a.head_dim);
  // Only the encoder positions the past does not hold yet are projected: all of them in a first call
  // (empty or absent past), none in a cached step.
  Var rest = past_k ? F::slice(enc, 1, past_k.size(2), enc.size(1)) : enc;
  Var k = split_heads(linear(b, m, rest, a.k, a.bias && a.k_bias), a.heads, a.head_dim);
  Var v = split_heads(linear(b, m, rest, a.v, a.bias), a.heads, a.head_dim);
  if (past_k && past_v) {
    k = F::cat({past_k, k}, 2);
    v = F::cat({past_v, v}, 2);
  }
  if (present_k) *present_k = k;
  if (present_v) *present_v = v;
  return attend(b, m, q, k, v, a, mask, /*causal=*/false);
}

Var layer_norm(Builder& b, const Model& m, const Var& x, const std::string& local, double eps) {
  Scope s(b, local);
  std::string n = b.scope();
  Var y = F::layer_norm(x, W(b, m, n + ".weight"), W(b, m, n + ".bias"), eps);
  b.name_output(y);
  return y;
}

// ---- BART family ----

BartOptions bart_options(const ModelConfig& c, BartOptions o) {
  const json& j = c.raw;
  o.d_model = c.hidden_size;
  o.encoder_layers = jget<int64_t>(j, "encoder_layers", 12);
  o.decoder_layers = jget<int64_t>(j, "decoder_layers", 12);
  o.encoder_heads = jget<int64_t>(j, "encoder_attention_heads", 16);
  o.decoder_heads = jget<int64_t>(j, "decoder_attention_heads", 16);
  o.encoder_ffn = jget<int64_t>(j, "encoder_ffn_dim", 4096);
  o.decoder_ffn = jget<int64_t>(j, "decoder_ffn_dim", 4096);
  o.max_positions = c.max_position_embeddings;
  o.vocab = c.vocab_size;
  o.pad = c.pad_token_id.value_or(1);
  o.act = jget<std::string>(j, "activation_function", o.act);
  o.scale_embedding = jget<bool>(j, "scale_embedding", o.scale_embedding);
  if (o.positions == BartPositions::fairseq) o.position_offset = o.pad + 1;
  for (int64_t h : {o.encoder_heads, o.decoder_heads})
    if (h <= 0 || o.d_model % h)
      HFX_THROW("model", "expected d_model ({}) to be a multiple of the attention heads, got {}", o.d_model,
                h);
  if (o.encoder_layers <= 0 || o.decoder_layers <= 0)
    HFX_THROW("model", "expected encoder_layers and decoder_layers > 0, got {} and {}", o.encoder_layers,
              o.decoder_layers);
  if (o.positions == BartPositions::fairseq && (o.pad < 0 || o.d_model < 4))
    HFX_THROW("model", "expected pad_token_id >= 0 and d_model >= 4 for sinusoidal positions, got {} and {}",
              o.pad, o.d_model);
  return o;
}

ModelConfig parse_bart_family(const json& j, const std::string& model_type, const ConfigDefaults& d) {
  if (!j.is_object()) HFX_THROW("model", "expected config.json to be an object, got {}", j.type_name());
  json m = j;
  m["hidden_size"] = jget<int64_t>(j, "d_model", 1024);
  m["num_hidden_layers"] = jget<int64_t>(j, "decoder_layers", 12);
  m["num_attention_heads"] = jget<int64_t>(j, "decoder_attention_heads", 16);
  m["num_key_value_heads"] = m["num_attention_heads"];
  m["intermediate_size"] = jget<int64_t>(j, "decoder_ffn_dim", 4096);
  m.erase("head_dim");
  ModelConfig c = parse_common(m, model_type, d);
  c.raw = j;
  if (jhas(j, "decoder_vocab_size") && jget<int64_t>(j, "decoder_vocab_size", 0) != c.vocab_size)
    HFX_THROW("model", "expected decoder_vocab_size equal to vocab_size ({}; shared embeddings), got {}",
              c.vocab_size, j["decoder_vocab_size"].dump());
  return c;
}

WeightSpecs bart_weight_specs(const BartOptions& o, bool tied) {
  const int64_t E = o.d_model;
  WeightSpecs s{{"model.shared.weight", {o.vocab, E}}};
  auto attn = [&](const std::string& p) {
    for (const char* n : {"k_proj", "v_proj", "q_proj", "out_proj"}) {
      s.push_back({p + n + ".weight", {E, E}});
      s.push_back({p + n + ".bias", {E}});
    }
  };
  auto norm = [&](const std::string& p) {
    s.push_back({p + ".weight", {E}});
    s.push_back({p + ".bias", {E}});
  };
  for (const char* stack : {"encoder", "decoder"}) {
    const bool dec = std::string(stack) == "decoder";
    const std::string p = std::string("model.") + stack + ".";
    if (o.positions == BartPositions::learned)
      s.push_back({p + "embed_positions.weight", {o.max_positions + o.position_offset, E}});
    const int64_t layers = dec ? o.decoder_layers : o.encoder_layers, F = dec ? o.decoder_ffn : o.encoder_ffn;
    for (int64_t i = 0; i < layers; i++) {
      std::string l = p + "layers." + std::to_string(i) + ".";
      attn(l + "self_attn.");
      norm(l + "self_attn_layer_norm");
      if (dec) {
        attn(l + "encoder_attn.");
        norm(l + "encoder_attn_layer_norm");
      }
      s.push_back({l + "fc1.weight", {F, E}});
      s.push_back({l + "fc1.bias", {F}});
      s.push_back({l + "fc2.weight", {E, F}});
      s.push_back({l + "fc2.bias", {E}});
      norm(l + "final_layer_norm");
    }
    if (o.embed_norm != BartEmbedNorm::none) norm(p + "layernorm_embedding");
    if (o.pre_norm) norm(p + "layer_norm");
  }
  if (o.final_logits_bias) s.push_back({"final_logits_bias", {1, o.vocab}});
  if (!tied) s.push_back({"lm_head.weight", {o.vocab, E}});
  return s;
}

namespace {
// MarianSinusoidalPositionalEmbedding's table, computed as transformers does (float64, then float32):
// row pos, column j < dim/2: sin(pos / 10000^(2j/dim)); column dim/2 + j: cos of the same.
Tensor sinusoidal_table(int64_t n, int64_t dim) {
  Tensor t = Tensor::empty({n, dim}, DType::F32);
  float* p = t.data<float>();
  const int64_t half = dim / 2 + dim % 2;
  for (int64_t pos = 0; pos < n; pos++)
    for (int64_t j = 0; j < dim; j++) {
      double angle = static_cast<double>(pos) /
                     std::pow(10000.0, 2.0 * static_cast<double>(j / 2) / static_cast<double>(dim));
      if (j % 2 == 0)
        p[pos * dim + j / 2] = static_cast<float>(std::sin(angle));
      else
        p[pos * dim + half + j / 2] = static_cast<float>(std::cos(angle));
    }
  return t;
}

}  // namespace

Var BartFamilyLM::positions(Builder& b, const std::string& stack, const Var& ids, const Sym& past) const {
  Sym S = ids.size(1);
  // Every position table has max_position_embeddings rows (past the offset). When tracing, the ranges
  // may not tell, so this records a guard that export turns into a runtime check (as gpt2 does).
  if (!b.env().le(past + S, Sym(o_.max_positions)))
    HFX_THROW(config().model_type, "expected past + sequence <= max_position_embeddings = {}, got {}",
              o_.max_positions, b.env().hint(past + S));
  Scope s(b, "embed_positions");
  Var pos, table;
  if (o_.positions == BartPositions::fairseq) {
    // Pads keep position `pad` (a zero row); the others count the non-pad tokens, after the past.
    Var pad = b.constant(Tensor::scalar(static_cast<double>(o_.pad), DType::I64));
    Var real = F::to(F::logical_not(F::eq(ids, pad)), DType::I64);
    Var count = F::add(F::cumsum(real, 1), F::arange(b, past, past + Sym(1)));  // + [past]
    pos = F::add(F::mul(count, real), pad);                                     // [B, S]
    table = b.constant(fairseq_sinusoidal_table(o_.max_positions + o_.position_offset, o_.d_model, o_.pad));
  } else {
    pos = F::arange(b, past + Sym(o_.position_offset), past + S + Sym(o_.position_offset));  // [S]
    table = w_opt(b, "model." + stack + ".embed_positions.weight");  // sinusoidal: may be in the checkpoint
    if (!table && o_.positions == BartPositions::learned)
      table = w(b, "model." + stack + ".embed_positions.weight");
    if (!table) table = b.constant(sinusoidal_table(o_.max_positions, o_.d_model));
  }
  Var pe = F::to(F::embedding(table, pos), DType::F32);  // [S, E] broadcast over the batch, or [B, S, E]
  b.name_output(pe);
  return pe;
}

Var BartFamilyLM::embed(Builder& b, const std::string& stack, const Var& ids, const Sym& past) const {
  // BlenderbotSmall's decoder normalizes the tokens before adding positions, and never scales them.
  const bool norm_first = o_.embed_norm == BartEmbedNorm::decoder_before_positions && stack == "decoder";
  Var h;
  {
    Scope s(b, "embed_tokens");
    h = F::to(F::embedding(w(b, "model.shared.weight"), ids), DType::F32);
    if (o_.scale_embedding && !norm_first) h = F::mul(h, std::sqrt(static_cast<double>(o_.d_model)));
    b.name_output(h);
  }
  if (norm_first) h = layer_norm(b, *this, h, "layernorm_embedding", 1e-5);
  h = F::add(h, positions(b, stack, ids, past));
  if (o_.embed_norm != BartEmbedNorm::none && !norm_first)
    h = layer_norm(b, *this, h, "layernorm_embedding", 1e-5);
  return h;
}

Var BartFamilyLM::sublayer(Builder& b, const Var& x, const std::string& norm,
                           const std::function<Var(const Var&)>& f) const {
  if (!o_.pre_norm) return layer_norm(b, *this, F::add(x, f(x)), norm, 1e-5);
  return F::add(x, f(layer_norm(b, *this, x, norm, 1e-5)));
}

Var BartFamilyLM::ffn(Builder& b, const Var& x) const {
  Var y = activation(linear(b, *this, x, "fc1", true), o_.act);
  return linear(b, *this, y, "fc2", true);
}

Var BartFamilyLM::encoder_layer(Builder& b, const Var& h, const Var& mask) const {
  AttnLayout a{o_.encoder_heads, o_.d_model / o_.encoder_heads, 0.0, true, "q_proj", "k_proj", "v_proj",
               "out_proj"};
  a.scale = 1.0 / std::sqrt(static_cast<double>(a.head_dim));
  Var x = sublayer(b, h, "self_attn_layer_norm", [&](const Var& in) {
    Scope s(b, "self_attn");
    return seq2seq_self_attention(b, *this, in, a, mask, false, Var(), Var(), nullptr, nullptr);
  });
  x = sublayer(b, x, "final_layer_norm", [&](const Var& in) { return ffn(b, in); });
  b.name_output(x);
  return x;
}

Var BartFamilyLM::decoder_layer(Builder& b, const Var& h, const Var& enc, const Var& enc_mask,
                                Seq2SeqLayerCache* c) const {
  AttnLayout a{o_.decoder_heads, o_.d_model / o_.decoder_heads, 0.0, true, "q_proj", "k_proj", "v_proj",
               "out_proj"};
  a.scale = 1.0 / std::sqrt(static_cast<double>(a.head_dim));
  Var x = sublayer(b, h, "self_attn_layer_norm", [&](const Var& in) {
    Scope s(b, "self_attn");
    return seq2seq_self_attention(b, *this, in, a, Var(), /*causal=*/true, c ? c->past_self_k : Var(),
                                  c ? c->past_self_v : Var(), c ? &c->self_k : nullptr,
                                  c ? &c->self_v : nullptr);
  });
  x = sublayer(b, x, "encoder_attn_layer_norm", [&](const Var& in) {
    Scope s(b, "encoder_attn");
    return seq2seq_cross_attention(b, *this, in, enc, a, enc_mask, c ? c->past_cross_k : Var(),
                                   c ? c->past_cross_v : Var(), c ? &c->cross_k : nullptr,
                                   c ? &c->cross_v : nullptr);
  });
  x = sublayer(b, x, "final_layer_norm", [&](const Var& in) { return ffn(b, in); });
  b.name_output(x);
  return x;
}

Var BartFamilyLM::encode(Builder& b, const Var& ids, const Var& attention_mask) const {
  Scope sm(b, "model.encoder");
  Var h = embed(b, "encoder", ids, Sym(0));
  Var mask = padding_mask(b, attention_mask);
  for (int64_t i = 0; i < o_.encoder_layers; i++) {
    Scope sl(b, "layers." + std::to_string(i));
    h = encoder_layer(b, h, mask);
  }
  if (o_.pre_norm) h = layer_norm(b, *this, h, "layer_norm", 1e-5);
  return h;
}

Var BartFamilyLM::decode(Builder& b, Seq2SeqDecoderArgs& a) const {
  Var h;
  {
    Scope sm(b, "model.decoder");
    Sym past = a.cache && (*a.cache)[0].past_self_k ? (*a.cache)[0].past_self_k.size(2) : Sym(0);
    h = embed(b, "decoder", a.input_ids, past);
    Var enc_mask = padding_mask(b, a.encoder_attention_mask);
    for (int64_t i = 0; i < o_.decoder_layers; i++) {
      Scope sl(b, "layers." + std::to_string(i));
      h = decoder_layer(b, h, a.encoder_hidden_states, enc_mask,
                        a.cache ? &(*a.cache)[static_cast<size_t>(i)] : nullptr);
    }
    if (o_.pre_norm) h = layer_norm(b, *this, h, "layer_norm", 1e-5);
  }
  h = keep_last(h, a.logits_to_keep);
  Var logits;
  {
    Scope sl(b, "lm_head");
    logits =
        matmul_weight(b, *this, h, config().tie_word_embeddings ? "model.shared.weight" : "lm_head.weight");
    b.name_output(logits);
  }
  if (o_.final_logits_bias) logits = F::add(logits, W(b, *this, "final_logits_bias"));
  b.name_output(logits, "logits");
  return logits;
}

}  // namespace hfx::models
