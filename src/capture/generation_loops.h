// src/capture/generation_loops.h — the generation loop of each model structure, declared once.
//
// A loop drives a model's components eagerly, the way generation calls them (prefill then decode;
// encoder then decoder with and without past), through a CallRecorder that sees every call. With the
// loop, a structure declares the programs an export writes and which recorded call kinds each covers.
// Adding a generation structure is one more entry of the table in generation_loops.cpp.
#pragma once
#include <set>
#include <string>
#include <vector>

#include "hfx/capture/capture.h"
#include "hfx/ir/graph.h"

namespace hfx::capture {

/// One exported program of a structure: its artifact name, the component, the call kinds it covers.
struct ProgramDecl {
  std::string name;
  std::string component;
  std::vector<std::string> kinds;
  /// The method that holds this program in an ExecuTorch .pte ("" = not one: decoder-only models get
  /// ExecuTorch's static-cache `forward` instead, and the merged decoder is covered by its two halves).
  std::string executorch_method;
};

/// Where a loop runs: eagerly (real kernels, greedy tokens) or on shapes only (a static trace into a
/// throwaway graph; no weight is read and "next tokens" are a fixed id). Both make the same calls with
/// the same names, dtypes and shapes, since the loops branch on shapes, never on values.
class LoopContext {
 public:
  explicit LoopContext(bool eager);
  Builder& builder();
  /// An int64 input tensor of `shape` holding `values`.
  Var ints(const Shape& shape, const std::vector<int64_t>& values);
  /// A float32 input tensor of `shape` holding `values`.
  Var floats(const Shape& shape, const std::vector<float>& values);
  /// Greedy next token of each row from logits [B, S, V] (eager) or a fixed id per row (shapes only).
  std::vector<int64_t> next_tokens(const Var& logits, int64_t rows);
  bool eager() const { return eager_; }

 private:
  bool eager_;
  EagerBuilder eb_;
  Graph g_;
  TraceBuilder tb_{g_};
  int inputs_ = 0;
};

/// Runs component calls and records their inputs. Inputs the component does not declare are dropped, so
/// a loop may offer more than a given architecture takes (token_type_ids, position_ids).
class CallRecorder {
 public:
  CallRecorder(const Model& model, std::vector<RecordedCall>& out) : model_(model), out_(out) {}
  NamedVars call(const std::string& kind, const std::string& component, LoopContext& ctx,
                 const NamedVars& inputs, const CallOptions& opts = {});
  const Model& model() const { return model_; }

 private:
  const Model& model_;
  std::vector<RecordedCall>& out_;
};

struct GenerationLoop {
  Structure structure;
  void (*run)(const Model& model, const GenerationSample& sample, LoopContext& ctx, CallRecorder& rec);
  std::vector<ProgramDecl> programs;
};

const GenerationLoop& generation_loop(Structure s);

/// The past dims of a component's cache leaves: `memory` only cross-attention leaves carry (the encoder's
/// output, as long as the encoder's input), `self` the self-attention ones (and every other kind) carry.
struct PastDims {
  std::set<std::string> memory, self;
};
PastDims past_dims(const ComponentDecl& decl);

}  // namespace hfx::capture
