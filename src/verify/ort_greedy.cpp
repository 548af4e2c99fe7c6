// The end-to-end greedy check of `hfx verify` in ONNX Runtime (ort_internal.h): the export's prefill and
// decode sessions drive the runtime's Generator against the eager model's own greedy tokens; under lossy
// precision keys a row may part from eager only where eager's own top-2 margin is within the logit bound.
#include <algorithm>
#include <cmath>

#include <fmt/format.h>

#include "hfx/core/error.h"
#include "hfx/runtime/generator.h"
#include "hfx/runtime/ort_session.h"
#include "verify/ort_internal.h"

namespace hfx::verify::detail {
using nlohmann::json;
using rt::NamedTensors;
using rt::OrtSession;
using rt::RtTensor;

namespace {

// Generation over sessions: prefill (optional) then `step` for every later token.
class SessionEngine : public Engine {
 public:
  SessionEngine(const OrtSession* prefill, const OrtSession* step, const CausalLM& m)
      : prefill_(prefill), step_(step), m_(m) {}
  std::string name() const override { return "ort"; }
  int64_t vocab_size() const override { return m_.config().vocab_size; }
  void reset() override {
    past_.clear();
    past_len_ = 0;
  }
  int64_t past_length() const override { return past_len_; }
  void step(std::span<const int64_t> ids, std::span<const int64_t> mask, std::span<const int64_t> pos,
            int64_t batch, int64_t seq, std::vector<float>& logits) override {
    const OrtSession* s = (past_len_ == 0 && prefill_) ? prefill_ : step_;
    NamedTensors f;
    f.push_back({"input_ids", RtTensor::i64({batch, seq}, ids)});
    f.push_back({"attention_mask", RtTensor::i64({batch, past_len_ + seq}, mask)});
    f.push_back({"position_ids", RtTensor::i64({batch, seq}, pos)});
    const auto& layout = m_.cache_layout();
    if (s != prefill_) {
      for (size_t i = 0; i < layout.size(); i++)
        for (int kv = 0; kv < 2; kv++) {
          std::string n = fmt::format("past_key_values.{}.{}", i, kv ? "value" : "key");
          if (past_.empty())
            f.push_back({n, RtTensor::zeros(s->input(n).dtype,
                                            {batch, layout[i].num_kv_heads, 0, layout[i].head_dim})});
          else
            f.push_back({n, std::move(past_[2 * i + kv])});
        }
    }
    NamedTensors out = s->run(f);
    past_.clear();
    for (size_t i = 0; i < layout.size() * 2; i++) past_.push_back(rt::find_tensor(out, present_name(i)));
    const RtTensor& lg = rt::find_tensor(out, "logits");
    std::vector<float> all = lg.to_f32();
    const int64_t V = lg.shape.back(), S = lg.shape[1];
    logits.resize(static_cast<size_t>(batch * V));
    for (int64_t b = 0; b < batch; b++)
      std::copy_n(all.begin() + (b * S + S - 1) * V, V, logits.begin() + b * V);
    past_len_ += seq;
  }

