// tests/models/gguf_writer.h — a minimal GGUF v3 writer for the llama.cpp reference test (test support
// only; header-only because tests/CMakeLists.txt compiles *_test.cpp and tests/support/*.cpp).
//
// Writes F32 tensors with llama.cpp's names and the metadata its loader needs for the `mamba2` and
// `granitehybrid` architectures (and tests/models/gguf_lfm2.h's `lfm2`), plus a vocabulary taken from the
// checkpoint's tokenizer.json — the archs hfx's GGUF backend (hfx/export/gguf.h) does not write yet; it
// writes the others, and these move there as it learns them.
#pragma once
#include <cmath>
#include <cstdint>
#include <cstring>
#include <fstream>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "hfx/core/error.h"
#include "hfx/core/tensor.h"
#include "hfx/models/model.h"

namespace hfx::test::gguf {

enum : uint32_t { U8 = 0, I8, U16, I16, U32, I32, F32, BOOL, STRING, ARRAY, U64, I64, F64 };

class Writer {
 public:
  void kv_str(const std::string& k, const std::string& v) {
    key(k, STRING);
    str(v);
    kv_++;
  }
  void kv_u32(const std::string& k, uint32_t v) {
    key(k, U32);
    pod(v);
    kv_++;
  }
  void kv_f32(const std::string& k, float v) {
    key(k, F32);
    pod(v);
    kv_++;
  }
  void kv_bool(const std::string& k, bool v) {
    key(k, BOOL);
    pod(static_cast<uint8_t>(v));
    kv_++;
  }
  void kv_strs(const std::string& k, const std::vector<std::string>& v) {
    key(k, ARRAY);
    pod(uint32_t{STRING});
    pod(static_cast<uint64_t>(v.size()));
    for (const auto& s : v) str(s);
    kv_++;
  }
  void kv_i32s(const std::string& k, const std::vector<int32_t>& v) {
    key(k, ARRAY);
    pod(uint32_t{I32});
    pod(static_cast<uint64_t>(v.size()));
    for (auto x : v) pod(x);
    kv_++;
  }
  void kv_f32s(const std::string& k, const std::vector<float>& v) {
    key(k, ARRAY);
    pod(uint32_t{F32});
    pod(static_cast<uint64_t>(v.size()));
    for (auto x : v) pod(x);
    kv_++;
  }
  /// An F32 tensor in torch layout (GGUF stores dims innermost first).
  void tensor(const std::string& name, const Tensor& t) {
    tensors_.push_back({name, t.to(DType::F32).contiguous()});
  }

  void write(const std::string& path) const {
    std::string out;
    auto put = [&](const void* p, size_t n) { out.append(static_cast<const char*>(p), n); };
    put("GGUF", 4);
    uint32_t version = 3;
    put(&version, 4);
    uint64_t nt = tensors_.size(), nk = kv_;
    put(&nt, 8);
    put(&nk, 8);
    out += meta_;
    uint64_t off = 0;
    for (const auto& [name, t] : tensors_) {
      uint64_t len = name.size();
      put(&len, 8);
      out += name;
      uint32_t nd = static_cast<uint32_t>(t.dim());
      put(&nd, 4);
      for (int64_t d = t.dim() - 1; d >= 0; d--) {
        uint64_t n = static_cast<uint64_t>(t.size(d));
        put(&n, 8);
      }
      uint32_t type = 0;  // GGML_TYPE_F32
      put(&type, 4);
      put(&off, 8);
      off += (t.nbytes() + 31) / 32 * 32;
    }
    while (out.size() % 32) out.push_back('\0');
    for (const auto& [name, t] : tensors_) {
      put(t.raw(), t.nbytes());
      while (out.size() % 32) out.push_back('\0');
    }
    std::ofstream f(path, std::ios::binary);
    f.write(out.data(), static_cast<std::streamsize>(out.size()));
    if (!f) HFX_THROW("gguf", "cannot write {}", path);
  }

