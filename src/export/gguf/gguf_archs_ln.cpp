// The LayerNorm decoders of llama.cpp hfx writes, as convert_hf_to_gguf.py's classes write them: starcoder2
// (GELU MLP c_fc / c_proj with biases), stablelm (gated MLP, partial rotary), phi2 (phi: attention and MLP in
// parallel off one norm, partial rotary, an lm_head bias) and olmo (norms without parameters, q/k in
// llama.cpp's rope row order, clip_qkv as the clamp). Norms carry their biases; keys say layer_norm_epsilon.
#include "export/gguf/gguf_archs.h"
#include "hfx/core/error.h"

namespace hfx::gguf {

namespace {

void check_layernorm_decoder(const std::string& arch, const ModelConfig& c) {
  const nlohmann::json& j = c.raw;
  HFX_CHECK(c.sliding_window == 0 || c.sliding_window >= c.max_position_embeddings, "gguf",
            "expected no sliding window for llama.cpp's {} arch (it attends over the whole context), got "
            "sliding_window {} < max_position_embeddings {}; set \"sliding_window\": null in config.json if "
            "the model "
            "never sees that many tokens",
            arch, c.sliding_window, c.max_position_embeddings);
  HFX_CHECK(
      !j.value("qk_layernorm", false), "gguf",
      "expected qk_layernorm false for llama.cpp's {} arch (hfx does not write its per-head q/k norms), got "
      "true",
      arch);
}

// weight and, where the checkpoint has one, bias.
void pair(Out& o, const std::string& name, const std::string& hf) {
  o.copy(name + ".weight", hf + ".weight");
  if (o.W.has(hf + ".bias")) o.copy(name + ".bias", hf + ".bias");
}

}  // namespace

void add_layernorm_decoder(Out& o, const std::string& arch, const ModelConfig& c) {
  check_layernorm_decoder(arch, c);
  File& f = o.f;
  f.kv_u32(arch + ".context_length", static_cast<uint32_t>(c.max_position_embeddings));
  f.kv_u32(arch + ".feed_forward_length", static_cast<uint32_t>(c.intermediate_size));
  f.kv_u32(arch + ".attention.head_count", static_cast<uint32_t>(c.num_attention_heads));
  f.kv_u32(arch + ".attention.head_count_kv", static_cast<uint32_t>(c.num_key_value_heads));
  // OLMo's LayerNorm is nn.functional.layer_norm with eps 1e-5 whatever config.json says (the converter
  // writes that too).
  f.kv_f32(arch + ".attention.layer_norm_epsilon", arch == "olmo" ? 1e-5f : static_cast<float>(c.norm_eps));
  if (arch == "olmo" && c.raw.contains("clip_qkv") && c.raw["clip_qkv"].is_number())
    f.kv_f32("olmo.attention.clamp_kqv", c.raw["clip_qkv"].get<float>());
  rope_keys(o, arch, c);
  o.copy("token_embd.weight", "model.embed_tokens.weight");
  const int64_t H = c.num_attention_heads, K = c.num_key_value_heads;
  for (int64_t i = 0; i < c.num_hidden_layers; i++) {
    const std::string p = "model.layers." + std::to_string(i) + ".", q = "blk." + std::to_string(i) + ".";
    if (arch != "olmo") pair(o, q + "attn_norm", p + "input_layernorm");
    if (arch == "olmo") {  // llama.cpp's olmo graph rotates interleaved pairs
      o.map(
          q + "attn_q.weight", p + "self_attn.q_proj.weight",
          [H](Tensor t) { return rope_rows(t, H, false); }, [H](Tensor t) { return rope_rows(t, H, true); });
      o.map(
          q + "attn_k.weight", p + "self_attn.k_proj.weight",
          [K](Tensor t) { return rope_rows(t, K, false); }, [K](Tensor t) { return rope_rows(t, K, true); });
      o.copy(q + "attn_v.weight", p + "self_attn.v_proj.weight");
    } else {
      for (const char* b : {"q", "k", "v"}) pair(o, q + "attn_" + b, p + "self_attn." + b + "_proj");
    }
    pair(o, q + "attn_output", p + (arch == "phi2" ? "self_attn.dense" : "self_attn.o_proj"));
    if (arch == "stablelm" || arch == "starcoder2") pair(o, q + "ffn_norm", p + "post_attention_layernorm");
    if (arch == "starcoder2" || arch == "phi2") {
      pair(o, q + "ffn_up", p + (arch == "phi2" ? "mlp.fc1" : "mlp.c_fc"));
      pair(o, q + "ffn_down", p + (arch == "phi2" ? "mlp.fc2" : "mlp.c_proj"));
    } else {
      for (const char* b : {"gate", "up", "down"})
        o.copy(q + "ffn_" + b + ".weight", p + "mlp." + b + "_proj.weight");
    }
  }
  if (arch != "olmo") pair(o, "output_norm", arch == "phi2" ? "model.final_layernorm" : "model.norm");
  if (!c.tie_word_embeddings) pair(o, "output", "lm_head");
}

}  // namespace hfx::gguf