 private:
  const OrtSession* prefill_;
  const OrtSession* step_;
  const CausalLM& m_;
  std::vector<RtTensor> past_;
  int64_t past_len_ = 0;
};

// Greedy tokens through the artifact vs eager, batch 1 and batch 3 (left-padded prompts of 5, 9, 3 tokens).
// Eager's next-token logits after `ids` (one row, no padding): the gap between its top two, and its
// largest |logit| (the scale the logits bound grows with).
struct Top2 {
  double margin = 0, max_abs = 0;
};
Top2 eager_top2_margin(const CausalLM& m, const std::vector<int64_t>& ids) {
  EagerBuilder b;
  ForwardArgs a;
  a.input_ids = b.wrap(Tensor::from_ints({1, static_cast<int64_t>(ids.size())}, ids));
  a.logits_to_keep = 1;
  std::vector<float> l = m.forward(b, a).logits.tensor().contiguous().to_floats();
  std::partial_sort(l.begin(), l.begin() + 2, l.end(), std::greater<float>());
  const float lo = *std::min_element(l.begin(), l.end());
  return {static_cast<double>(l[0]) - static_cast<double>(l[1]),
          std::max(std::fabs(static_cast<double>(l[0])), std::fabs(static_cast<double>(lo)))};
}

// Token by token, eager's rows against the artifact's: counts, the first difference, and (lossy
// precisions) the rows that part at a near-tie, after which the row is not compared.
void compare_rows(const Context& cx, const std::vector<std::vector<int64_t>>& prompts,
                  const std::vector<std::vector<int64_t>>& eager,
                  const std::vector<std::vector<int64_t>>& art, int64_t& agree, int64_t& total,
                  std::string& first, json& near_ties) {
  const CausalLM& m = *cx.model;
  for (size_t b = 0; b < prompts.size(); b++) {
    for (size_t i = 0; i < std::max(eager[b].size(), art[b].size()); i++) {
      total++;
      bool same = i < eager[b].size() && i < art[b].size() && eager[b][i] == art[b][i];
      if (same) {
        agree++;
        continue;
      }
      if (cx.tol.key != "exact" && i < eager[b].size()) {
        std::vector<int64_t> ctx = prompts[b];
        ctx.insert(ctx.end(), eager[b].begin(), eager[b].begin() + static_cast<std::ptrdiff_t>(i));
        const Top2 top = eager_top2_margin(m, ctx);
        const double bound = cx.tol.logits_bound(top.max_abs);
        if (top.margin <= 2 * bound) {
          near_ties.push_back(
              {{"row", b}, {"token", i}, {"eager_margin", top.margin}, {"logits_bound", bound}});
          break;
        }
      }
      if (first.empty())
        first = fmt::format("row {} token {}: eager {} vs artifact {}", b, i,
                            i < eager[b].size() ? eager[b][i] : -1, i < art[b].size() ? art[b][i] : -1);
    }
  }
}

// The note naming the rows that parted at a near-tie (lossy precisions only); empty when none did.
std::string near_tie_note(const Context& cx, const json& runs) {
  std::string tie_note;
  size_t ties = 0;
  for (const auto& r : runs)
    for (const auto& t : r["near_ties"]) {
      if (ties++ == 0)
        tie_note = fmt::format("batch {} row {} at token {} (eager's top-2 margin {:.3g} <= 2 x {:.2g})",
                               r["batch"].get<int>(), t["row"].get<int>(), t["token"].get<size_t>(),
                               t["eager_margin"].get<double>(), t["logits_bound"].get<double>());
    }
  if (ties)
    tie_note = fmt::format(", except {} row(s) parting at a near-tie under '{}' precision: {}", ties,
                           cx.tol.key, tie_note);
  return tie_note;
}

}  // namespace

// Greedy decoding from the artifact against eager. Under a lossy precision (a tolerance row other than
// "exact") a row may part from eager where eager's own top-2 margin is within twice the logits bound: the
// allowed error can flip such a near-tie, and after it the two continue from different text, so the rest
// of that row is not compared. Any other difference fails.
void greedy_check(Context& cx, const std::string& label, const OrtSession* prefill, const OrtSession* step) {
  const CausalLM& m = *cx.model;
  const int64_t V = m.config().vocab_size;
  int64_t pad = m.config().pad_token_id.value_or(0);
  std::shared_ptr<const CausalLM> model = cx.model;
  GenerationOptions go;
  go.max_new_tokens = cx.opt.tokens;
  go.ignore_eos = true;
  json runs = json::array();
  std::string failure;
  for (int batch : {1, 3}) {
    std::vector<std::vector<int64_t>> prompts;
    const int64_t lens[3] = {5, 9, 3};
    for (int b = 0; b < batch; b++) prompts.push_back(test_tokens(V, b, lens[b], 21));
    try {
      Generator ge(std::make_unique<EagerEngine>(model), nullptr, {}, pad);
      Generator ga(std::make_unique<SessionEngine>(prefill, step, m), nullptr, {}, pad);
      auto t0 = Clock::now();
      auto re = ge.generate_ids(prompts, go);
      double eager_ms = ms_since(t0);
      t0 = Clock::now();
      auto ra = ga.generate_ids(prompts, go);
      double art_ms = ms_since(t0);
      int64_t agree = 0, total = 0;
      std::string first;
      json near_ties = json::array();
      compare_rows(cx, prompts, re.ids, ra.ids, agree, total, first, near_ties);
      runs.push_back({{"batch", batch},
                      {"tokens", cx.opt.tokens},
                      {"agree", agree},
                      {"total", total},
                      {"near_ties", near_ties},
                      {"eager_ms", eager_ms},
                      {"artifact_ms", art_ms},
                      {"artifact_tokens_per_s", art_ms > 0 ? 1000.0 * batch * cx.opt.tokens / art_ms : 0}});
      if (!first.empty() && failure.empty())
        failure = fmt::format(
            "expected the greedy tokens of eager for {} tokens at batch {}, got a different token at {}",
            cx.opt.tokens, batch, first);
    } catch (const Error& e) {
      if (failure.empty())
        failure = fmt::format("expected greedy generation at batch {} to run, got: {}", batch, e.what());
    }
  }
  const std::string tie_note = near_tie_note(cx, runs);  // rows that part at a near-tie, named
  if (failure.empty())
    cx.add(label, "greedy", "passed",
           fmt::format("greedy tokens equal eager for {} tokens at batch 1 and 3 (left-padded){}",
                       cx.opt.tokens, tie_note),
           {{"runs", runs}});
  else
    cx.add(label, "greedy", "failed", failure, {{"runs", runs}});
}

}  // namespace hfx::verify::detail
