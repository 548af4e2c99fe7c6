// Shared blocks of the encoder-only architectures. The BERT-family encoder follows transformers'
// BertModel / RobertaModel line by line: embeddings (word + position + token type, LayerNorm),
// post-LN layers (self-attention with an additive padding mask of finfo(f32).min, intermediate, output),
// and the heads as each *For* class computes them (dropout is the identity in eval).
#include "encoder_blocks.h"

#include <cmath>
#include <optional>

#include "hfx/core/error.h"

namespace hfx::models {

std::vector<std::pair<std::string, std::string>> encoder_heads(const std::string& p) {
  return {{kBase, p + "Model"},
          {kMaskedLM, p + "ForMaskedLM"},
          {kSeqCls, p + "ForSequenceClassification"},
          {kTokCls, p + "ForTokenClassification"}};
}

std::string encoder_head(const ModelConfig& cfg) { return head_of(architecture(cfg.model_type), cfg.raw); }

int64_t num_labels(const ModelConfig& cfg) {
  const json& j = cfg.raw;
  if (jhas(j, "id2label") && j["id2label"].is_object() && !j["id2label"].empty())
    return static_cast<int64_t>(j["id2label"].size());
  int64_t n = jget<int64_t>(j, "num_labels", 2);
  if (n <= 0) HFX_THROW("model", "expected num_labels > 0 for {}, got {}", cfg.model_type, n);
  return n;
}

// ---- EncoderModel ----

EncoderModel::EncoderModel(ModelConfig cfg, std::shared_ptr<io::WeightStore> w, bool token_types)
    : Model(std::move(cfg), std::move(w)), token_types_(token_types) {
  head_ = encoder_head(config());
}

std::string EncoderModel::output_name() const { return head_ == kBase ? "last_hidden_state" : "logits"; }

std::vector<ComponentDecl> EncoderModel::components() const {
  ComponentDecl c;
  c.name = "model";
  c.inputs = {{"input_ids", DType::I64, {"batch_size", "sequence_length"}},
              {"attention_mask", DType::I64, {"batch_size", "sequence_length"}}};
  if (token_types_)
    c.inputs.push_back({"token_type_ids", DType::I64, {"batch_size", "sequence_length"}, true});
  c.outputs = {output_name()};
  return {c};
}

NamedVars EncoderModel::call(const std::string& component, Builder& b, const NamedVars& in,
                             const CallOptions&) const {
  if (component != "model") (void)this->component(component);  // throws, listing the components
  Inputs x;
  x.input_ids = get(in, "input_ids");
  if (!x.input_ids)
    HFX_THROW("model", "expected input 'input_ids' for component 'model' of {}, got none",
              config().model_type);
  if (x.input_ids.dtype() != DType::I64 || x.input_ids.shape().size() != 2)
    HFX_THROW("model", "expected input_ids int64 [batch, sequence], got {} of rank {}",
              dtype_name(x.input_ids.dtype()), x.input_ids.shape().size());
  x.attention_mask = get(in, "attention_mask");
  // transformers' default when no mask is given: every position attends.
  if (!x.attention_mask) x.attention_mask = F::full(b, x.input_ids.shape(), 1.0, DType::I64);
  if (token_types_) x.token_type_ids = get(in, "token_type_ids");
  Var out = forward(b, x);
  return {{output_name(), out}};
}

// ---- blocks ----

Var layer_norm(Builder& b, const Model& m, const Var& x, const std::string& local, double eps, bool bias) {
  Scope s(b, local);
  std::string n = b.scope();
  Var y = F::layer_norm(x, W(b, m, n + ".weight"), bias ? W(b, m, n + ".bias") : Var(), eps);
  b.name_output(y);
  return y;
}

Var encoder_attention(const Var& q, const Var& k, const Var& v, const Var& mask, int64_t heads) {
  Sym B = q.size(0), S = q.size(1);
  const int64_t E = q.shape().back().value();
  const int64_t D = E / heads;
  auto split = [&](const Var& t) { return F::transpose(F::reshape(t, {B, S, Sym(heads), Sym(D)}), 1, 2); };
  Var o =
      F::sdpa(split(q), split(k), split(v), mask, 1.0 / std::sqrt(static_cast<double>(D)), /*causal=*/false);
  return F::reshape(F::transpose(o, 1, 2), {B, S, Sym(E)});
}

Var embedding_table(Builder& b, const Model& m, const std::string& local, const Var& idx) {
  Scope s(b, local);
  Var e = F::to(F::embedding(m.w(b, b.scope() + ".weight"), idx), DType::F32);
  b.name_output(e);
  return e;
}

Var first_token(const Var& h) { return F::squeeze(F::slice(h, 1, 0, 1), 1); }

Var masked_mean(const Var& h, const Var& mask) {
  Var m = F::unsqueeze(F::to(mask, DType::F32), -1);  // [B, S, 1]
  return F::div(F::sum(F::mul(h, m), {1}), F::sum(m, {1}));
}

// ---- BERT family ----

ModelConfig parse_bert_family(const json& j, const std::string& model_type, const ConfigDefaults& d) {
  ModelConfig c = parse_common(j, model_type, d);
  std::string pos = jget<std::string>(j, "position_embedding_type", "absolute");
  if (pos != "absolute")
    HFX_THROW("model",
              "expected position_embedding_type 'absolute' for {} (relative_key variants are not supported), "
              "got '{}'",
              model_type, pos);
  if (jget<bool>(j, "is_decoder", false) || jget<bool>(j, "add_cross_attention", false))
    HFX_THROW("model",
              "expected an encoder {} (is_decoder and add_cross_attention false), got a decoder config",
              model_type);
  if (int64_t t = jget<int64_t>(j, "type_vocab_size", 2); t <= 0)
    HFX_THROW("model", "expected type_vocab_size > 0 for {}, got {}", model_type, t);
  check_activation(jget<std::string>(j, "hidden_act", "gelu"), model_type);
  return c;
}

void check_activation(const std::string& name, const std::string& model_type) {
  static const char* kKnown[] = {
      "gelu", "relu",     "silu", "swish", "gelu_new", "gelu_pytorch_tanh", "gelu_fast", "gelu_python_tanh",
      "tanh", "gelu_ggml"};  // gelu_ggml: a GGUF file read back (llama.cpp's GELU)
  for (const char* k : kKnown)
    if (name == k) return;
  HFX_THROW("model",
            "expected a supported activation for {} (gelu, relu, silu, gelu_new, gelu_pytorch_tanh, tanh), "
            "got '{}'",
            model_type, name);
}

int64_t position_offset(const ModelConfig& c, const BertFamilyOptions& o) {
  return o.roberta ? c.pad_token_id.value_or(1) + 1 : 0;
}

int64_t embedding_size(const ModelConfig& c, const BertFamilyOptions& o) {
  return o.electra ? jget<int64_t>(c.raw, "embedding_size", 128) : c.hidden_size;
}

WeightSpecs bert_family_weight_specs(const ModelConfig& c, const BertFamilyOptions& o) {
  const int64_t E = c.hidden_size, I = c.intermediate_size, Em = embedding_size(c, o);
  const std::string head = encoder_head(c);
  const std::string p = head == kBase ? "" : o.prefix + ".";
  WeightSpecs s{
      {p + "embeddings.word_embeddings.weight", {c.vocab_size, Em}},
      {p + "embeddings.position_embeddings.weight", {c.max_position_embeddings + position_offset(c, o), Em}},
      {p + "embeddings.token_type_embeddings.weight", {jget<int64_t>(c.raw, "type_vocab_size", 2), Em}},
      {p + "embeddings.LayerNorm.weight", {Em}},
      {p + "embeddings.LayerNorm.bias", {Em}}};
  if (Em != E) {
    s.push_back({p + "embeddings_project.weight", {E, Em}});
    s.push_back({p + "embeddings_project.bias", {E}});
  }
  if (o.task_types)
    s.push_back(
        {p + "embeddings.task_type_embeddings.weight", {jget<int64_t>(c.raw, "task_type_vocab_size", 3), E}});
  auto lin = [&](const std::string& n, int64_t out, int64_t in) {
    s.push_back({n + ".weight", {out, in}});
    s.push_back({n + ".bias", {out}});
  };
  auto ln = [&](const std::string& n) {
    s.push_back({n + ".weight", {E}});
    s.push_back({n + ".bias", {E}});
  };
  for (int64_t i = 0; i < c.num_hidden_layers; i++) {
    std::string l = p + "encoder.layer." + std::to_string(i) + ".";
    lin(l + "attention.self.query", E, E);
    lin(l + "attention.self.key", E, E);
    lin(l + "attention.self.value", E, E);
    lin(l + "attention.output.dense", E, E);
    ln(l + (o.pre_ln ? "attention.LayerNorm" : "attention.output.LayerNorm"));
    lin(l + "intermediate.dense", I, E);
    lin(l + "output.dense", E, I);
    ln(l + (o.pre_ln ? "intermediate.LayerNorm" : "output.LayerNorm"));
  }
  if (o.pre_ln) ln(p + "LayerNorm");
  // BertModel/RobertaModel keep their pooler (add_pooling_layer=True); of the head classes only
  // BertForSequenceClassification uses it (RoBERTa's heads are built with add_pooling_layer=False).
  if (o.electra) {  // no pooler; ElectraGeneratorPredictions / ElectraClassificationHead
    if (head == kMaskedLM) {
      lin("generator_predictions.dense", Em, E);
      s.push_back({"generator_predictions.LayerNorm.weight", {Em}});
      s.push_back({"generator_predictions.LayerNorm.bias", {Em}});
      s.push_back({"generator_lm_head.bias", {c.vocab_size}});
      if (!c.tie_word_embeddings) s.push_back({"generator_lm_head.weight", {c.vocab_size, Em}});
    } else if (head == kSeqCls) {
      lin("classifier.dense", E, E);
      lin("classifier.out_proj", num_labels(c), E);
    } else if (head == kTokCls) {
      lin("classifier", num_labels(c), E);
    }
    return s;
  }
  if (head == kBase || (head == kSeqCls && !o.roberta)) lin(p + "pooler.dense", E, E);
  if (head == kMaskedLM) {
    std::string h = o.roberta ? "lm_head" : "cls.predictions";
    lin(o.roberta ? h + ".dense" : h + ".transform.dense", E, E);
    ln(o.roberta ? h + ".layer_norm" : h + ".transform.LayerNorm");
    s.push_back({h + ".bias", {c.vocab_size}});
    if (!c.tie_word_embeddings) s.push_back({h + ".decoder.weight", {c.vocab_size, E}});
  } else if (head == kSeqCls && o.roberta) {
    lin("classifier.dense", E, E);
    lin("classifier.out_proj", num_labels(c), E);
  } else if (head == kSeqCls || head == kTokCls) {
    lin("classifier", num_labels(c), E);
  }
  return s;
}

std::vector<std::string> bert_family_optional_weights(const std::string& prefix) {
  // save_pretrained drops tied copies, older checkpoints keep them; NSP heads and poolers come with
  // pre-training checkpoints (bert-base-uncased is a BertForMaskedLM with both).
  return {"(" + prefix + R"(\.)?pooler\.dense\.(weight|bias))",
          "(" + prefix + R"(\.)?embeddings\.position_ids)",
          R"(cls\.seq_relationship\.(weight|bias))",
          R"(cls\.predictions\.decoder\.(weight|bias))",
          R"(lm_head\.decoder\.(weight|bias))",
          R"(generator_lm_head\.weight)"};
}

Var BertFamilyEncoder::position_ids(Builder& b, const Var& ids) const {
  Sym S = ids.size(1);
  if (!o_.roberta) return F::unsqueeze(F::arange(b, 0, S), 0);  // [1, S]: the position_ids buffer
  // RoBERTa: create_position_ids_from_input_ids = cumsum(ids != pad) * (ids != pad) + pad.
  const int64_t pad = config().pad_token_id.value_or(1);
  Var real =
      F::to(F::logical_not(F::eq(ids, b.constant(Tensor::scalar(static_cast<double>(pad), DType::I64)))),
            DType::I64);
  Var pos = F::mul(F::cumsum(real, 1), real);
  return F::add(pos, b.constant(Tensor::scalar(static_cast<double>(pad), DType::I64)));
}

Var BertFamilyEncoder::embeddings(Builder& b, const Inputs& in) const {
  Scope se(b, "embeddings");
  auto table = [&](const char* local, const Var& idx) { return embedding_table(b, *this, local, idx); };
  Var h = table("word_embeddings", in.input_ids);
  if (in.token_type_ids) {
    h = F::add(h, table("token_type_embeddings", in.token_type_ids));
  } else {
    // The token_type_ids buffer (zeros): row 0 of the table, broadcast over [B, S].
    Scope s(b, "token_type_embeddings");
    h = F::add(h, F::slice(W(b, *this, b.scope() + ".weight"), 0, 0, 1));
  }
  h = F::add(h, table("position_embeddings", position_ids(b, in.input_ids)));
  if (o_.task_types) {
    Scope s(b, "task_type_embeddings");  // the task_type_ids default (zeros): row 0
    h = F::add(h, F::slice(W(b, *this, b.scope() + ".weight"), 0, 0, 1));
  }
  h = layer_norm(b, *this, h, "LayerNorm", config().norm_eps);
  b.name_output(h);
  return h;
}

// ElectraForMaskedLM: generator_predictions (dense → gelu → LayerNorm to embedding_size) → generator_lm_head
// (tied to the word embeddings, its own bias); ElectraClassificationHead: first token → dense → gelu →
// out_proj.
Var BertFamilyEncoder::electra_head(Builder& b, const Var& h) const {
  const auto& c = config();
  if (head() == kMaskedLM) {
    Var x;
    {
      Scope s(b, "generator_predictions");
      x = F::gelu(linear(b, *this, h, "dense", true));
      x = layer_norm(b, *this, x, "LayerNorm", c.norm_eps);
      b.name_output(x);
    }
    Scope s(b, "generator_lm_head");
    Var y = F::linear(x,
                      W(b, *this,
                        c.tie_word_embeddings ? o_.prefix + ".embeddings.word_embeddings.weight"
                                              : "generator_lm_head.weight"),
                      W(b, *this, "generator_lm_head.bias"));
    b.name_output(y);
    return y;
  }
  if (head() == kTokCls) return linear(b, *this, h, "classifier", true);
  Scope s(b, "classifier");
  Var x = F::gelu(linear(b, *this, first_token(h), "dense", true));
  Var y = linear(b, *this, x, "out_proj", true);
  b.name_output(y);
  return y;
}

Var BertFamilyEncoder::layer(Builder& b, const Var& h, const Var& mask, int64_t) const {
  const auto& c = config();
  const std::string act = jget<std::string>(c.raw, "hidden_act", "gelu");
  // Post-LN (BERT): LayerNorm(dense(x) + residual) in attention.output and output. Pre-LN
  // (RoBERTa-PreLayerNorm): attention.LayerNorm / intermediate.LayerNorm first, then dense(x) + residual.
  auto residual = [&](const Var& x, const Var& res) {
    Var y = F::add(linear(b, *this, x, "dense", true), res);
    return o_.pre_ln ? y : layer_norm(b, *this, y, "LayerNorm", c.norm_eps);
  };
  Var a;
  {
    Scope sa(b, "attention");
    Var x = o_.pre_ln ? layer_norm(b, *this, h, "LayerNorm", c.norm_eps) : h;
    Var ctx;
    {
      Scope ss(b, "self");
      ctx = encoder_attention(linear(b, *this, x, "query", true), linear(b, *this, x, "key", true),
                              linear(b, *this, x, "value", true), mask, c.num_attention_heads);
      b.name_output(ctx);
    }
    Scope so(b, "output");
    a = residual(ctx, h);
    b.name_output(a);
  }
  Var i;
  {
    Scope si(b, "intermediate");
    Var x = o_.pre_ln ? layer_norm(b, *this, a, "LayerNorm", c.norm_eps) : a;
    i = activation(linear(b, *this, x, "dense", true), act);
    b.name_output(i);
  }
  Scope so(b, "output");
  Var o = residual(i, a);
  b.name_output(o);
  return o;
}

Var BertFamilyEncoder::mlm_head(Builder& b, const Var& h) const {
  const auto& c = config();
  const std::string tied = o_.prefix + ".embeddings.word_embeddings.weight";
  if (o_.roberta) {
    // RobertaLMHead: dense → gelu (always the erf gelu) → layer_norm → decoder (+ lm_head.bias).
    Scope s(b, "lm_head");
    Var x = F::gelu(linear(b, *this, h, "dense", true));
    x = layer_norm(b, *this, x, "layer_norm", c.norm_eps);
    Scope sd(b, "decoder");
    Var y = F::linear(x, W(b, *this, c.tie_word_embeddings ? tied : "lm_head.decoder.weight"),
                      W(b, *this, "lm_head.bias"));
    b.name_output(y);
    return y;
  }
  // BertOnlyMLMHead: cls.predictions.transform (dense → hidden_act → LayerNorm) → decoder (+ bias).
  Scope s(b, "cls");
  Scope sp(b, "predictions");
  Var x;
  {
    Scope st(b, "transform");
    x = activation(linear(b, *this, h, "dense", true), jget<std::string>(c.raw, "hidden_act", "gelu"));
    x = layer_norm(b, *this, x, "LayerNorm", c.norm_eps);
    b.name_output(x);
  }
  Scope sd(b, "decoder");
  Var y = F::linear(x, W(b, *this, c.tie_word_embeddings ? tied : "cls.predictions.decoder.weight"),
                    W(b, *this, "cls.predictions.bias"));
  b.name_output(y);
  return y;
}

Var BertFamilyEncoder::seq_cls_head(Builder& b, const Var& h) const {
  Var x = first_token(h);
  if (o_.roberta) {
    // RobertaClassificationHead: features[:, 0] → dense → tanh → out_proj.
    Scope s(b, "classifier");
    x = F::tanh(linear(b, *this, x, "dense", true));
    Var y = linear(b, *this, x, "out_proj", true);
    b.name_output(y);
    return y;
  }
  {
    // BertPooler: dense → tanh on the first token.
    Scope sb(b, o_.prefix);
    Scope sp(b, "pooler");
    x = F::tanh(linear(b, *this, x, "dense", true));
    b.name_output(x);
  }
  return linear(b, *this, x, "classifier", true);
}

Var BertFamilyEncoder::forward(Builder& b, const Inputs& in) const {
  const auto& c = config();
  const std::string scope = base_scope(o_.prefix);
  Var h;
  {
    std::optional<Scope> sb;
    if (!scope.empty()) sb.emplace(b, scope);
    h = embeddings(b, in);
    if (embedding_size(c, o_) != c.hidden_size) h = linear(b, *this, h, "embeddings_project", true);
    Var mask = padding_mask(b, in.attention_mask);
    {
      Scope se(b, "encoder");
      for (int64_t i = 0; i < c.num_hidden_layers; i++) {
        Scope sl(b, "layer." + std::to_string(i));
        h = layer(b, h, mask, i);
      }
    }
    if (o_.pre_ln) h = layer_norm(b, *this, h, "LayerNorm", c.norm_eps);
  }
  if (head() == kBase) return h;
  if (o_.electra) return electra_head(b, h);
  if (head() == kMaskedLM) return mlm_head(b, h);
  if (head() == kSeqCls) return seq_cls_head(b, h);
  return linear(b, *this, h, "classifier", true);
}

json tiny_encoder_config(const char* model_type, int64_t vocab_size) {
  return json{{"model_type", model_type},
              {"vocab_size", vocab_size},
              {"hidden_size", 64},
              {"intermediate_size", 128},
              {"num_hidden_layers", 2},
              {"num_attention_heads", 4},
              {"max_position_embeddings", 128},
              {"initializer_range", 0.1},  // create-tiny's std: larger than
                                           // HF's 0.02 so attention matters
              {"torch_dtype", "float32"},
              {"transformers_version", "4.47.0"}};
}

}  // namespace hfx::models
