// llama.cpp's t5 arch (T5ForConditionalGeneration, MT5ForConditionalGeneration), as convert_hf_to_gguf.py's
// T5Model writes it: one shared embedding, the encoder's and the decoder's blocks under enc.* / dec.* (self
// attention, the decoder's cross attention, a ReLU or gated-GELU MLP, RMS norms), each stack's relative
// position bias from its first layer. llama.cpp's graph applies lm_head as it is: where transformers scales
// the decoder output by d_model^-0.5 before a tied lm_head (original T5), the file's output matrix is the
// embedding times that factor, so the file computes the model transformers runs (the converter's files leave
// the factor out: their logits are sqrt(d_model) times transformers').
#include <cmath>

#include "export/gguf/gguf_archs.h"
#include "hfx/core/error.h"

namespace hfx::gguf {

namespace {

// What llama.cpp's t5 graph computes, checked: its relative buckets use a max distance of 128, its MLP is
// ReLU or gated GELU (ggml's tanh GELU, transformers' gelu_new).
void check_t5(const Model& m, const ModelConfig& c) {
  HFX_CHECK(
      m.head() == "seq2seq_lm", "gguf",
      "expected T5's conditional generation model (seq2seq_lm) for llama.cpp's t5 arch, got the {} head",
      m.head());
  const nlohmann::json& j = c.raw;
  const int64_t distance = j.value("relative_attention_max_distance", int64_t{128});
  HFX_CHECK(distance == 128, "gguf",
            "expected relative_attention_max_distance 128 (llama.cpp's t5 graph fixes it), got {}", distance);
  const std::string proj =
      j.value("feed_forward_proj", std::string(c.model_type == "mt5" ? "gated-gelu" : "relu"));
  HFX_CHECK(
      proj == "relu" || proj == "gated-gelu", "gguf",
      "expected feed_forward_proj relu or gated-gelu (llama.cpp's t5 graph: ReLU, or GELU with a gate), got "
      "'{}'",
      proj);
}

// The decoder output's factor before lm_head, as hfx's t5 model (and transformers 5) applies it: d_model^-0.5
// where scale_decoder_outputs says so (its default: the head tied), never for MT5.
bool scales_output(const ModelConfig& c) {
  return c.model_type != "mt5" && c.raw.value("scale_decoder_outputs", c.tie_word_embeddings);
}

void add_stack(Out& o, const std::string& hf, const std::string& gg, int64_t layers, bool decoder) {
  for (int64_t i = 0; i < layers; i++) {
    const std::string l = hf + ".block." + std::to_string(i) + ".layer.",
                      q = gg + ".blk." + std::to_string(i) + ".";
    const std::pair<const char*, const char*> self[] = {
        {"attn_q", "q"}, {"attn_k", "k"}, {"attn_v", "v"}, {"attn_o", "o"}};
    for (const auto& [name, proj] : self)
      o.copy(q + name + ".weight", l + "0.SelfAttention." + proj + ".weight");
    if (o.W.has(l + "0.SelfAttention.relative_attention_bias.weight"))
      o.copy(q + "attn_rel_b.weight", l + "0.SelfAttention.relative_attention_bias.weight");
    o.copy(q + "attn_norm.weight", l + "0.layer_norm.weight");
    std::string mlp = l + "1.";
    if (decoder) {
      for (const auto& [name, proj] : self)
        o.copy(q + "cross_" + name + ".weight", l + "1.EncDecAttention." + proj + ".weight");
      o.copy(q + "cross_attn_norm.weight", l + "1.layer_norm.weight");
      mlp = l + "2.";
    }
    if (o.W.has(mlp + "DenseReluDense.wi_0.weight")) {
      o.copy(q + "ffn_gate.weight", mlp + "DenseReluDense.wi_0.weight");
      o.copy(q + "ffn_up.weight", mlp + "DenseReluDense.wi_1.weight");
    } else {
      o.copy(q + "ffn_up.weight", mlp + "DenseReluDense.wi.weight");
    }
    o.copy(q + "ffn_down.weight", mlp + "DenseReluDense.wo.weight");
    o.copy(q + "ffn_norm.weight", mlp + "layer_norm.weight");
  }
}

}  // namespace

void add_t5(Out& o, const Model& m, const ModelConfig& c) {
  check_t5(m, c);
  const nlohmann::json& j = c.raw;
  File& f = o.f;
  const auto enc_layers = j.value("num_layers", int64_t{6});
  const auto dec_layers = j.value("num_decoder_layers", enc_layers);
  f.kv_u32("t5.context_length", static_cast<uint32_t>(j.value("n_positions", int64_t{512})));
  f.kv_u32("t5.feed_forward_length", static_cast<uint32_t>(j.value("d_ff", int64_t{2048})));
  f.kv_u32("t5.decoder_block_count", static_cast<uint32_t>(dec_layers));
  f.kv_u32("t5.attention.head_count", static_cast<uint32_t>(c.num_attention_heads));
  f.kv_u32("t5.attention.key_length", static_cast<uint32_t>(c.head_dim));
  f.kv_u32("t5.attention.value_length", static_cast<uint32_t>(c.head_dim));
  f.kv_f32("t5.attention.layer_norm_epsilon", static_cast<float>(c.norm_eps));
  f.kv_u32("t5.attention.relative_buckets_count",
           static_cast<uint32_t>(j.value("relative_attention_num_buckets", int64_t{32})));
  f.kv_f32("t5.attention.layer_norm_rms_epsilon", static_cast<float>(c.norm_eps));
  f.kv_u32("t5.decoder_start_token_id", static_cast<uint32_t>(j.value("decoder_start_token_id", int64_t{0})));
  const std::string emb = o.W.has("shared.weight") ? "shared.weight" : "encoder.embed_tokens.weight";
  o.copy("token_embd.weight", emb);
  add_stack(o, "encoder", "enc", enc_layers, false);
  o.copy("enc.output_norm.weight", "encoder.final_layer_norm.weight");
  add_stack(o, "decoder", "dec", dec_layers, true);
  o.copy("dec.output_norm.weight", "decoder.final_layer_norm.weight");
  // lm_head: the embedding where tied, else lm_head.weight; scaled into the matrix where the model scales its
  // input; absent where it is the embedding as it is (llama.cpp then uses token_embd).
  const std::string head = c.tie_word_embeddings ? emb : "lm_head.weight";
  if (scales_output(c)) {  // derived: read back through token_embd (or lm_head's own check below)
    const float scale = 1.0f / std::sqrt(static_cast<float>(c.hidden_size));
    o.put(
        "output.weight", o.W.info(head).shape,
        [w = &o.W, head, scale] {
          const Tensor t = w->get(head);
          std::vector<float> v = t.to_floats();
          for (float& x : v) x *= scale;
          return Tensor::from_floats(t.shape(), v);
        },
        nullptr);
  } else if (head != emb) {
    o.copy("output.weight", head);
  }
}

}  // namespace hfx::gguf
