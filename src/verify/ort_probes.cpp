// The shape probes of `hfx verify` on ONNX graphs: the shape matrix derived from the contract, the
// claimed-maximum probes (every shape the contract admits must run) and the out-of-contract probes
// (every shape beyond it must be refused, by the graph's own checks or by the hfx runtime). A shape
// rule of the contract beyond its ranges (a restriction, hfx/runtime/shape_restriction.h) is honoured
// by both: the matrix runs inside it and the probes prove the excluded shapes are refused.
#include <algorithm>
#include <cmath>

#include <fmt/format.h>

#include "hfx/core/error.h"
#include "verify/ort_internal.h"

namespace hfx::verify::detail {
using nlohmann::json;
using rt::OrtSession;

namespace {

// Sizes of a case's feeds, as rt::check_restrictions reads them.
rt::AxisSize case_sizes(const ShapeCase& sc, bool has_past) {
  return [sc, has_past](const std::string& input, int axis) -> int64_t {
    if (axis == 0) return sc.batch;
    if (input == "input_ids" || input == "position_ids") return axis == 1 ? sc.sequence : -1;
    if (input == "attention_mask") return axis == 1 ? sc.past + sc.sequence : -1;
    if (has_past && input.rfind("past_key_values.", 0) == 0) return axis == 2 ? sc.past : -1;
    return -1;
  };
}

// Total positions (past + sequence) the contract admits: attention_mask axis 1, else the sum of the ranges.
int64_t total_max(const ShapeContract& c) {
  auto [tmin, tmax] = contract_range(c, "attention_mask", 1);
  auto [smin, smax] = contract_range(c, "input_ids", 1);
  auto [pmin, pmax] = contract_range(c, "past_key_values.0.key", 2);
  int64_t sum = smax < 0 ? -1 : smax + std::max<int64_t>(pmax, 0);
  return tmax >= 0 && (sum < 0 || tmax < sum) ? tmax : sum;
}

std::string who_refused(const std::string& msg) {
  if (msg.find("hfx.contract") != std::string::npos) return "the artifact (in-graph contract check)";
  if (msg.find("[ort] expected") != std::string::npos) return "the hfx runtime (OrtSession input check)";
  return "ONNX Runtime";
}

}  // namespace

std::vector<ShapeCase> matrix_for(Context& cx, const OnnxComponent& c, const OrtSession& s,
                                  std::vector<std::string>& notes) {
  if (!cx.opt.shapes.empty()) {
    std::vector<ShapeCase> v;
    for (auto sc : parse_shape_spec(cx.opt.shapes)) {
      if (c.name == "prefill" && sc.past > 0) continue;
      if (c.name == "decode" && (sc.sequence != 1 || sc.past < 1)) continue;
      if (const rt::ShapeRestriction* r =
              rt::broken_restriction(s.restrictions(), case_sizes(sc, c.has_past))) {
        notes.push_back(fmt::format("{} not run: outside the contract ({}), probed for refusal", sc.label,
                                    r->require.str()));
        continue;
      }
      v.push_back(sc);
    }
    return v;
  }
  auto [bmin, bmax] = contract_range(c.contract, "input_ids", 0);
  auto [smin, smax] = contract_range(c.contract, "input_ids", 1);
  auto [pmin, pmax] = contract_range(c.contract, "past_key_values.0.key", 2);
  if (bmax < 0) bmin = 1, bmax = 4;
  if (smax < 0) smin = 1, smax = 64;
  auto capped = [&](int64_t v, int64_t cap, const char* what) {
    if (v > cap) {
      notes.push_back(fmt::format("max {} {} capped at {} against eager (2-core budget)", what, v, cap));
      return cap;
    }
    return v;
  };
  const int64_t B = capped(bmax, cx.opt.max_check_batch, "batch");
  const int64_t S = capped(smax, cx.opt.max_check_sequence, "sequence");
  const int64_t typB = std::clamp<int64_t>(2, bmin, bmax), typS = std::clamp<int64_t>(16, smin, smax);
  std::vector<ShapeCase> v;
  if (c.name != "decode") {
    v.push_back({bmin, std::max<int64_t>(smin, 1), 0, "min"});
    v.push_back({typB, typS, 0, "typical"});
    v.push_back({B, S, 0, "max"});
  }
  if (c.has_past) {
    const int64_t P = capped(pmax < 0 ? 256 : pmax, cx.opt.max_check_sequence, "past");
    v.push_back({1, 1, 1, "first decode"});
    v.push_back({typB, 1, 16, "typical decode"});
    v.push_back({B, 1, 8, "max batch decode"});
    // The longest cache the contract admits with one new token (learned position tables end there).
    const int64_t T = total_max(c.contract);
    v.push_back({1, 1, std::max<int64_t>(std::min(P, T > 0 ? T - 1 : P) - 1, 1), "long cache"});
    if (c.name == "model") {
      ShapeCase chunk{typB, 4, 12, "chunk over cache"};
      if (const rt::ShapeRestriction* r =
              rt::broken_restriction(s.restrictions(), case_sizes(chunk, c.has_past))) {
        notes.push_back(fmt::format(
            "chunk over cache run at batch 1: the contract requires {} ({}); the batch-{} call is "
            "probed for refusal",
            r->require.str(), r->why, chunk.batch));
        chunk.batch = 1;
      }
      v.push_back(chunk);
    }
  }
  return v;
}

void rejection_checks(Context& cx, OnnxComponent& c, OrtSession& s) {
  auto [bmin, bmax] = contract_range(c.contract, "input_ids", 0);
  auto [smin, smax] = contract_range(c.contract, "input_ids", 1);
  auto [pmin, pmax] = contract_range(c.contract, "past_key_values.0.key", 2);
  struct Probe {
    std::string what;
    ShapeCase sc;
  };
  std::vector<Probe> probes;
  const int64_t base_past = c.name == "decode" ? 1 : 0;
  if (bmax > 0)
    probes.push_back(
        {fmt::format("batch {} (contract max {})", bmax + 1, bmax), {bmax + 1, 1, base_past, ""}});
  if (smax > 0 && smax != smin && c.name != "decode")
    probes.push_back({fmt::format("sequence {} (contract max {})", smax + 1, smax), {1, smax + 1, 0, ""}});
  if (c.has_past && pmax > 0)
    probes.push_back({fmt::format("past {} (contract max {})", pmax + 1, pmax), {1, 1, pmax + 1, ""}});
  if (bmin > 1)
    probes.push_back(
        {fmt::format("batch {} (contract min {})", bmin - 1, bmin), {bmin - 1, 1, base_past, ""}});
  // Past + sequence beyond the total the contract admits (a learned position table's size), each alone inside
  // its range.
  const int64_t T = total_max(c.contract);
  if (c.has_past && c.name != "decode" && T > 0 && smax >= 2 && pmax >= T - 1 && T - 1 >= 1)
    probes.push_back({fmt::format("past {} + sequence 2 = {} positions (contract max {})", T - 1, T + 1, T),
                      {1, 2, T - 1, ""}});
  // Each restriction of the contract: the smallest shape inside every range that breaks it.
  for (const rt::ShapeRestriction& r : s.restrictions()) {
    ShapeCase x{std::max<int64_t>(2, bmin), 4, 12, ""};
    if (!c.has_past || bmax < x.batch || smax < x.sequence || pmax < x.past ||
        !rt::broken_restriction({r}, case_sizes(x, true)))
      continue;
    probes.push_back({fmt::format("batch {} x sequence {} over past {} (contract: {})", x.batch, x.sequence,
                                  x.past, r.require.str()),
                      x});
  }
  if (probes.empty()) {
    cx.add(c.name, "rejects", "skipped", "the contract sets no upper bound to probe");
    return;
  }
  json results = json::array();
  std::string failure;
  for (const auto& p : probes) {
    Inputs in = make_inputs(cx.model->config().vocab_size, p.sc.batch, p.sc.sequence, p.sc.past, 9);
    try {
      s.run(feeds_for(s, *cx.model, in, nullptr, c.has_past));
      results.push_back({{"probe", p.what}, {"refused", false}});
      if (failure.empty())
        failure = fmt::format(
            "expected the artifact or the hfx runtime to refuse {} (beyond the contract), got logits",
            p.what);
    } catch (const Error& e) {
      std::string msg = e.what();
      results.push_back(
          {{"probe", p.what}, {"refused", true}, {"by", who_refused(msg)}, {"error", msg.substr(0, 400)}});
    }
  }
  if (failure.empty()) {
    std::string by = results.front()["by"];
    cx.add(c.name, "rejects", "passed",
           fmt::format("{} out-of-contract shapes refused (e.g. {} by {})", probes.size(),
                       results.front()["probe"].get<std::string>(), by),
           {{"probes", results}});
  } else {
    cx.add(c.name, "rejects", "failed", failure, {{"probes", results}});
  }
}

void claimed_max_probe(Context& cx, OnnxComponent& c, OrtSession& s, json& cases, std::string& failure) {
  if (!c.has_past) return;
  int64_t pmax = -1;
  std::string source;
  for (const auto& [src, contract] : c.claims) {
    auto [lo, hi] = contract_range(contract, "past_key_values.0.key", 2);
    if (hi > pmax) pmax = hi, source = src;
  }
  if (pmax <= 0) return;
  if (pmax > cx.opt.max_probe_past) {
    cases.push_back(
        {{"label", "claimed max past"},
         {"skipped", fmt::format("past {} beyond the probe cap {}", pmax, cx.opt.max_probe_past)}});
    return;
  }
  Inputs in = make_inputs(cx.model->config().vocab_size, 1, 1, pmax, 13);
  auto t0 = Clock::now();
  try {
    auto out = s.run(feeds_for(s, *cx.model, in, nullptr, true), {"logits"});
    auto v = out.at(0).second.to_f32();
    bool finite = std::all_of(v.begin(), v.end(), [](float x) { return std::isfinite(x); });
    cases.push_back({{"label", "claimed max past"},
                     {"batch", 1},
                     {"sequence", 1},
                     {"past", pmax},
                     {"ran", true},
                     {"ok", finite},
                     {"first_run_ms", ms_since(t0)}});
    if (!finite && failure.empty())
      failure =
          fmt::format("expected finite logits at the claimed max past {} ({}), got NaN/inf", pmax, source);
  } catch (const Error& e) {
    cases.push_back({{"label", "claimed max past"},
                     {"batch", 1},
                     {"sequence", 1},
                     {"past", pmax},
                     {"ran", false},
                     {"error", e.what()}});
    if (failure.empty())
      failure =
          fmt::format("expected the graph to run at the past length its contract claims ({} in {}), got: {}",
                      pmax, source, e.what());
  }
}

void claimed_total_probe(Context& cx, OnnxComponent& c, OrtSession& s, json& cases, std::string& failure) {
  if (!c.has_past || c.name == "decode") return;
  int64_t pmax = -1, smax = -1;
  std::string source;
  for (const auto& [src, contract] : c.claims) {
    auto [plo, phi] = contract_range(contract, "past_key_values.0.key", 2);
    auto [slo, shi] = contract_range(contract, "input_ids", 1);
    if (phi > 0 && shi > 0 && phi + shi > pmax + smax) pmax = phi, smax = shi, source = src;
  }
  if (pmax <= 0 || smax <= 1) return;
  // Past and sequence together stay inside the total the contract admits (attention_mask axis 1).
  const int64_t T = total_max(c.contract);
  if (T > 0 && pmax + smax > T) {
    pmax = std::max<int64_t>(T - smax, 1);
    smax = T - pmax;
    if (smax <= 1) return;
  }
  const int64_t V = cx.model->config().vocab_size;
  if (pmax + smax > cx.opt.max_probe_past || smax * V * 4 > (int64_t{512} << 20)) {
    cases.push_back({{"label", "claimed max total"},
                     {"skipped", fmt::format("past {} + sequence {} beyond the probe cap {}", pmax, smax,
                                             cx.opt.max_probe_past)}});
    return;
  }
  Inputs in = make_inputs(V, 1, smax, pmax, 17);
  auto t0 = Clock::now();
  try {
    auto out = s.run(feeds_for(s, *cx.model, in, nullptr, true), {"logits"});
    auto v = out.at(0).second.to_f32();
    bool finite = std::all_of(v.begin(), v.end(), [](float x) { return std::isfinite(x); });
    cases.push_back({{"label", "claimed max total"},
                     {"batch", 1},
                     {"sequence", smax},
                     {"past", pmax},
                     {"ran", true},
                     {"ok", finite},
                     {"first_run_ms", ms_since(t0)}});
    if (!finite && failure.empty())
      failure =
          fmt::format("expected finite logits at the claimed max past {} + sequence {} ({}), got NaN/inf",
                      pmax, smax, source);
  } catch (const Error& e) {
    cases.push_back({{"label", "claimed max total"},
                     {"batch", 1},
                     {"sequence", smax},
                     {"past", pmax},
                     {"ran", false},
                     {"error", e.what()}});
    if (failure.empty())
      failure = fmt::format(
          "expected the graph to run {} new tokens over a past of {} (both within the contract in {}), got: "
          "{}",
          smax, pmax, source, e.what());
  }
}

}  // namespace hfx::verify::detail
