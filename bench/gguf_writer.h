// bench/gguf_writer.h — an F32 GGUF v3 writer for the llama.cpp comparison (bench support).
//
// Same layout as tests/models/gguf_writer.h (llama.cpp tensor names and the metadata its loader needs
// for the `llama` arch; q_proj/k_proj rows permuted into llama.cpp's interleaved rope layout, as
// convert_hf_to_gguf.py does), but streamed: tensors go to the file one at a time, so writing a
// ~400 MB model needs one tensor's f32 copy in memory, not the whole file. The vocabulary is a plain
// SPM-style list (ids only matter: the benchmarks feed token ids, never text).
#pragma once
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <functional>
#include <string>
#include <vector>

#include "hfx/core/error.h"
#include "hfx/core/tensor.h"
#include "hfx/models/model.h"

namespace hfx::bench::gguf {

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
  /// A tensor in torch layout, produced lazily as F32 when the data section is written.
  using Producer = std::function<Tensor()>;
  void tensor(const std::string& name, const Shape& shape, Producer p) {
    tensors_.push_back({name, shape, std::move(p)});
  }

  void write(const std::string& path) const {
    FILE* f = std::fopen(path.c_str(), "wb");
    if (!f) HFX_THROW("gguf", "cannot write {}", path);
    std::string head;
    auto put = [&](const void* p, size_t n) { head.append(static_cast<const char*>(p), n); };
    put("GGUF", 4);
    uint32_t version = 3;
    put(&version, 4);
    uint64_t nt = tensors_.size(), nk = kv_;
    put(&nt, 8);
    put(&nk, 8);
    head += meta_;
    uint64_t off = 0;
    for (const auto& t : tensors_) {
      uint64_t len = t.name.size();
      put(&len, 8);
      head += t.name;
      uint32_t nd = static_cast<uint32_t>(t.shape.size());
      put(&nd, 4);
      for (int64_t d = static_cast<int64_t>(t.shape.size()) - 1; d >= 0; d--) {
        uint64_t n = static_cast<uint64_t>(t.shape[d]);
        put(&n, 8);
      }
      uint32_t type = 0;  // GGML_TYPE_F32
      put(&type, 4);
      put(&off, 8);
      off += (static_cast<uint64_t>(shape_numel(t.shape)) * 4 + 31) / 32 * 32;
    }
    while (head.size() % 32) head.push_back('\0');
    std::fwrite(head.data(), 1, head.size(), f);
    static const char zeros[32] = {};
    for (const auto& t : tensors_) {
      Tensor x = t.make().to(DType::F32).contiguous();
      if (x.shape() != t.shape)
        HFX_THROW("gguf", "tensor {}: declared {} got {}", t.name, shape_to_string(t.shape),
                  shape_to_string(x.shape()));
      std::fwrite(x.raw(), 1, x.nbytes(), f);
      size_t pad = (32 - x.nbytes() % 32) % 32;
      std::fwrite(zeros, 1, pad, f);
    }
    if (std::fclose(f) != 0) HFX_THROW("gguf", "cannot write {}", path);
  }

 private:
  struct Entry {
    std::string name;
    Shape shape;
    Producer make;
  };
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
  std::vector<Entry> tensors_;
};

/// llama.cpp's rope row order for the llama arch: per head, rows (i, i + D/2) become (2i, 2i + 1).
inline Tensor permute_rows(const Tensor& w, int64_t heads) {
  Tensor t = w.to(DType::F32).contiguous();
  const int64_t rows = t.size(0), cols = t.size(1), D = rows / heads;
  Tensor r = Tensor::zeros({rows, cols});
  const float* s = t.data<float>();
  float* d = r.data<float>();
  for (int64_t h = 0; h < heads; h++)
    for (int64_t i = 0; i < D / 2; i++)
      for (int64_t half = 0; half < 2; half++)
        std::memcpy(d + (h * D + 2 * i + half) * cols, s + (h * D + half * (D / 2) + i) * cols,
                    cols * sizeof(float));
  return r;
}

