// hfx.moe: a sparse mixture-of-experts MLP, computed sparsely. Routing per token: softmax over the
// router logits, the top_k largest probabilities (ties to the lower expert index, as the decomposition's
// repeated argmax), optionally renormalized to sum 1. Each expert then runs only on the tokens routed to
// it: their rows are gathered into one [n, H] block so the projections are single sgemm calls (through
// kernels::linear), and the weighted outputs are scattered back. Weights come either stacked
// (gate_up [E, 2I, H], gate rows first or alternating with up rows, down [E, H, I]) or as E (gate [I, H], up
// [I, H], down [H, I]) triples, the layouts checked by the op's shape rule.
#include <algorithm>
#include <cmath>
#include <numeric>

#include "hfx/core/error.h"
#include "kernels/kernels.h"

namespace hfx::kernels {
namespace {

float act_of(float g, const std::string& act) {
  if (act == "silu") return g / (1.0f + std::exp(-g));
  if (act == "relu") return g > 0 ? g : 0.0f;
  if (act == "gelu") return 0.5f * g * (1.0f + std::erf(g / std::sqrt(2.0f)));
  if (act == "gelu_tanh") {
    const float k = std::sqrt(2.0f / 3.14159265358979f);
    return 0.5f * g * (1.0f + std::tanh(k * (g + 0.044715f * g * g * g)));
  }
  HFX_THROW("kernels", "expected hfx.moe act silu, relu, gelu or gelu_tanh, got '{}'", act);
}

// Routing of `T` tokens over `E` experts: per expert, the (token, weight) pairs routed to it.
std::vector<std::vector<std::pair<int64_t, float>>> route(const std::vector<float>& logits, int64_t T,
                                                          int64_t E, int64_t k, bool normalize) {
  std::vector<std::vector<std::pair<int64_t, float>>> r(static_cast<size_t>(E));
  std::vector<float> p(static_cast<size_t>(E));
  std::vector<int64_t> idx(static_cast<size_t>(E));
  for (int64_t t = 0; t < T; t++) {
    const float* l = logits.data() + t * E;
    float mx = *std::max_element(l, l + E), sum = 0.0f;
    for (int64_t e = 0; e < E; e++) sum += (p[e] = std::exp(l[e] - mx));
    for (int64_t e = 0; e < E; e++) p[e] /= sum;
    std::iota(idx.begin(), idx.end(), 0);
    std::stable_sort(idx.begin(), idx.end(), [&](int64_t a, int64_t b) { return p[a] > p[b]; });
    float top = 0.0f;
    for (int64_t j = 0; j < k; j++) top += p[idx[j]];
    for (int64_t j = 0; j < k; j++) r[idx[j]].push_back({t, normalize ? p[idx[j]] / top : p[idx[j]]});
  }
  return r;
}

}  // namespace

Tensors moe(const Tensors& in, const Attrs& a) {
  const Tensor& x = in.at(0);
  const int64_t H = x.size(-1), T = x.numel() / std::max<int64_t>(H, 1), E = in.at(1).size(-1);
  const bool stacked = in.size() == 4 && in[2].dim() == 3;
  const std::string act = a.s("act");
  // Eager calls skip the shape rule: the checks that would otherwise index out of range.
  if (a.i("top_k") < 1 || a.i("top_k") > E)
    HFX_THROW("kernels", "expected hfx.moe top_k in [1, {}] (the expert count), got {}", E, a.i("top_k"));
  if (!stacked && static_cast<int64_t>(in.size()) != 2 + 3 * E)
    HFX_THROW("kernels",
              "expected hfx.moe to get {} expert weights (gate, up, down for each of {} experts) or stacked "
              "gate_up [E, 2I, H] and down [E, H, I], got {} inputs",
              3 * E, E, in.size() - 2);
  if (stacked &&
      (in[2].size(0) != E || in[3].dim() != 3 || in[3].size(0) != E || in[2].size(1) != 2 * in[3].size(2)))
    HFX_THROW("kernels", "expected hfx.moe gate_up [{}, 2I, H] and down [{}, H, I], got {} and {}", E, E,
              shape_to_string(in[2].shape()), shape_to_string(in[3].shape()));
  auto routes = route(in[1].to_floats(), T, E, a.i("top_k"), a.b("normalize"));
  const std::vector<float> xf = x.to_floats();
  std::vector<float> out(static_cast<size_t>(T * H), 0.0f);
  for (int64_t e = 0; e < E; e++) {
    const auto& rt = routes[static_cast<size_t>(e)];
    if (rt.empty()) continue;
    Tensor gate_w, up_w, down_w;
    if (stacked) {
      Tensor gu = in[2].select(0, e);
      const int64_t I = gu.size(0) / 2;
      const bool il = a.b("interleaved");
      gate_w = il ? gu.slice(0, 0, 2 * I, 2) : gu.slice(0, 0, I);
      up_w = il ? gu.slice(0, 1, 2 * I, 2) : gu.slice(0, I, 2 * I);
      down_w = in[3].select(0, e);
    } else {
      gate_w = in[2 + 3 * e], up_w = in[3 + 3 * e], down_w = in[4 + 3 * e];
    }
    const int64_t n = static_cast<int64_t>(rt.size());
    std::vector<float> rows(static_cast<size_t>(n * H));
    for (int64_t j = 0; j < n; j++) std::copy_n(xf.data() + rt[j].first * H, H, rows.data() + j * H);
    Tensor xr = Tensor::from_floats({n, H}, rows);
    Tensor g = linear({xr, gate_w}, {})[0].to(DType::F32), u = linear({xr, up_w}, {})[0].to(DType::F32);
    float* gp = g.data<float>();
    const float* up = u.data<float>();
    for (int64_t i = 0; i < g.numel(); i++) gp[i] = act_of(gp[i], act) * up[i];
    Tensor y = linear({g, down_w}, {})[0].to(DType::F32);  // [n, H]
    const float* yp = y.data<float>();
    for (int64_t j = 0; j < n; j++)
      for (int64_t h = 0; h < H; h++) out[rt[j].first * H + h] += rt[j].second * yp[j * H + h];
  }
  DType dt = dtype_is_float(x.dtype()) ? x.dtype() : DType::F32;
  return {Tensor::from_floats(x.shape(), out).to(dt)};
}

}  // namespace hfx::kernels
