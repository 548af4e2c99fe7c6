// tests/models/gguf_lfm2.h — the `lfm2` architecture of llama.cpp for the GGUF writer of
// tests/models/gguf_writer.h (test support only): what convert_hf_to_gguf.py's LFM2Model writes.
//
// llama.cpp tells conv layers from attention layers by a per-layer head_count_kv of 0; the final norm
// (HF model.embedding_norm) is token_embd_norm (llama.cpp's LLM_TENSOR_OUTPUT_NORM_LFM2); the depthwise
// conv weight [hidden, 1, L_cache] is stored squeezed as [hidden, L_cache]; rope is NEOX, so q/k rows stay in
// HF order.
#pragma once
#include "models/gguf_writer.h"

namespace hfx::test::gguf {

inline void write_lfm2_gguf(const std::string& path, const CausalLM& m, const nlohmann::json& tok) {
  const ModelConfig& c = m.config();
  const auto& W = m.weights();
  const int64_t H = c.hidden_size, L = c.raw.value("conv_L_cache", int64_t{3});
  const int64_t ff = W.info("model.layers.0.feed_forward.w1.weight").shape.at(0);
  std::vector<int32_t> kv_heads;
  for (const auto& t : c.layer_types)
    kv_heads.push_back(t == "conv" ? 0 : static_cast<int32_t>(c.num_key_value_heads));
  Writer w;
  w.kv_str("general.architecture", "lfm2");
  w.kv_str("general.name", "hfx-tiny");
  w.kv_u32("general.alignment", 32);
  w.kv_u32("lfm2.context_length", static_cast<uint32_t>(c.max_position_embeddings));
  w.kv_u32("lfm2.embedding_length", static_cast<uint32_t>(H));
  w.kv_u32("lfm2.block_count", static_cast<uint32_t>(c.num_hidden_layers));
  w.kv_u32("lfm2.feed_forward_length", static_cast<uint32_t>(ff));
  w.kv_u32("lfm2.attention.head_count", static_cast<uint32_t>(c.num_attention_heads));
  w.kv_i32s("lfm2.attention.head_count_kv", kv_heads);
  w.kv_u32("lfm2.attention.key_length", static_cast<uint32_t>(c.head_dim));
  w.kv_u32("lfm2.attention.value_length", static_cast<uint32_t>(c.head_dim));
  w.kv_u32("lfm2.rope.dimension_count", static_cast<uint32_t>(c.head_dim));
  w.kv_f32("lfm2.rope.freq_base", static_cast<float>(c.rope_theta));
  w.kv_f32("lfm2.attention.layer_norm_rms_epsilon", static_cast<float>(c.norm_eps));
  w.kv_u32("lfm2.shortconv.l_cache", static_cast<uint32_t>(L));
  w.kv_u32("lfm2.vocab_size", static_cast<uint32_t>(c.vocab_size));
  add_gpt2_vocab(w, tok, c.vocab_size);
  if (c.bos_token_id) w.kv_u32("tokenizer.ggml.bos_token_id", static_cast<uint32_t>(*c.bos_token_id));
  if (!c.eos_token_ids.empty())
    w.kv_u32("tokenizer.ggml.eos_token_id", static_cast<uint32_t>(c.eos_token_ids[0]));
  w.tensor("token_embd.weight", W.get("model.embed_tokens.weight"));
  for (int64_t i = 0; i < c.num_hidden_layers; i++) {
    std::string p = "model.layers." + std::to_string(i) + ".", q = "blk." + std::to_string(i) + ".";
    w.tensor(q + "attn_norm.weight", W.get(p + "operator_norm.weight"));
    if (c.layer_types.at(static_cast<size_t>(i)) == "conv") {
      w.tensor(q + "shortconv.conv.weight",
               W.get(p + "conv.conv.weight").to(DType::F32).contiguous().reshape({H, L}));
      w.tensor(q + "shortconv.in_proj.weight", W.get(p + "conv.in_proj.weight"));
      w.tensor(q + "shortconv.out_proj.weight", W.get(p + "conv.out_proj.weight"));
    } else {
      w.tensor(q + "attn_q.weight", W.get(p + "self_attn.q_proj.weight"));
      w.tensor(q + "attn_k.weight", W.get(p + "self_attn.k_proj.weight"));
      w.tensor(q + "attn_v.weight", W.get(p + "self_attn.v_proj.weight"));
      w.tensor(q + "attn_output.weight", W.get(p + "self_attn.out_proj.weight"));
      w.tensor(q + "attn_q_norm.weight", W.get(p + "self_attn.q_layernorm.weight"));
      w.tensor(q + "attn_k_norm.weight", W.get(p + "self_attn.k_layernorm.weight"));
    }
    w.tensor(q + "ffn_norm.weight", W.get(p + "ffn_norm.weight"));
    w.tensor(q + "ffn_gate.weight", W.get(p + "feed_forward.w1.weight"));
    w.tensor(q + "ffn_up.weight", W.get(p + "feed_forward.w3.weight"));
    w.tensor(q + "ffn_down.weight", W.get(p + "feed_forward.w2.weight"));
  }
  w.tensor("token_embd_norm.weight", W.get("model.embedding_norm.weight"));
  if (!c.tie_word_embeddings) w.tensor("output.weight", W.get("lm_head.weight"));
  w.write(path);
}

}  // namespace hfx::test::gguf