/// A GGUF (arch "llama", F32) of an hfx llama model. Vocabulary: <unk>, <s>, </s>, 256 byte tokens,
/// then placeholder pieces up to vocab_size.
inline void write_llama(const std::string& path, const CausalLM& m) {
  const ModelConfig& c = m.config();
  const io::WeightStore& W = m.weights();
  const std::string arch = "llama";
  Writer w;
  w.kv_str("general.architecture", arch);
  w.kv_str("general.name", "hfx-bench");
  w.kv_u32("general.alignment", 32);
  w.kv_u32(arch + ".context_length", static_cast<uint32_t>(c.max_position_embeddings));
  w.kv_u32(arch + ".embedding_length", static_cast<uint32_t>(c.hidden_size));
  w.kv_u32(arch + ".block_count", static_cast<uint32_t>(c.num_hidden_layers));
  w.kv_u32(arch + ".feed_forward_length", static_cast<uint32_t>(c.intermediate_size));
  w.kv_u32(arch + ".attention.head_count", static_cast<uint32_t>(c.num_attention_heads));
  w.kv_u32(arch + ".attention.head_count_kv", static_cast<uint32_t>(c.num_key_value_heads));
  w.kv_u32(arch + ".attention.key_length", static_cast<uint32_t>(c.head_dim));
  w.kv_u32(arch + ".attention.value_length", static_cast<uint32_t>(c.head_dim));
  w.kv_u32(arch + ".rope.dimension_count", static_cast<uint32_t>(c.head_dim));
  w.kv_f32(arch + ".rope.freq_base", static_cast<float>(c.rope_theta));
  w.kv_f32(arch + ".attention.layer_norm_rms_epsilon", static_cast<float>(c.norm_eps));
  w.kv_u32(arch + ".vocab_size", static_cast<uint32_t>(c.vocab_size));
  const int64_t V = c.vocab_size;
  std::vector<std::string> tokens(V);
  std::vector<int32_t> types(V, 1);
  std::vector<float> scores(V, 0.0f);
  for (int64_t i = 0; i < V; i++) {
    if (i == 0)
      tokens[i] = "<unk>", types[i] = 2;
    else if (i == 1)
      tokens[i] = "<s>", types[i] = 3;
    else if (i == 2)
      tokens[i] = "</s>", types[i] = 3;
    else if (i < 3 + 256) {
      char b[8];
      std::snprintf(b, sizeof b, "<0x%02X>", static_cast<unsigned>(i - 3));
      tokens[i] = b, types[i] = 6;
    } else {
      tokens[i] = "\xe2\x96\x81t" + std::to_string(i);
      scores[i] = -static_cast<float>(i);
    }
  }
  w.kv_str("tokenizer.ggml.model", "llama");
  w.kv_strs("tokenizer.ggml.tokens", tokens);
  w.kv_f32s("tokenizer.ggml.scores", scores);
  w.kv_i32s("tokenizer.ggml.token_type", types);
  w.kv_u32("tokenizer.ggml.bos_token_id", 1);
  w.kv_u32("tokenizer.ggml.eos_token_id", 2);
  auto plain = [&](const std::string& hf) { return [&W, hf] { return W.get(hf); }; };
  auto shape = [&](const std::string& hf) { return W.info(hf).shape; };
  w.tensor("token_embd.weight", shape("model.embed_tokens.weight"), plain("model.embed_tokens.weight"));
  for (int64_t i = 0; i < c.num_hidden_layers; i++) {
    std::string p = "model.layers." + std::to_string(i) + ".", q = "blk." + std::to_string(i) + ".";
    w.tensor(q + "attn_norm.weight", shape(p + "input_layernorm.weight"),
             plain(p + "input_layernorm.weight"));
    std::string wq = p + "self_attn.q_proj.weight", wk = p + "self_attn.k_proj.weight";
    int64_t H = c.num_attention_heads, K = c.num_key_value_heads;
    w.tensor(q + "attn_q.weight", shape(wq), [&W, wq, H] { return permute_rows(W.get(wq), H); });
    w.tensor(q + "attn_k.weight", shape(wk), [&W, wk, K] { return permute_rows(W.get(wk), K); });
    w.tensor(q + "attn_v.weight", shape(p + "self_attn.v_proj.weight"), plain(p + "self_attn.v_proj.weight"));
    w.tensor(q + "attn_output.weight", shape(p + "self_attn.o_proj.weight"),
             plain(p + "self_attn.o_proj.weight"));
    w.tensor(q + "ffn_norm.weight", shape(p + "post_attention_layernorm.weight"),
             plain(p + "post_attention_layernorm.weight"));
    w.tensor(q + "ffn_gate.weight", shape(p + "mlp.gate_proj.weight"), plain(p + "mlp.gate_proj.weight"));
    w.tensor(q + "ffn_up.weight", shape(p + "mlp.up_proj.weight"), plain(p + "mlp.up_proj.weight"));
    w.tensor(q + "ffn_down.weight", shape(p + "mlp.down_proj.weight"), plain(p + "mlp.down_proj.weight"));
  }
  w.tensor("output_norm.weight", shape("model.norm.weight"), plain("model.norm.weight"));
  if (!c.tie_word_embeddings) w.tensor("output.weight", shape("lm_head.weight"), plain("lm_head.weight"));
  w.write(path);
}

}  // namespace hfx::bench::gguf
