// hfx/passes/ir_text.h — the readable graph text of Graph::dump read back into a Graph, so a pass is tested
// the way MLIR tests its passes: IR in, run the pass, compare the IR out.
//
//   graph(%x: f32[s0, 8]) {
//     sym s0 in [1, 64]
//     param %w: f32[8, 8]
//     %y: f32[s0, 8] = aten.linear(%x, %w)
//     %z: f32[s0, 8] = hfx.rms_norm(%y, %w_norm) {eps=1e-06, weight_offset=0}
//     return (%z)
//   }
//
// What it takes: every line Graph::dump writes, with dims that are integers, symbols or sums of products of
// them ("2*s0 + 1"). Each node is typed by the op table (hfx::add_node) and its declared type must equal
// the inferred one, so a test's IR is checked as it is read. Parameters and constants get deterministic
// data of their declared type (the dump does not print data). It lives in the passes layer: reading needs
// the op table, and the IR layer stays below the ops.
#pragma once
#include <memory>
#include <string_view>

#include "hfx/ir/graph.h"

namespace hfx {

/// Parses graph text (Graph::dump's format). Attribute values take the type of the op schema's default
/// where the attribute has one (so `eps=1` is a float for hfx.rms_norm), else the type their spelling shows.
/// Throws hfx::Error("ir text", "expected …, got … at line N: <line>").
std::unique_ptr<Graph> parse_graph(std::string_view text);

}  // namespace hfx
