// tests/models/ssm_test_util.h — helpers shared by the state-space model tests (mamba, mamba2): calls of
// component `model` with the conv/ssm leaves carried by their declared names, and the check against
// goldens that transformers decoded by full recomputation (tools/hf_goldens/make_nocache_goldens.sh).
#pragma once
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdio>

#include "hfx/io/safetensors.h"
#include "models/model_test_util.h"

namespace hfx::test {

/// Logits of one call of component `model` at the last position of each row: [B][V].
inline std::vector<std::vector<float>> last_rows(const Var& logits) {
  Tensor t = logits.tensor().contiguous();
  const int64_t B = t.size(0), S = t.size(1), V = t.size(2);
  std::vector<std::vector<float>> r(static_cast<size_t>(B));
  for (int64_t b = 0; b < B; b++)
    r[b].assign(t.data<float>() + (b * S + S - 1) * V, t.data<float>() + (b * S + S) * V);
  return r;
}

inline int64_t argmax(const std::vector<float>& v) {
  return std::max_element(v.begin(), v.end()) - v.begin();
}

inline double max_abs(const std::vector<float>& a, const std::vector<float>& b) {
  double m = 0;
  for (size_t i = 0; i < a.size(); i++) m = std::max(m, std::fabs(static_cast<double>(a[i]) - b[i]));
  return m;
}

/// One call of component `model`: ids/mask [B, *], the carried leaves appended.
inline NamedVars call(const Model& m, EagerBuilder& b, const Batch& in, const NamedVars& leaves,
                      bool use_cache = true) {
  NamedVars args{{"input_ids", b.wrap(ints({in.B, in.T}, in.ids))},
                 {"attention_mask", b.wrap(ints({in.B, in.T}, in.mask))}};
  args.insert(args.end(), leaves.begin(), leaves.end());
  return m.call("model", b, args, CallOptions{1, use_cache});
}

/// The present leaves of `out` renamed to the past inputs they feed.
inline NamedVars carry(const Model& m, const NamedVars& out) {
  NamedVars r;
  for (const CacheLeafDecl& c : m.component("model").cache)
    if (Var v = get(out, c.present_output)) r.emplace_back(c.past_input, v);
  return r;
}

/// Eager against tests/data/goldens/ARCH-lm.json on the checkpoint create-tiny writes (its sha256 checked
/// first): each prompt's last-position logits in one call, then its greedy tokens decoded with the cache
/// (one token per call). Returns {worst last-logit difference, worst greedy-step logit difference}.
inline std::pair<double, double> check_nocache_goldens(const std::string& arch) {
  const nlohmann::json g = nlohmann::json::parse(
      io::read_file(std::string(HFX_SOURCE_DIR) + "/tests/data/goldens/" + arch + "-lm.json"));
  TempDir dir(arch + "_goldens");
  create_tiny(arch, dir.path.string());
  EXPECT_EQ(io::sha256_file((dir.path / "model.safetensors").string()),
            g["weights_sha256"].get<std::string>())
      << "create-tiny " << arch
      << " no longer writes the checkpoint the goldens were made from; rerun "
         "tools/hf_goldens/make_nocache_goldens.sh";
  auto m = load_causal_lm(dir.path.string());
  double worst_logit = 0, worst_step = 0;
  for (const auto& p : g["prompts"]) {
    std::vector<int64_t> ids = p["ids"].get<std::vector<int64_t>>();
    std::vector<float> want = p["last_logits"].get<std::vector<float>>();
    EagerBuilder b;
    NamedVars out = call(*m, b, left_pad({ids}), {});
    worst_logit = std::max(worst_logit, max_abs(last_rows(get(out, "logits"))[0], want));
    std::vector<int64_t> want_tokens = p["greedy_new_tokens"].get<std::vector<int64_t>>(), got;
    std::vector<float> want_step = p["greedy_step_logits"].get<std::vector<float>>();
    std::vector<int64_t> mask(ids.size(), 1);
    for (size_t i = 0; i < want_tokens.size(); i++) {
      std::vector<float> row = last_rows(get(out, "logits"))[0];
      int64_t t = argmax(row);
      got.push_back(t);
      worst_step =
          std::max(worst_step, std::fabs(static_cast<double>(row[static_cast<size_t>(t)]) - want_step[i]));
      mask.push_back(1);
      // input_ids [1, 1], attention_mask [1, past + 1], the carried leaves
      NamedVars args{{"input_ids", b.wrap(ints({1, 1}, {t}))},
                     {"attention_mask", b.wrap(ints({1, static_cast<int64_t>(mask.size())}, mask))}};
      NamedVars leaves = carry(*m, out);
      args.insert(args.end(), leaves.begin(), leaves.end());
      out = m->call("model", b, args, CallOptions{1, true});
    }
    EXPECT_EQ(got, want_tokens) << arch << ", prompt of " << ids.size() << " tokens";
  }
  std::printf("[%s goldens] worst |logit - transformers| %.3g (last positions), %.3g (greedy steps)\n",
              arch.c_str(), worst_logit, worst_step);
  return {worst_logit, worst_step};
}

}  // namespace hfx::test
