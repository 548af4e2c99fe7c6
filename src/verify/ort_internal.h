// src/verify/ort_internal.h — what ort_verify.cpp (numerics, latency, placement, layer diff) shares with
// ort_probes.cpp (the shape matrix, the claimed-maximum probes and the out-of-contract probes). Not a
// public header; only built with ONNX Runtime.
#pragma once
#include <chrono>
#include <string>
#include <vector>

#include "hfx/runtime/ort_session.h"
#include "verify/verify_internal.h"

namespace hfx::verify::detail {

using Clock = std::chrono::steady_clock;
/// The name of the idx-th present output: present.<idx/2>.key, then .value.
inline std::string present_name(size_t idx) {
  return "present." + std::to_string(idx / 2) + (idx % 2 ? ".value" : ".key");
}
double ms_since(Clock::time_point t0);

/// Test tokens of one call: `past` tokens already in the cache, then `seq` new ones, per row.
struct Inputs {
  int64_t batch = 1, seq = 1, past = 0;
  std::vector<int64_t> ids;  ///< [B, past + S]
};
Inputs make_inputs(int64_t vocab, int64_t batch, int64_t seq, int64_t past, int64_t salt);

/// One eager run (ort_verify.cpp): an optional prefill of `past` tokens, then the step of `seq` tokens.
struct EagerStep;
/// The feeds of `in` for session `s`: the eager past when `eager` is given, else zeros of the right shape.
rt::NamedTensors feeds_for(const rt::OrtSession& s, const CausalLM& m, const Inputs& in,
                           const EagerStep* eager, bool has_past);

/// The greedy end-to-end check (ort_greedy.cpp): the runtime's Generator over `prefill` (or `step` alone)
/// against eager's greedy tokens, recorded under `label`.
void greedy_check(Context& cx, const std::string& label, const rt::OrtSession* prefill,
                  const rt::OrtSession* step);

/// Cases of the shape matrix from the contract (or --shapes). A case the graph's contract restricts
/// (GroupQueryAttention's batch-1 rule) is run inside the restriction; the excluded shape is probed by
/// rejection_checks instead.
std::vector<ShapeCase> matrix_for(Context& cx, const OnnxComponent& c, const rt::OrtSession& s,
                                  std::vector<std::string>& notes);
/// Shapes beyond the contract (each range, the total positions, the restrictions) must be refused, by
/// the graph or by the hfx runtime.
void rejection_checks(Context& cx, OnnxComponent& c, rt::OrtSession& s);
/// The claimed max past must really run (artifact alone: one token over the cache).
void claimed_max_probe(Context& cx, OnnxComponent& c, rt::OrtSession& s, nlohmann::json& cases,
                       std::string& failure);
/// The claimed max sequence over the largest past the contract allows with it (merged graph).
void claimed_total_probe(Context& cx, OnnxComponent& c, rt::OrtSession& s, nlohmann::json& cases,
                         std::string& failure);

}  // namespace hfx::verify::detail
