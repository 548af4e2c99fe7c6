// The mixture-of-experts feed-forward of llama.cpp's decoder archs, as convert_hf_to_gguf.py writes it: the
// router as ffn_gate_inp, the experts stacked into ffn_{gate,up,down}_exps [E, rows, cols], qwen2moe's shared
// expert as ffn_*_shexp with its gate ffn_gate_inp_shexp (HunYuan's without one), granitemoe's fused
// input_linear split into gate and up.
#include <cstring>

#include "export/gguf/gguf_archs.h"
#include "hfx/core/error.h"

namespace hfx::gguf {

void stack_experts(Out& o, const std::string& gg, int64_t experts, std::function<std::string(int64_t)> name) {
  const Shape s = o.W.info(name(0)).shape;
  o.put(
      gg, {experts, s[0], s[1]},
      [w = &o.W, experts, name, s] {
        Tensor out = Tensor::zeros({experts, s[0], s[1]});
        const auto n = static_cast<size_t>(s[0] * s[1]);
        for (int64_t e = 0; e < experts; e++) {
          const Tensor t = w->get(name(e)).to(DType::F32).contiguous();
          HFX_CHECK(t.shape() == s, "gguf", "expected expert {} of shape {}, got {}", name(e),
                    shape_to_string(s), shape_to_string(t.shape()));
          std::memcpy(out.data<float>() + static_cast<size_t>(e) * n, t.data<float>(), n * sizeof(float));
        }
        return out;
      },
      [experts, name](const Tensor& t, Into& in) {
        for (int64_t e = 0; e < experts; e++) in.set(name(e), t.slice(0, e, e + 1).contiguous());
      });
}

namespace {

// A fused [E, 2I, H] (or [2S, H]) tensor's first or second half along dim as its own tensor.
void half(Out& o, const std::string& gg, const std::string& hf, int64_t dim, int64_t which) {
  const int64_t n = o.W.info(hf).shape[static_cast<size_t>(dim)] / 2;
  o.slice(gg, hf, dim, which * n, n);
}

int64_t expert_count(const ModelConfig& c) {
  return c.raw.contains("num_local_experts") ? c.raw["num_local_experts"].get<int64_t>()
                                             : c.raw.at("num_experts").get<int64_t>();
}

}  // namespace

bool is_moe(const io::WeightStore& W, const std::string& p) {
  return W.has(p + "block_sparse_moe.gate.weight") || W.has(p + "mlp.gate.weight") ||
         W.has(p + "mlp.gate.wg.weight") || W.has(p + "block_sparse_moe.router.layer.weight");
}

void moe_keys(Out& o, const std::string& arch, const ModelConfig& c) {
  File& f = o.f;
  f.kv_u32(arch + ".expert_count", static_cast<uint32_t>(expert_count(c)));
  f.kv_u32(arch + ".expert_used_count", c.raw.at("num_experts_per_tok").get<uint32_t>());
  if (arch == "hunyuan-moe") {  // experts and the shared MLP both of intermediate_size (as transformers)
    f.kv_u32(arch + ".expert_feed_forward_length", static_cast<uint32_t>(c.intermediate_size));
    f.kv_u32(arch + ".expert_shared_feed_forward_length", static_cast<uint32_t>(c.intermediate_size));
  } else if (c.raw.contains("moe_intermediate_size")) {
    f.kv_u32(arch + ".expert_feed_forward_length", c.raw["moe_intermediate_size"].get<uint32_t>());
  }
  if (c.raw.contains("shared_intermediate_size") && c.raw["shared_intermediate_size"].get<int64_t>() > 0)
    f.kv_u32(arch + ".expert_shared_feed_forward_length",  // GraniteMoeShared's shared MLP
             c.raw["shared_intermediate_size"].get<uint32_t>());
  if (c.raw.contains("shared_expert_intermediate_size"))
    f.kv_u32(arch + ".expert_shared_feed_forward_length",
             c.raw["shared_expert_intermediate_size"].get<uint32_t>());
  // llama.cpp renormalizes the top-k routing weights or not per arch (models/*.cpp build_moe_ffn):
  // transformers' norm_topk_prob must say the same, or the file computes another model.
  const bool norm = arch == "llama" || arch == "qwen3moe" || arch == "granitemoe" || arch == "hunyuan-moe";
  if (c.raw.contains("norm_topk_prob") && c.raw["norm_topk_prob"].is_boolean())
    HFX_CHECK(c.raw["norm_topk_prob"].get<bool>() == norm, "gguf",
              "expected norm_topk_prob {} for llama.cpp's {} arch (it {} the top-k routing weights), got {}",
              norm, arch, norm ? "renormalizes" : "keeps", c.raw["norm_topk_prob"].get<bool>());
}

void add_moe_ffn(Out& o, const ModelConfig& c, const std::string& p, const std::string& q) {
  const int64_t E = expert_count(c);
  auto ex = [p](const std::string& mid, const std::string& w) {
    return [p, mid, w](int64_t e) { return p + mid + std::to_string(e) + "." + w + ".weight"; };
  };
  if (o.W.has(p + "block_sparse_moe.gate.weight")) {  // Mixtral: w1 gate, w3 up, w2 down
    o.copy(q + "ffn_gate_inp.weight", p + "block_sparse_moe.gate.weight");
    stack_experts(o, q + "ffn_gate_exps.weight", E, ex("block_sparse_moe.experts.", "w1"));
    stack_experts(o, q + "ffn_up_exps.weight", E, ex("block_sparse_moe.experts.", "w3"));
    stack_experts(o, q + "ffn_down_exps.weight", E, ex("block_sparse_moe.experts.", "w2"));
  } else if (o.W.has(p + "block_sparse_moe.router.layer.weight")) {  // GraniteMoe: input_linear [E, 2I, H]
    const std::string in = p + "block_sparse_moe.input_linear.weight";
    o.copy(q + "ffn_gate_inp.weight", p + "block_sparse_moe.router.layer.weight");
    half(o, q + "ffn_gate_exps.weight", in, 1, 0);
    half(o, q + "ffn_up_exps.weight", in, 1, 1);
    o.copy(q + "ffn_down_exps.weight", p + "block_sparse_moe.output_linear.weight");
  } else {  // Qwen2-MoE, Qwen3-MoE, OLMoE, HunYuan: mlp.experts.N.{gate,up,down}_proj (or transformers 5's
            // fused ones)
    o.copy(q + "ffn_gate_inp.weight",
           p + (o.W.has(p + "mlp.gate.wg.weight") ? "mlp.gate.wg.weight" : "mlp.gate.weight"));
    if (o.W.has(p + "mlp.experts.gate_up_proj")) {
      half(o, q + "ffn_gate_exps.weight", p + "mlp.experts.gate_up_proj", 1, 0);
      half(o, q + "ffn_up_exps.weight", p + "mlp.experts.gate_up_proj", 1, 1);
      o.copy(q + "ffn_down_exps.weight", p + "mlp.experts.down_proj");
    } else {
      for (const char* w : {"gate", "up", "down"})
        stack_experts(o, q + "ffn_" + w + "_exps.weight", E, ex("mlp.experts.", std::string(w) + "_proj"));
    }
  }
  if (o.W.has(p + "shared_mlp.input_linear.weight")) {  // GraniteMoeShared: the fused [2S, H] split
    half(o, q + "ffn_gate_shexp.weight", p + "shared_mlp.input_linear.weight", 0, 0);
    half(o, q + "ffn_up_shexp.weight", p + "shared_mlp.input_linear.weight", 0, 1);
    o.copy(q + "ffn_down_shexp.weight", p + "shared_mlp.output_linear.weight");
  }
  if (o.W.has(p + "mlp.shared_mlp.gate_proj.weight"))  // HunYuan's, added without a gate
    for (const char* w : {"gate", "up", "down"})
      o.copy(q + "ffn_" + w + "_shexp.weight", p + "mlp.shared_mlp." + w + "_proj.weight");
  if (o.W.has(p + "mlp.shared_expert.gate_proj.weight")) {
    for (const char* w : {"gate", "up", "down"})
      o.copy(q + "ffn_" + w + "_shexp.weight", p + "mlp.shared_expert." + w + "_proj.weight");
    const int64_t H = c.hidden_size;  // [1, H] → llama.cpp's {n_embd}
    o.reshaped(q + "ffn_gate_inp_shexp.weight", p + "mlp.shared_expert_gate.weight", {H});
  }
}

}  // namespace hfx::gguf
