// tests/models/encoder_test_util.h — helpers shared by the encoder-only tests (goldens, ONNX Runtime,
// Transformers.js, .pt2): the heads and their golden names, tiny checkpoints on disk made exactly as
// `hfx create-tiny ARCH --head H` makes them, right-padded batches and the eager forward on host vectors.
#pragma once
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <ostream>
#include <string>
#include <vector>

#include "hfx/models/model.h"
#include "hfx/models/tiny.h"
#include "hfx/ops/builder.h"
#include "models/model_test_util.h"

namespace hfx::test {

/// The four encoder heads (Architecture::heads names) and the names of their golden files.
inline const std::vector<std::pair<std::string, std::string>>& encoder_heads_and_golden_names() {
  static const std::vector<std::pair<std::string, std::string>> h = {{"base", "base"},
                                                                     {"masked_lm", "mlm"},
                                                                     {"sequence_classification", "seqcls"},
                                                                     {"token_classification", "tokcls"}};
  return h;
}

/// (model_type, head) for every encoder architecture and head.
struct EncoderParam {
  std::string arch, head;
};
inline void PrintTo(const EncoderParam& p, std::ostream* os) { *os << p.arch << " " << p.head; }
inline std::vector<EncoderParam> encoder_params() {
  std::vector<EncoderParam> v;
  for (const auto& a : encoder_model_types())
    for (const auto& [h, g] : encoder_heads_and_golden_names()) v.push_back({a, h});
  return v;
}
inline std::string encoder_param_name(const ::testing::TestParamInfo<EncoderParam>& i) {
  return param_name(i.param.arch + "_" + i.param.head);
}

/// `hfx create-tiny ARCH -o DIR --head HEAD` (seed 0, preset tiny).
inline nlohmann::json create_tiny_encoder(const std::string& arch, const std::string& head,
                                          const std::string& dir) {
  TinyOptions o;
  o.head = head;
  return create_tiny(arch, dir, o);
}

/// Rows right-padded with `pad` into input_ids/attention_mask [B, T], as tokenizers pad encoder inputs.
struct Padded {
  int64_t B = 0, T = 0;
  std::vector<int64_t> ids, mask, lengths;
};
inline Padded right_pad(const std::vector<std::vector<int64_t>>& rows, int64_t pad) {
  Padded p;
  p.B = static_cast<int64_t>(rows.size());
  for (const auto& r : rows) p.T = std::max<int64_t>(p.T, static_cast<int64_t>(r.size()));
  for (const auto& r : rows) {
    p.lengths.push_back(static_cast<int64_t>(r.size()));
    for (int64_t t = 0; t < p.T; t++) {
      bool real = t < static_cast<int64_t>(r.size());
      p.ids.push_back(real ? r[t] : pad);
      p.mask.push_back(real ? 1 : 0);
    }
  }
  return p;
}

/// The model's one output (last_hidden_state or logits) for a batch, eagerly (token_type_ids zeros).
inline Tensor encoder_forward(const Model& m, const Padded& p) {
  EagerBuilder b;
  NamedVars in{{"input_ids", b.wrap(Tensor::from_ints({p.B, p.T}, p.ids))},
               {"attention_mask", b.wrap(Tensor::from_ints({p.B, p.T}, p.mask))}};
  for (const auto& d : m.component("model").inputs)
    if (d.name == "token_type_ids")
      in.emplace_back("token_type_ids",
                      b.wrap(Tensor::from_ints({p.B, p.T}, std::vector<int64_t>(p.ids.size(), 0))));
  NamedVars out = m.call("model", b, in);
  return out.at(0).second.tensor().contiguous();
}

/// Deterministic rows of the given lengths over ids in [lo, hi) that avoid `avoid` (the pad id).
inline std::vector<std::vector<int64_t>> sample_rows(const std::vector<int64_t>& lengths, int64_t lo,
                                                     int64_t hi, int64_t avoid, uint64_t seed) {
  std::vector<std::vector<int64_t>> rows;
  uint64_t s = seed * 0x9e3779b97f4a7c15ull + 1;
  for (int64_t n : lengths) {
    std::vector<int64_t> r;
    while (static_cast<int64_t>(r.size()) < n) {
      s = s * 6364136223846793005ull + 1442695040888963407ull;
      int64_t id = lo + static_cast<int64_t>((s >> 33) % static_cast<uint64_t>(hi - lo));
      if (id != avoid) r.push_back(id);
    }
    rows.push_back(r);
  }
  return rows;
}

/// Max |a - b| over the real (unpadded) positions of [B, T, D] outputs, or over all of a [B, L] output.
inline double max_abs_diff_real(const Tensor& a, const Tensor& b, const std::vector<int64_t>& lengths) {
  Tensor x = a.contiguous(), y = b.contiguous();
  EXPECT_EQ(x.shape(), y.shape());
  if (x.shape() != y.shape()) return 1e30;
  const float* p = x.data<float>();
  const float* q = y.data<float>();
  double worst = 0;
  if (x.dim() == 2) {
    for (int64_t i = 0; i < x.numel(); i++)
      worst = std::max(worst, static_cast<double>(std::fabs(p[i] - q[i])));
    return worst;
  }
  const int64_t T = x.size(1), D = x.size(2);
  for (int64_t bi = 0; bi < x.size(0); bi++)
    for (int64_t t = 0; t < lengths[bi]; t++)
      for (int64_t d = 0; d < D; d++) {
        int64_t k = (bi * T + t) * D + d;
        worst = std::max(worst, static_cast<double>(std::fabs(p[k] - q[k])));
      }
  return worst;
}

}  // namespace hfx::test
