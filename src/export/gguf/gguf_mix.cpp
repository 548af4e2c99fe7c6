// llama-quantize's Q4_K_M and Q5_K_M mixes (llama.cpp's llama-quant.cpp, llama_tensor_get_type_impl for
// LLAMA_FTYPE_MOSTLY_Q4_K_M / _Q5_K_M, no importance matrix), applied to the planned file: Q4_K (Q5_K) by
// default, more bits where llama.cpp's authors measured they pay. The tensor categories are its name matches.
// llama-quantize walks (and writes) the tensors in its loader's order, layer by layer (weight_name_comparer:
// the block index, then the name, the other tensors first); the file takes that order, and the attn_v /
// ffn_down counters run in it, so the file is the one llama-quantize writes from hfx's f32 file.
// tests/interop/test_gguf.py holds it to llama.cpp's llama_model_quantize, byte for byte.
#include <algorithm>
#include <cstdio>
#include <optional>

#include "export/gguf/gguf_archs.h"
#include "hfx/core/error.h"

namespace hfx::gguf {

namespace {

bool has(const std::string& s, const char* part) { return s.find(part) != std::string::npos; }

// llama-quant.cpp's tensor_category by name (the order of its tests matters: attn_qkv before attn_v, ...).
enum class Cat { Output, TokenEmbd, AttnV, AttnK, AttnOutput, FfnDown, Other };
Cat category(const std::string& n) {
  if (n == "output.weight") return Cat::Output;
  if (n == "token_embd.weight") return Cat::TokenEmbd;
  if (has(n, "attn_qkv.weight") || has(n, "attn_kv_b.weight") || has(n, "attn_v.weight")) return Cat::AttnV;
  if (has(n, "attn_k.weight")) return Cat::AttnK;
  if (has(n, "attn_q.weight")) return Cat::Other;
  if (has(n, "attn_output.weight")) return Cat::AttnOutput;
  if (has(n, "ffn_up") || has(n, "ffn_gate")) return Cat::Other;
  if (has(n, "ffn_down")) return Cat::FfnDown;
  return Cat::Other;
}

// tensor_allows_quantization: the matrices (2-D or stacked experts) named "*weight", but the norms, routers,
// learned positions, token types and the small convolutions (the names of the archs hfx maps).
bool quantizable(const std::string& n, const Shape& shape) {
  if (shape.size() < 2 || !n.ends_with("weight")) return false;
  for (const char* keep : {"_norm.weight", "ffn_gate_inp.weight", "ssm_conv1d", "shortconv.conv.weight",
                           "attn_rel_b.weight", "altup", "laurel", "per_layer_model_proj"})
    if (has(n, keep)) return false;
  return n != "position_embd.weight" && n != "token_types.weight";
}

bool use_more_bits(int i, int n) { return i < n / 8 || i >= 7 * n / 8 || (i - n / 8) % 3 == 2; }

// tensor_type_fallback: a row that is not whole blocks of the chosen type takes the 32-block type beside it,
// then f16.
GgmlType fallback(const Shape& shape, GgmlType t) {
  const int64_t cols = shape.back();
  if (cols % ggml_block_size(t) == 0) return t;
  const GgmlType f = t == GgmlType::Q4_K   ? GgmlType::Q5_0
                     : t == GgmlType::Q5_K ? GgmlType::Q5_1
                     : t == GgmlType::Q6_K ? GgmlType::Q8_0
                                           : t;
  return cols % ggml_block_size(f) == 0 ? f : GgmlType::F16;
}

// llama.cpp's LLM_TYPE_70B (llama-model.cpp's per-arch layer counts): its attn_v takes Q5_K over Q4_K.
bool is_70b(const std::string& arch, const ModelConfig& c, int n_layer) {
  if (n_layer != 80) return false;
  if (arch == "llama") return c.num_attention_heads != c.num_key_value_heads;
  return arch == "qwen2" || arch == "olmo";
}

int layer_of(const std::string& name) {
  int layer = -1;
  std::sscanf(name.c_str(), "blk.%d.", &layer);
  return layer;
}

}  // namespace

uint32_t k_mix_file_type(KMix mix) { return mix == KMix::Q4_K_M ? 15u : 17u; }

std::optional<KMix> k_mix_of(const std::string& quantize) {
  if (quantize == "q4_k_m") return KMix::Q4_K_M;
  if (quantize == "q5_k_m") return KMix::Q5_K_M;
  return std::nullopt;
}

std::optional<KMix> k_mix_of_file_type(uint32_t file_type) {
  if (file_type == 15) return KMix::Q4_K_M;
  if (file_type == 17) return KMix::Q5_K_M;
  return std::nullopt;
}

void apply_k_mix(File& f, const std::string& arch, const ModelConfig& c, KMix mix) {
  const bool m4 = mix == KMix::Q4_K_M;
  const GgmlType base = m4 ? GgmlType::Q4_K : GgmlType::Q5_K;
  f.use_ggml_n_dims();
  f.reorder([](const std::string& a, const std::string& b) {
    const int la = layer_of(a), lb = layer_of(b);
    return la != lb ? la < lb : a < b;
  });
  int n_attn_v = 0, n_layer = 0;
  int64_t n_expert = 1;
  bool tied = true;
  for (const auto& [name, shape, type] : f.table()) {
    n_attn_v += category(name) == Cat::AttnV;
    tied = tied && name != "output.weight";
    n_layer = std::max(n_layer, layer_of(name) + 1);
    if (has(name, "_exps.") && shape.size() == 3) n_expert = std::max(n_expert, shape[0]);
  }
  // llama.cpp's n_layer_all: the block count (t5: the encoder's, its enc./dec. names hold no "blk.N."
  // prefix).
  if (arch == "t5") n_layer = static_cast<int>(c.raw.value("num_layers", int64_t{6}));
  int i_attn_v = 0, i_ffn_down = 0;
  const bool falcon = arch == "falcon", seventy = is_70b(arch, c, n_layer);
  f.retype([&](const std::string& name, const Shape& shape, GgmlType) {
    if (!quantizable(name, shape)) return GgmlType::F32;  // kept as hfx's f32 file (its input) holds it
    GgmlType t = base;
    switch (category(name)) {
      case Cat::TokenEmbd:
        if (!tied) break;
        [[fallthrough]];
      case Cat::Output:  // checked against the base type's blocks (256), before the fallback
        t = falcon || shape.back() % 256 != 0 ? GgmlType::Q8_0 : GgmlType::Q6_K;
        break;
      case Cat::AttnV:
        if (use_more_bits(i_attn_v, n_attn_v)) t = GgmlType::Q6_K;
        if (seventy && t == GgmlType::Q4_K) t = GgmlType::Q5_K;
        if (n_expert == 8) t = GgmlType::Q8_0;
        ++i_attn_v;
        break;
      case Cat::AttnK:
        if (n_expert == 8) t = GgmlType::Q8_0;
        break;
      case Cat::AttnOutput:  // (Q5_K_M's is its base type)
        if (!falcon && n_expert == 8) t = GgmlType::Q5_K;
        break;
      case Cat::FfnDown: {
        // llama.cpp's layer_info: the block index of an expert model's tensor, the count of a dense one's.
        const int layer = n_expert > 1 ? layer_of(name) : i_ffn_down;
        HFX_CHECK(layer >= 0, "gguf", "expected a block index in expert tensor {}, got none", name);
        if (!m4) {
          if (use_more_bits(layer, n_layer)) t = GgmlType::Q6_K;  // every arch, Falcon too
        } else if (falcon)
          t = layer < n_layer / 16            ? GgmlType::Q6_K
              : use_more_bits(layer, n_layer) ? GgmlType::Q5_K
                                              : GgmlType::Q4_K;
        else if (use_more_bits(layer, n_layer))
          t = GgmlType::Q6_K;
        ++i_ffn_down;
        break;
      }
      case Cat::Other:
        break;
    }
    return fallback(shape, t);
  });
}

}  // namespace hfx::gguf