 private:
  void key(const std::string& k, uint32_t type) {
    str(k);
    pod(type);
  }
  void str(const std::string& s) {
    pod(static_cast<uint64_t>(s.size()));
    meta_ += s;
  }
  template <typename T>
  void pod(T v) {
    meta_.append(reinterpret_cast<const char*>(&v), sizeof(T));
  }
  std::string meta_;
  uint64_t kv_ = 0;
  std::vector<std::pair<std::string, Tensor>> tensors_;
};

/// Vocabulary (tokens, types, merges) from a byte-level BPE tokenizer.json.
inline void add_gpt2_vocab(Writer& w, const nlohmann::json& tok, int64_t vocab_size) {
  std::vector<std::string> tokens(vocab_size);
  std::vector<int32_t> types(vocab_size, 1);
  for (auto it = tok["model"]["vocab"].begin(); it != tok["model"]["vocab"].end(); ++it) {
    int64_t id = it.value().get<int64_t>();
    if (id < vocab_size) tokens[id] = it.key();
  }
  for (const auto& a : tok["added_tokens"]) {
    int64_t id = a["id"].get<int64_t>();
    if (id < vocab_size) {
      tokens[id] = a["content"].get<std::string>();
      types[id] = a.value("special", false) ? 3 : 4;
    }
  }
  for (int64_t i = 0; i < vocab_size; i++)
    if (tokens[i].empty()) tokens[i] = "[PAD" + std::to_string(i) + "]", types[i] = 5;
  std::vector<std::string> merges;
  for (const auto& m : tok["model"]["merges"])
    merges.push_back(m.is_string() ? m.get<std::string>()
                                   : m[0].get<std::string>() + " " + m[1].get<std::string>());
  w.kv_str("tokenizer.ggml.model", "gpt2");
  w.kv_str("tokenizer.ggml.pre", "llama-bpe");
  w.kv_strs("tokenizer.ggml.tokens", tokens);
  w.kv_i32s("tokenizer.ggml.token_type", types);
  w.kv_strs("tokenizer.ggml.merges", merges);
}

/// One Mamba-2 mixer's tensors as convert_hf_to_gguf.py's Mamba2Model writes them: conv1d.weight
/// [C, 1, K] squeezed to [C, K], dt_bias as ssm_dt.bias, A = -exp(A_log) and D as [heads, 1], the gated
/// norm's weight as [n_groups, inner / n_groups].
inline void add_ssd_mixer(Writer& w, const io::WeightStore& W, const std::string& p, const std::string& q,
                          int64_t inner, int64_t groups, bool conv_bias) {
  Tensor cw = W.get(p + "conv1d.weight").to(DType::F32).contiguous();
  w.tensor(q + "ssm_in.weight", W.get(p + "in_proj.weight"));
  w.tensor(q + "ssm_conv1d.weight", cw.reshape({cw.size(0), cw.size(2)}));
  if (conv_bias) w.tensor(q + "ssm_conv1d.bias", W.get(p + "conv1d.bias"));
  w.tensor(q + "ssm_dt.bias", W.get(p + "dt_bias"));
  std::vector<float> a = W.get(p + "A_log").to_floats();
  for (float& x : a) x = -std::exp(x);
  const int64_t H = static_cast<int64_t>(a.size());
  w.tensor(q + "ssm_a", Tensor::from_floats({H, 1}, a));
  w.tensor(q + "ssm_d", W.get(p + "D").to(DType::F32).contiguous().reshape({H, 1}));
  w.tensor(q + "ssm_norm.weight",
           W.get(p + "norm.weight").to(DType::F32).contiguous().reshape({groups, inner / groups}));
  w.tensor(q + "ssm_out.weight", W.get(p + "out_proj.weight"));
}

/// mamba2 as convert_hf_to_gguf.py's Mamba2Model writes it (time_step_rank = the head count).
inline void write_mamba2(const std::string& path, const CausalLM& m, const nlohmann::json& tok) {
  const ModelConfig& c = m.config();
  const auto& W = m.weights();
  const int64_t H = c.hidden_size, I = c.intermediate_size;
  const int64_t N = c.raw.at("state_size").get<int64_t>(), K = c.raw.at("conv_kernel").get<int64_t>();
  const int64_t G = c.raw.at("n_groups").get<int64_t>(), heads = c.raw.at("num_heads").get<int64_t>();
  Writer w;
  w.kv_str("general.architecture", "mamba2");
  w.kv_str("general.name", "hfx-tiny");
  w.kv_u32("general.alignment", 32);
  w.kv_u32("mamba2.context_length", 1u << 20);
  w.kv_u32("mamba2.embedding_length", static_cast<uint32_t>(H));
  w.kv_u32("mamba2.feed_forward_length", 0);
  w.kv_u32("mamba2.attention.head_count", 0);
  w.kv_u32("mamba2.block_count", static_cast<uint32_t>(c.num_hidden_layers));
  w.kv_u32("mamba2.ssm.conv_kernel", static_cast<uint32_t>(K));
  w.kv_u32("mamba2.ssm.inner_size", static_cast<uint32_t>(I));
  w.kv_u32("mamba2.ssm.state_size", static_cast<uint32_t>(N));
  w.kv_u32("mamba2.ssm.time_step_rank", static_cast<uint32_t>(heads));
  w.kv_u32("mamba2.ssm.group_count", static_cast<uint32_t>(G));
  w.kv_f32("mamba2.attention.layer_norm_rms_epsilon", static_cast<float>(c.norm_eps));
  w.kv_u32("mamba2.vocab_size", static_cast<uint32_t>(c.vocab_size));
  add_gpt2_vocab(w, tok, c.vocab_size);
  if (c.bos_token_id) w.kv_u32("tokenizer.ggml.bos_token_id", static_cast<uint32_t>(*c.bos_token_id));
  if (!c.eos_token_ids.empty())
    w.kv_u32("tokenizer.ggml.eos_token_id", static_cast<uint32_t>(c.eos_token_ids[0]));
  w.tensor("token_embd.weight", W.get("backbone.embeddings.weight"));
  for (int64_t i = 0; i < c.num_hidden_layers; i++) {
    std::string p = "backbone.layers." + std::to_string(i) + ".", q = "blk." + std::to_string(i) + ".";
    w.tensor(q + "attn_norm.weight", W.get(p + "norm.weight"));
    add_ssd_mixer(w, W, p + "mixer.", q, I, G, c.raw.value("use_conv_bias", true));
  }
  w.tensor("output_norm.weight", W.get("backbone.norm_f.weight"));
  if (!c.tie_word_embeddings) w.tensor("output.weight", W.get("lm_head.weight"));
  w.write(path);
}

/// granitemoehybrid as convert_hf_to_gguf.py's GraniteHybridModel writes it (llama.cpp arch
/// "granitehybrid"): the Mamba-2 layers as mamba2's, the attention layers' q/k/v/o unpermuted (NoPE: no
/// rotary, so the row order of q and k does not change a score), head_count_kv per layer (0 on mamba
/// layers), the stacked experts' input_linear [E, 2I, H] split into gate and up, the shared MLP's
/// input_linear [2S, H] likewise, Granite's multipliers as attention/embedding/residual/logit scales.
inline void write_granitehybrid(const std::string& path, const CausalLM& m, const nlohmann::json& tok) {
  const ModelConfig& c = m.config();
  const auto& W = m.weights();
  const nlohmann::json& j = c.raw;
  const int64_t H = c.hidden_size, I = c.intermediate_size,
                S = j.at("shared_intermediate_size").get<int64_t>();
  const int64_t inner = j.value("mamba_expand", int64_t{2}) * H, G = j.value("mamba_n_groups", int64_t{1});
  const std::string a = "granitehybrid.";
  Writer w;
  w.kv_str("general.architecture", "granitehybrid");
  w.kv_str("general.name", "hfx-tiny");
  w.kv_u32("general.alignment", 32);
  w.kv_u32(a + "context_length", 1u << 20);
  w.kv_u32(a + "embedding_length", static_cast<uint32_t>(H));
  w.kv_u32(a + "block_count", static_cast<uint32_t>(c.num_hidden_layers));
  w.kv_u32(a + "feed_forward_length", static_cast<uint32_t>(I));
  w.kv_u32(a + "attention.head_count", static_cast<uint32_t>(c.num_attention_heads));
  std::vector<int32_t> kv;
  for (const auto& t : c.layer_types)
    kv.push_back(t == "mamba" ? 0 : static_cast<int32_t>(c.num_key_value_heads));
  w.kv_i32s(a + "attention.head_count_kv", kv);
  w.kv_f32(a + "attention.layer_norm_rms_epsilon", static_cast<float>(c.norm_eps));
  w.kv_f32(a + "attention.scale", j.value("attention_multiplier", 1.0f));
  w.kv_f32(a + "embedding_scale", j.value("embedding_multiplier", 1.0f));
  w.kv_f32(a + "residual_scale", j.value("residual_multiplier", 1.0f));
  w.kv_f32(a + "logit_scale", j.value("logits_scaling", 1.0f));
  w.kv_u32(a + "expert_count", j.at("num_local_experts").get<uint32_t>());
  w.kv_u32(a + "expert_used_count", j.at("num_experts_per_tok").get<uint32_t>());
  w.kv_u32(a + "expert_shared_feed_forward_length", static_cast<uint32_t>(S));
  w.kv_u32(a + "ssm.conv_kernel", j.at("mamba_d_conv").get<uint32_t>());
  w.kv_u32(a + "ssm.state_size", j.at("mamba_d_state").get<uint32_t>());
  w.kv_u32(a + "ssm.group_count", static_cast<uint32_t>(G));
  w.kv_u32(a + "ssm.inner_size", static_cast<uint32_t>(inner));
  w.kv_u32(a + "ssm.time_step_rank", j.at("mamba_n_heads").get<uint32_t>());
  // NoPE: llama.cpp's granitehybrid applies rotary unless rope.scaling.finetuned says false (the converter
  // writes it from position_embedding_type).
  w.kv_bool(a + "rope.scaling.finetuned", j.value("position_embedding_type", std::string("nope")) == "rope");
  w.kv_u32(a + "vocab_size", static_cast<uint32_t>(c.vocab_size));
  add_gpt2_vocab(w, tok, c.vocab_size);
  if (c.bos_token_id) w.kv_u32("tokenizer.ggml.bos_token_id", static_cast<uint32_t>(*c.bos_token_id));
  if (!c.eos_token_ids.empty())
    w.kv_u32("tokenizer.ggml.eos_token_id", static_cast<uint32_t>(c.eos_token_ids[0]));
  auto rows = [](const Tensor& t, int64_t dim, int64_t from, int64_t n) {  // t[..., from:from+n, :] along dim
    Tensor f = t.to(DType::F32).contiguous();
    Shape shape = f.shape();
    int64_t outer = 1, inner_n = 1;
    for (int64_t d = 0; d < dim; d++) outer *= shape[static_cast<size_t>(d)];
    for (size_t d = static_cast<size_t>(dim) + 1; d < shape.size(); d++) inner_n *= shape[d];
    const int64_t len = shape[static_cast<size_t>(dim)];
    std::vector<float> src = f.to_floats(), out;
    for (int64_t o = 0; o < outer; o++)
      out.insert(out.end(), src.begin() + (o * len + from) * inner_n,
                 src.begin() + (o * len + from + n) * inner_n);
    shape[static_cast<size_t>(dim)] = n;
    return Tensor::from_floats(shape, out);
  };
  w.tensor("token_embd.weight", W.get("model.embed_tokens.weight"));
  for (int64_t i = 0; i < c.num_hidden_layers; i++) {
    std::string p = "model.layers." + std::to_string(i) + ".", q = "blk." + std::to_string(i) + ".";
    w.tensor(q + "attn_norm.weight", W.get(p + "input_layernorm.weight"));
    if (c.layer_types[static_cast<size_t>(i)] == "mamba") {
      add_ssd_mixer(w, W, p + "mamba.", q, inner, G, j.value("mamba_conv_bias", true));
    } else {
      for (const auto& [hf, gg] : std::vector<std::pair<std::string, std::string>>{
               {"q_proj", "attn_q"}, {"k_proj", "attn_k"}, {"v_proj", "attn_v"}, {"o_proj", "attn_output"}})
        w.tensor(q + gg + ".weight", W.get(p + "self_attn." + hf + ".weight"));
    }
    w.tensor(q + "ffn_norm.weight", W.get(p + "post_attention_layernorm.weight"));
    w.tensor(q + "ffn_gate_inp.weight", W.get(p + "block_sparse_moe.router.layer.weight"));
    Tensor in = W.get(p + "block_sparse_moe.input_linear.weight");
    w.tensor(q + "ffn_gate_exps.weight", rows(in, 1, 0, I));
    w.tensor(q + "ffn_up_exps.weight", rows(in, 1, I, I));
    w.tensor(q + "ffn_down_exps.weight", W.get(p + "block_sparse_moe.output_linear.weight"));
    Tensor sh = W.get(p + "shared_mlp.input_linear.weight");
    w.tensor(q + "ffn_gate_shexp.weight", rows(sh, 0, 0, S));
    w.tensor(q + "ffn_up_shexp.weight", rows(sh, 0, S, S));
    w.tensor(q + "ffn_down_shexp.weight", W.get(p + "shared_mlp.output_linear.weight"));
  }
  w.tensor("output_norm.weight", W.get("model.norm.weight"));
  if (!c.tie_word_embeddings) w.tensor("output.weight", W.get("lm_head.weight"));
  w.write(path);
}

/// A GGUF of an hfx model for the llama.cpp archs hfx's GGUF backend (hfx/export/gguf.h) does not map yet:
/// mamba2 and granitehybrid. The others are the backend's (`hfx export --format gguf`).
inline void write_gguf(const std::string& path, const std::string& arch, const CausalLM& m,
                       const nlohmann::json& tok) {
  if (arch == "mamba2") return write_mamba2(path, m, tok);
  if (arch == "granitehybrid") return write_granitehybrid(path, m, tok);
  HFX_THROW("test", "expected mamba2 or granitehybrid (the backend writes the other archs), got {}", arch);
}

}  // namespace hfx::test::gguf
