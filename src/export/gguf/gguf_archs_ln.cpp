// The LayerNorm decoders of llama.cpp hfx writes, as convert_hf_to_gguf.py's classes write them: starcoder2
// (GELU MLP c_fc / c_proj with biases), stablelm (gated MLP, partial rotary), phi2 (phi: attention and MLP in
// parallel off one norm, partial rotary, an lm_head bias) and olmo (norms without parameters, q/k in
// llama.cpp's rope row order, clip_qkv as the clamp), nemotron, command-r (cohere), cohere2 (command-r with
// sliding layers), falcon, and the ALiBi ones: bloom, mpt. Norms carry their biases; keys say
// layer_norm_epsilon.
#include <cmath>

#include "export/gguf/gguf_archs.h"
#include "hfx/core/error.h"

namespace hfx::gguf {

namespace {

void check_layernorm_decoder(const std::string& arch, const ModelConfig& c) {
  const nlohmann::json& j = c.raw;
  if (arch != "cohere2") check_full_attention(arch, c);
  HFX_CHECK((arch != "command-r" && arch != "cohere2") || c.tie_word_embeddings, "gguf",
            "expected tie_word_embeddings for llama.cpp's {} arch (its output is token_embd), got an lm_head",
            arch);
  HFX_CHECK(
      !j.value("qk_layernorm", false), "gguf",
      "expected qk_layernorm false for llama.cpp's {} arch (hfx does not write its per-head q/k norms), got "
      "true",
      arch);
}

Tensor shifted(Tensor t, float k) {
  std::vector<float> v = t.to_floats();
  for (float& x : v) x += k;
  return Tensor::from_floats(t.shape(), v);
}

// weight and, where the checkpoint has one, bias; Nemotron's LayerNorm1P weights + 1 (undone on the way
// back).
void pair(Out& o, const std::string& name, const std::string& hf, bool plus_one = false) {
  if (plus_one)
    o.map(
        name + ".weight", hf + ".weight", [](Tensor t) { return shifted(std::move(t), 1.0f); },
        [](Tensor t) { return shifted(std::move(t), -1.0f); });
  else
    o.copy(name + ".weight", hf + ".weight");
  if (o.W.has(hf + ".bias")) o.copy(name + ".bias", hf + ".bias");
}

// A layer's tensors as data: llama.cpp's name under `q` ← the checkpoint's under `p` (weight and bias).
void pairs(Out& o, const std::string& p, const std::string& q,
           std::initializer_list<std::pair<const char*, const char*>> names) {
  for (const auto& [gg, hf] : names) pair(o, q + gg, p + hf);
}

// GPT-NeoX's fused query_key_value rows [head][q, k, v][d] as llama.cpp's gptneox reads them, [q, k,
// v][head][d] (the converter's reshape (H, 3, D, E) and cat); `back` undoes it. A bias is the E = 1 case.
Tensor regroup_qkv(const Tensor& w, int64_t heads, bool back) {
  return move_row_groups(
      w, w.size(0) / (3 * heads), [heads](int64_t g) { return g % 3 * heads + g / 3; }, back);
}

// A GPT-NeoX-style layer (GPT-NeoX's, BLOOM's): input_layernorm, the fused per-head q/k/v regrouped, the
// attention's dense, post_attention_layernorm, dense_h_to_4h / dense_4h_to_h, each with its bias.
void neox_layer(Out& o, const ModelConfig& c, const std::string& p, const std::string& q,
                const std::string& attn) {
  const int64_t H = c.num_attention_heads;
  pair(o, q + "attn_norm", p + "input_layernorm");
  for (const char* part : {".weight", ".bias"})
    o.map(
        q + "attn_qkv" + part, p + attn + "query_key_value" + part,
        [H](Tensor t) { return regroup_qkv(t, H, false); },
        [H](Tensor t) { return regroup_qkv(t, H, true); });
  pair(o, q + "attn_output", p + attn + "dense");
  pair(o, q + "ffn_norm", p + "post_attention_layernorm");
  pair(o, q + "ffn_up", p + "mlp.dense_h_to_4h");
  pair(o, q + "ffn_down", p + "mlp.dense_4h_to_h");
}

void add_starcoder(Out& o, const ModelConfig& c) {
  File& f = o.f;
  layernorm_keys(f, "starcoder", c, static_cast<float>(c.norm_eps));
  f.kv_u32("starcoder.attention.head_count_kv", static_cast<uint32_t>(c.num_key_value_heads));
  o.copy("token_embd.weight", "transformer.wte.weight");
  o.copy("position_embd.weight", "transformer.wpe.weight");
  for (int64_t i = 0; i < c.num_hidden_layers; i++) {
    const std::string p = "transformer.h." + std::to_string(i) + ".", q = "blk." + std::to_string(i) + ".";
    pairs(o, p, q,
          {{"attn_norm", "ln_1"},
           {"attn_qkv", "attn.c_attn"},
           {"attn_output", "attn.c_proj"},
           {"ffn_norm", "ln_2"},
           {"ffn_up", "mlp.c_fc"},
           {"ffn_down", "mlp.c_proj"}});
  }
  pair(o, "output_norm", "transformer.ln_f");
  if (!c.tie_word_embeddings) o.copy("output.weight", "lm_head.weight");
}

void add_gptneox(Out& o, const ModelConfig& c) {
  File& f = o.f;
  layernorm_keys(f, "gptneox", c, static_cast<float>(c.norm_eps));
  f.kv_bool("gptneox.use_parallel_residual", c.raw.value("use_parallel_residual", true));
  rope_keys(o, "gptneox", c);
  o.copy("token_embd.weight", "gpt_neox.embed_in.weight");
  for (int64_t i = 0; i < c.num_hidden_layers; i++)
    neox_layer(o, c, "gpt_neox.layers." + std::to_string(i) + ".", "blk." + std::to_string(i) + ".",
               "attention.");
  pair(o, "output_norm", "gpt_neox.final_layer_norm");
  if (!c.tie_word_embeddings) o.copy("output.weight", "lm_head.weight");  // embed_out in older files
}

// Falcon-7B's layout (hfx refuses new_decoder_architecture): multi_query's rows [q heads; k; v] are
// llama.cpp's already, the per-head [q_h; k_h; v_h] of the others regrouped as GPT-NeoX's.
void add_falcon(Out& o, const ModelConfig& c) {
  const nlohmann::json& j = c.raw;
  HFX_CHECK(
      !j.value("bias", false) && j.value("parallel_attn", true) &&
          j.value("activation", std::string("gelu")) == "gelu",
      "gguf",
      "expected Falcon-7B's layout for llama.cpp's falcon arch (no linear biases, parallel_attn, gelu), got "
      "bias {}, parallel_attn {}, activation {}",
      j.value("bias", false), j.value("parallel_attn", true), j.value("activation", std::string("gelu")));
  File& f = o.f;
  layernorm_keys(f, "falcon", c, static_cast<float>(c.norm_eps));
  f.kv_u32("falcon.attention.head_count_kv", static_cast<uint32_t>(c.num_key_value_heads));
  f.kv_str("falcon.tensor_data_layout", "jploski");  // the converter's name for [q heads; k heads; v heads]
  rope_keys(o, "falcon", c);
  o.copy("token_embd.weight", "transformer.word_embeddings.weight");
  const int64_t H = c.num_attention_heads;
  const bool per_head = c.num_key_value_heads == H && H > 1;
  for (int64_t i = 0; i < c.num_hidden_layers; i++) {
    const std::string p = "transformer.h." + std::to_string(i) + ".", q = "blk." + std::to_string(i) + ".";
    pair(o, q + "attn_norm", p + "input_layernorm");
    const std::string qkv = p + "self_attention.query_key_value.weight";
    if (per_head)
      o.map(
          q + "attn_qkv.weight", qkv, [H](Tensor t) { return regroup_qkv(t, H, false); },
          [H](Tensor t) { return regroup_qkv(t, H, true); });
    else
      o.copy(q + "attn_qkv.weight", qkv);
    o.copy(q + "attn_output.weight", p + "self_attention.dense.weight");
    o.copy(q + "ffn_up.weight", p + "mlp.dense_h_to_4h.weight");
    o.copy(q + "ffn_down.weight", p + "mlp.dense_4h_to_h.weight");
  }
  pair(o, "output_norm", "transformer.ln_f");
  if (!c.tie_word_embeddings) o.copy("output.weight", "lm_head.weight");
}

// BLOOM: ALiBi (llama.cpp's bias max 8 is BLOOM's slopes), the embeddings' LayerNorm, per-head q/k/v rows
// regrouped as GPT-NeoX's, biases everywhere.
void add_bloom(Out& o, const ModelConfig& c) {
  File& f = o.f;
  layernorm_keys(f, "bloom", c, static_cast<float>(c.norm_eps));
  f.kv_u32("bloom.attention.head_count_kv", static_cast<uint32_t>(c.num_attention_heads));
  o.copy("token_embd.weight", "transformer.word_embeddings.weight");
  pair(o, "token_embd_norm", "transformer.word_embeddings_layernorm");
  for (int64_t i = 0; i < c.num_hidden_layers; i++)
    neox_layer(o, c, "transformer.h." + std::to_string(i) + ".", "blk." + std::to_string(i) + ".",
               "self_attention.");
  pair(o, "output_norm", "transformer.ln_f");
  if (!c.tie_word_embeddings) o.copy("output.weight", "lm_head.weight");
}

// MPT: ALiBi of bias max 8 (hfx refuses others), clip_qkv as the clamp, [q; k; v] rows as llama.cpp's.
void add_mpt(Out& o, const ModelConfig& c) {
  const nlohmann::json attn = c.raw.value("attn_config", nlohmann::json::object());
  const nlohmann::json scale = attn.value("softmax_scale", nlohmann::json());
  const double want = 1.0 / std::sqrt(static_cast<double>(c.hidden_size / c.num_attention_heads));
  HFX_CHECK(scale.is_null() || std::fabs(scale.get<double>() - want) <= 1e-6 * want, "gguf",
            "expected attn_config.softmax_scale null or 1/sqrt(head_dim) = {} for llama.cpp's mpt arch (its "
            "graph scales by that), got {}",
            want, scale.dump());
  File& f = o.f;
  layernorm_keys(f, "mpt", c, static_cast<float>(c.norm_eps));
  if (attn.contains("clip_qkv") && attn["clip_qkv"].is_number())
    f.kv_f32("mpt.attention.clamp_kqv", attn["clip_qkv"].get<float>());
  f.kv_f32("mpt.attention.max_alibi_bias", attn.value("alibi_bias_max", 8.0f));
  o.copy("token_embd.weight", "transformer.wte.weight");
  for (int64_t i = 0; i < c.num_hidden_layers; i++) {
    const std::string p = "transformer.blocks." + std::to_string(i) + ".",
                      q = "blk." + std::to_string(i) + ".";
    pairs(o, p, q,
          {{"attn_norm", "norm_1"},
           {"attn_qkv", "attn.Wqkv"},
           {"attn_output", "attn.out_proj"},
           {"ffn_norm", "norm_2"},
           {"ffn_up", "ffn.up_proj"},
           {"ffn_down", "ffn.down_proj"}});
  }
  pair(o, "output_norm", "transformer.norm_f");
  if (!c.tie_word_embeddings) o.copy("output.weight", "lm_head.weight");
}

}  // namespace

void add_layernorm_decoder(Out& o, const std::string& arch, const ModelConfig& c) {
  if (arch == "starcoder") return add_starcoder(o, c);
  if (arch == "falcon") return add_falcon(o, c);
  if (arch == "bloom") return add_bloom(o, c);
  if (arch == "mpt") return add_mpt(o, c);
  check_layernorm_decoder(arch, c);
  if (arch == "gptneox") return add_gptneox(o, c);
  File& f = o.f;
  // OLMo's LayerNorm is nn.functional.layer_norm with eps 1e-5 whatever config.json says (the converter
  // writes that too).
  layernorm_keys(f, arch, c, arch == "olmo" ? 1e-5f : static_cast<float>(c.norm_eps));
  f.kv_u32(arch + ".attention.head_count_kv", static_cast<uint32_t>(c.num_key_value_heads));
  if (arch == "olmo" && c.raw.contains("clip_qkv") && c.raw["clip_qkv"].is_number())
    f.kv_f32("olmo.attention.clamp_kqv", c.raw["clip_qkv"].get<float>());
  if (arch == "command-r" || arch == "cohere2")
    f.kv_f32(arch + ".logit_scale", c.raw.value("logit_scale", 1.0f));
  if (arch == "cohere2") swa_keys(f, arch, c);  // rope on the sliding layers only (as transformers)
  const bool p1 = arch == "nemotron";           // LayerNorm1P
  rope_keys(o, arch, c);
  o.copy("token_embd.weight", "model.embed_tokens.weight");
  for (int64_t i = 0; i < c.num_hidden_layers; i++) {
    const std::string p = "model.layers." + std::to_string(i) + ".", q = "blk." + std::to_string(i) + ".";
    if (arch != "olmo") pair(o, q + "attn_norm", p + "input_layernorm", p1);
    if (arch == "olmo") {  // llama.cpp's olmo graph rotates interleaved pairs
      rope_ordered_qk(o, c, p + "self_attn.", q);
      o.copy(q + "attn_v.weight", p + "self_attn.v_proj.weight");
    } else {
      for (const char* b : {"q", "k", "v"}) pair(o, q + "attn_" + b, p + "self_attn." + b + "_proj");
    }
    pair(o, q + "attn_output", p + (arch == "phi2" ? "self_attn.dense" : "self_attn.o_proj"));
    if (arch == "stablelm" || arch == "starcoder2" || arch == "nemotron")
      pair(o, q + "ffn_norm", p + "post_attention_layernorm", p1);
    if (arch == "starcoder2" || arch == "phi2") {
      pair(o, q + "ffn_up", p + (arch == "phi2" ? "mlp.fc1" : "mlp.c_fc"));
      pair(o, q + "ffn_down", p + (arch == "phi2" ? "mlp.fc2" : "mlp.c_proj"));
    } else {
      for (const char* b : {"gate", "up", "down"})
        if (o.W.has(p + "mlp." + b + "_proj.weight"))  // nemotron: up and down (relu²)
          pair(o, q + "ffn_" + b, p + "mlp." + b + "_proj");
    }
  }
  if (arch != "olmo") pair(o, "output_norm", arch == "phi2" ? "model.final_layernorm" : "model.norm", p1);
  if (!c.tie_word_embeddings) pair(o, "output", "lm_head");
}

}  // namespace hfx::gguf
