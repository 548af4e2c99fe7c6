// llama.cpp's bert arch (an embedding model), as convert_hf_to_gguf.py's BertModel, DistilBertModel,
// RobertaModel and XLMRobertaModel write it (CamemBERT is RoBERTa's modeling code): the base model's modules
// (the masked-LM form's `bert.` / `distilbert.` / `roberta.` scope, its MLM head left out as the converter
// leaves it), non-causal attention, and the sentence-transformers pooling as `bert.pooling_type`.
#include <filesystem>

#include "export/gguf/gguf_archs.h"
#include "hfx/core/error.h"
#include "hfx/models/sentence_transformers.h"

namespace hfx::gguf {

namespace {

// llama.cpp's bert graph runs ggml_gelu (the tanh GELU, from ggml's f16 table) whatever hidden_act says: the
// GELUs are what it can run (the exact one approximated, as the converter's files are).
void check_bert(const Model& m, const ModelConfig& c) {
  HFX_CHECK(
      m.head() == "base" || m.head() == "masked_lm", "gguf",
      "expected the base model or its masked-LM form for llama.cpp's bert arch (an embedding model), got the "
      "{} head; export the base model",
      m.head());
  const std::string act =
      c.raw.value(c.model_type == "distilbert" ? "activation" : "hidden_act", std::string("gelu"));
  HFX_CHECK(act == "gelu" || act == "gelu_new" || act == "gelu_pytorch_tanh" || act == "gelu_fast" ||
                act == "gelu_python_tanh",
            "gguf",
            "expected a GELU hidden_act for llama.cpp's bert arch (its graph runs ggml_gelu), got '{}'", act);
  HFX_CHECK(c.raw.value("position_embedding_type", std::string("absolute")) == "absolute", "gguf",
            "expected absolute positions for llama.cpp's bert arch, got position_embedding_type '{}'",
            c.raw.value("position_embedding_type", std::string()));
}

// DistilBERT: no token types, its own module names.
void add_distilbert(Out& o, const ModelConfig& c) {
  const std::string p = o.W.has("embeddings.word_embeddings.weight") ? "" : "distilbert.";
  o.copy("token_embd.weight", p + "embeddings.word_embeddings.weight");
  o.copy("position_embd.weight", p + "embeddings.position_embeddings.weight");
  o.copy("token_embd_norm.weight", p + "embeddings.LayerNorm.weight");
  o.copy("token_embd_norm.bias", p + "embeddings.LayerNorm.bias");
  for (int64_t i = 0; i < c.num_hidden_layers; i++) {
    const std::string l = p + "transformer.layer." + std::to_string(i) + ".",
                      q = "blk." + std::to_string(i) + ".";
    const std::pair<const char*, std::string> linear[] = {{"attn_q", "attention.q_lin"},
                                                          {"attn_k", "attention.k_lin"},
                                                          {"attn_v", "attention.v_lin"},
                                                          {"attn_output", "attention.out_lin"},
                                                          {"attn_output_norm", "sa_layer_norm"},
                                                          {"ffn_up", "ffn.lin1"},
                                                          {"ffn_down", "ffn.lin2"},
                                                          {"layer_output_norm", "output_layer_norm"}};
    for (const auto& [gg, hf] : linear) {
      o.copy(q + gg + ".weight", l + hf + ".weight");
      o.copy(q + gg + ".bias", l + hf + ".bias");
    }
  }
}

// RoBERTa's positions start at pad_token_id + 1 (llama.cpp's at 0): the file holds the table from that row
// (the converter's chop); read back, the rows before it, which no token uses, are the reference's.
void positions_from(Out& o, const std::string& hf, int64_t from) {
  const Shape s = o.W.info(hf).shape;
  o.put(
      "position_embd.weight", {s[0] - from, s[1]},
      [w = &o.W, hf, from, n = s[0]] { return w->get(hf).to(DType::F32).slice(0, from, n).contiguous(); },
      [hf, from](const Tensor& t, Into& in) {
        in.set_slice(hf, 0, from, t);
        in.set_slice(hf, 0, 0, in.W.get(hf).to(DType::F32).slice(0, 0, from).contiguous());
      });
}

}  // namespace

bool roberta_positions(const std::string& model_type) {
  return model_type == "roberta" || model_type == "xlm-roberta" || model_type == "camembert";
}

std::string bert_scope(const std::string& model_type) {
  return roberta_positions(model_type) ? "roberta." : model_type + ".";
}

void add_bert(Out& o, const Model& m, const ModelConfig& c) {
  check_bert(m, c);
  File& f = o.f;
  const std::string p = c.model_type == "distilbert" || o.W.has("embeddings.word_embeddings.weight")
                            ? ""
                            : bert_scope(c.model_type);
  const int64_t offset = roberta_positions(c.model_type) ? c.pad_token_id.value_or(1) + 1 : 0;
  ModelConfig sized = c;  // the context: the positions the file holds
  if (c.model_type != "distilbert")
    sized.max_position_embeddings = o.W.info(p + "embeddings.position_embeddings.weight").shape[0] - offset;
  layernorm_keys(f, "bert", sized, static_cast<float>(c.norm_eps));
  f.kv_bool("bert.attention.causal", false);
  if (c.model_type == "distilbert") return add_distilbert(o, c);
  o.copy("token_embd.weight", p + "embeddings.word_embeddings.weight");
  if (o.W.has(p + "embeddings.token_type_embeddings.weight"))
    o.copy("token_types.weight", p + "embeddings.token_type_embeddings.weight");
  if (offset > 0)
    positions_from(o, p + "embeddings.position_embeddings.weight", offset);
  else
    o.copy("position_embd.weight", p + "embeddings.position_embeddings.weight");
  o.copy("token_embd_norm.weight", p + "embeddings.LayerNorm.weight");
  o.copy("token_embd_norm.bias", p + "embeddings.LayerNorm.bias");
  for (int64_t i = 0; i < c.num_hidden_layers; i++) {
    const std::string l = p + "encoder.layer." + std::to_string(i) + ".",
                      q = "blk." + std::to_string(i) + ".";
    const std::pair<const char*, std::string> linear[] = {{"attn_q", "attention.self.query"},
                                                          {"attn_k", "attention.self.key"},
                                                          {"attn_v", "attention.self.value"},
                                                          {"attn_output", "attention.output.dense"},
                                                          {"attn_output_norm", "attention.output.LayerNorm"},
                                                          {"ffn_up", "intermediate.dense"},
                                                          {"ffn_down", "output.dense"},
                                                          {"layer_output_norm", "output.LayerNorm"}};
    for (const auto& [gg, hf] : linear) {
      o.copy(q + gg + ".weight", l + hf + ".weight");
      o.copy(q + gg + ".bias", l + hf + ".bias");
    }
  }
}

// ModernBERT as llama.cpp's modern-bert arch (convert_hf_to_gguf.py's ModernBertModel): LayerNorms without
// biases (layer 0's attention norm is the identity, absent), fused Wqkv, the GeGLU Wi [2I, H] as ffn_up,
// global layers every global_attn_every_n_layers-th from the first (llama.cpp's dense-first pattern) with
// their rope base, the local ones' symmetric window and base.
void add_modernbert(Out& o, const Model& m, const ModelConfig& c) {
  HFX_CHECK(
      m.head() == "base" || m.head() == "masked_lm", "gguf",
      "expected ModernBertModel or ModernBertForMaskedLM for llama.cpp's modern-bert arch (an embedding "
      "model), got the {} head; export the base model",
      m.head());
  const nlohmann::json& j = c.raw;
  const std::string act = j.value("hidden_activation", std::string("gelu"));
  HFX_CHECK(
      !j.value("norm_bias", false) && !j.value("attention_bias", false) && !j.value("mlp_bias", false) &&
          (act == "gelu" || act == "gelu_new" || act == "gelu_pytorch_tanh"),
      "gguf",
      "expected no norm, attention or MLP biases and a GELU hidden_activation for llama.cpp's modern-bert "
      "arch (its GeGLU graph), got norm_bias {}, attention_bias {}, mlp_bias {}, hidden_activation '{}'",
      j.value("norm_bias", false), j.value("attention_bias", false), j.value("mlp_bias", false), act);
  File& f = o.f;
  const std::string a = "modern-bert.";
  layernorm_keys(f, "modern-bert", c, static_cast<float>(c.norm_eps));
  f.kv_bool(a + "attention.causal", false);
  double global = j.value("global_rope_theta", 160000.0), local = j.value("local_rope_theta", global);
  const nlohmann::json rp = j.value("rope_parameters", nlohmann::json());
  if (rp.is_object() && rp.contains("full_attention"))  // transformers 5's per layer type
    global = rp["full_attention"].value("rope_theta", global);
  if (rp.is_object() && rp.contains("sliding_attention"))
    local = rp["sliding_attention"].value("rope_theta", local);
  f.kv_u32(a + "rope.dimension_count", static_cast<uint32_t>(c.hidden_size / c.num_attention_heads));
  f.kv_f32(a + "rope.freq_base", static_cast<float>(global));
  f.kv_f32(a + "rope.freq_base_swa", static_cast<float>(local));
  f.kv_u32(a + "attention.sliding_window", j.value("local_attention", uint32_t{128}));
  f.kv_u32(a + "attention.sliding_window_pattern", j.value("global_attn_every_n_layers", uint32_t{3}));
  const std::string p = o.W.has("embeddings.tok_embeddings.weight") ? "" : "model.";
  o.copy("token_embd.weight", p + "embeddings.tok_embeddings.weight");
  o.copy("token_embd_norm.weight", p + "embeddings.norm.weight");
  for (int64_t i = 0; i < c.num_hidden_layers; i++) {
    const std::string l = p + "layers." + std::to_string(i) + ".", q = "blk." + std::to_string(i) + ".";
    if (o.W.has(l + "attn_norm.weight")) o.copy(q + "attn_norm.weight", l + "attn_norm.weight");
    o.copy(q + "attn_qkv.weight", l + "attn.Wqkv.weight");
    o.copy(q + "attn_output.weight", l + "attn.Wo.weight");
    o.copy(q + "ffn_norm.weight", l + "mlp_norm.weight");
    o.copy(q + "ffn_up.weight", l + "mlp.Wi.weight");
    o.copy(q + "ffn_down.weight", l + "mlp.Wo.weight");
  }
  o.copy("output_norm.weight", p + "final_norm.weight");
}

void add_pooling(File& f, const std::string& arch, const std::string& dir) {
  if (!gguf_embedding_arch(arch) || !std::filesystem::exists(std::filesystem::path(dir) / "modules.json"))
    return;
  // llama_pooling_type: none 0, mean 1, cls 2, last 3 (llama.h); no max (the converter refuses it too).
  const models::EmbedSettings s = models::read_embed_settings(dir);
  HFX_CHECK(
      s.pooling != models::Pooling::Max, "gguf",
      "expected mean or cls pooling in {}'s Pooling module for llama.cpp (it has no max pooling), got max",
      dir);
  f.kv_u32(arch + ".pooling_type", s.pooling == models::Pooling::Mean ? 1u : 2u);
}

}  // namespace hfx::gguf
