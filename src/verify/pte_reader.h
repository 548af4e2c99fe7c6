// src/verify/pte_reader.h — an independent reader and executor of ExecuTorch programs (.pte).
//
// Shares nothing with the writer (src/export/executorch) except the flatbuffer schema's generated
// header: it parses the headers (ET12 identifier, eh00 extended header), runs the flatbuffers verifier,
// rebuilds each execution plan — values, planned memory arenas (non_const_buffer_sizes, 1-based memory
// ids), constants from constant_segment, initial mutable state from mutable_data_segments — and runs
// the instructions by mapping each registered kernel name ("aten::mm.out") back to an op-table CPU
// kernel. Tensors live at their planned offsets, so a memory plan that lets two live tensors overlap
// gives wrong numbers; every kernel result is checked against its out tensor's dtype, rank and bound
// (DYNAMIC_BOUND: within the upper bound; STATIC: exact). Mutable buffers (the KV cache) persist across
// calls of a method, as in ExecuTorch's runtime.
#pragma once
#include <cstdint>
#include <map>
#include <memory>
#include <string>
#include <variant>
#include <vector>

#include "hfx/core/tensor.h"

namespace hfx::verify {

/// One method output: a tensor (a copy) or a scalar.
using PteOutput = std::variant<Tensor, int64_t, bool, double>;

class PteMethod;

class PteProgram {
 public:
  /// Parses and verifies a .pte; throws hfx::Error("pte", ...) on a malformed file.
  static std::shared_ptr<PteProgram> load_file(const std::string& path);
  /// `max_planned_bytes` bounds the planned memory a method may allocate (0: the machine's physical memory);
  /// a plan asking for more is refused with hfx::Error("pte", ...) before anything is allocated.
  static std::shared_ptr<PteProgram> load_bytes(std::vector<uint8_t> bytes, uint64_t max_planned_bytes = 0);
  ~PteProgram();

  std::vector<std::string> method_names() const;
  /// Every operator ("aten::mm.out", "aten::index_put_") of one method, or of all methods if name is empty.
  std::vector<std::string> operator_names(const std::string& method = "") const;
  /// The method, loaded on first use (arena allocated, initial state copied in). The program must outlive it.
  PteMethod& method(const std::string& name);

  struct Header {
    uint64_t program_size = 0, segment_base_offset = 0, segment_data_size = 0;
    bool extended = false;
  };
  const Header& header() const { return header_; }
  const uint8_t* data() const { return bytes_->data(); }
  size_t size() const { return bytes_->size(); }

 private:
  PteProgram() = default;
  void parse();
  std::shared_ptr<std::vector<uint8_t>> bytes_;
  Header header_;
  uint64_t max_planned_bytes_ = 0;
  std::map<std::string, std::unique_ptr<PteMethod>> methods_;
  friend class PteMethod;
};

class PteMethod {
 public:
  ~PteMethod();
  /// Runs the method: copies `inputs` into the planned input tensors (shapes within their bounds),
  /// executes every instruction, returns copies of the outputs.
  std::vector<PteOutput> run(const std::vector<Tensor>& inputs);
  /// Restores the initial state of mutable buffers (a fresh method).
  void reset();
  int num_inputs() const;
  int num_instructions() const;
  /// DelegateCall instructions among them, and the backend id of each of the method's delegates.
  int num_delegate_calls() const;
  std::vector<std::string> delegate_backends() const;
  int64_t planned_bytes() const;
  /// Bound (serialized sizes) of input i.
  Shape input_bound(int i) const;

  struct Impl;

 private:
  friend class PteProgram;
  explicit PteMethod(std::unique_ptr<Impl> impl);
  std::unique_ptr<Impl> impl_;
};

}  // namespace hfx::verify
