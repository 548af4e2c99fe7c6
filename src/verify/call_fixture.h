// src/verify/call_fixture.h — recorded method calls saved for replay in another runtime.
//
// `hfx verify OUT --save-calls DIR` writes, for every .pte method call it replays against eager (the real
// calls of the model's own generation loop: encoders, decoders, projectors, prefill/decode of state-space
// models), one file with the call's inputs and eager's outputs, and one per out-of-contract probe (inputs
// only, marked: the runtime must refuse the call). `hfx verify`'s runtime judge (runtime_judge.cpp) feeds
// them to ExecuTorch's runtime and compares, so every structure hfx exports is checked there, not only the
// decoders.
//
// File layout (little-endian, no padding):
//   "HFXCALL1"                                   8 bytes
//   u32 method name length, the name (UTF-8)     the .pte method to call
//   u8  expect_error                             1: a probe beyond the method's contract
//   u32 n_inputs, u32 n_outputs
//   n_inputs + n_outputs tensors, each:
//     u32 name length, name
//     u8  dtype: 1 float32, 2 int64, 3 int32, 4 bool, 5 uint8
//     u32 rank, i64 × rank sizes
//     u64 byte count, the bytes (contiguous, row-major)
#pragma once
#include <string>
#include <utility>
#include <vector>

#include "hfx/core/tensor.h"

namespace hfx::verify {

struct CallFixture {
  std::string method;
  bool expect_error = false;
  std::vector<std::pair<std::string, Tensor>> inputs, outputs;  ///< outputs: eager's (none for a probe)
};

/// Writes `f` to `path` (atomically: a temp file renamed). Throws hfx::Error("verify", ...) for a dtype
/// outside the layout's list or an I/O failure.
void write_call_fixture(const std::string& path, const CallFixture& f);
/// Reads a file write_call_fixture wrote; throws hfx::Error("verify", ...) naming the path and what is
/// wrong for anything else.
CallFixture read_call_fixture(const std::string& path);

}  // namespace hfx::verify
