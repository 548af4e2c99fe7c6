// src/verify/pte_method_impl.h — private to the .pte reader: the value model of a loaded method (slots,
// arenas, the plan) and the kernel-name table's types (pte_kernels.cpp), shared by pte_reader.cpp and the
// kernel table.
#pragma once
#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include <flatbuffers/flatbuffers.h>

#include "hfx/core/error.h"
#include "hfx_gen/program_generated.h"
#include "verify/pte_reader.h"

namespace hfx::verify {
namespace fb = executorch_flatbuffer;

namespace pte_detail {
struct Slot {
  fb::KernelTypes kind = fb::KernelTypes::NONE;
  int64_t i = 0;
  bool b = false;
  double d = 0;
  std::string s;
  std::vector<int64_t> ints;  // IntList: indices of Int slots
  std::vector<int32_t> refs;  // TensorList / OptionalTensorList
  std::vector<double> doubles;
  std::vector<bool> bools;
  // tensor
  DType dtype = DType::F32;
  Shape bound, cur;
  bool dynamic = false;
  uint8_t* ptr = nullptr;  // planned / constant / runtime-set memory
  size_t capacity = 0;
  bool constant = false;
  const uint8_t* initial = nullptr;  // initial state of a mutable tensor
};
/// A loaded XnnpackBackend payload (pte_xnnpack.cpp).
struct XnnGraph;
struct XnnGraphDeleter {
  void operator()(XnnGraph* g) const;
};
using XnnGraphPtr = std::unique_ptr<XnnGraph, XnnGraphDeleter>;
/// The bytes of the program's named data `key` (throws when the program has none by that key).
using NamedData = std::function<std::pair<const uint8_t*, size_t>(const std::string&)>;
}  // namespace pte_detail
using pte_detail::Slot;

// ---------------------------------------------------------------- method
struct PteMethod::Impl {
  const PteProgram* prog = nullptr;
  const fb::ExecutionPlan* plan = nullptr;
  std::vector<Slot> slots;
  std::vector<std::shared_ptr<Storage>> arenas;  // index = memory_id - 1
  std::vector<std::string> op_names;
  std::string name;

  Slot& at(int idx) {
    if (idx < 0 || idx >= static_cast<int>(slots.size()))
      HFX_THROW("pte", "expected a value index in [0, {}) in method '{}', got {}", slots.size(), name, idx);
    return slots[idx];
  }

  Tensor tensor(int idx) {
    Slot& s = at(idx);
    if (s.kind != fb::KernelTypes::Tensor)
      HFX_THROW("pte", "expected a Tensor at value {}, got {}", idx, fb::EnumNameKernelTypes(s.kind));
    if (!s.ptr && shape_numel(s.cur) > 0)
      HFX_THROW("pte", "expected memory for tensor value {}, got none", idx);
    auto st = Storage::borrow(s.ptr, s.capacity, nullptr);
    return Tensor(st, s.dtype, s.cur, contiguous_strides(s.cur), 0);
  }
  Tensor opt_tensor(int idx) { return at(idx).kind == fb::KernelTypes::Null ? Tensor() : tensor(idx); }
  int64_t integer(int idx) {
    Slot& s = at(idx);
    if (s.kind == fb::KernelTypes::Int) return s.i;
    if (s.kind == fb::KernelTypes::Bool) return s.b;
    HFX_THROW("pte", "expected an Int at value {}, got {}", idx, fb::EnumNameKernelTypes(s.kind));
  }
  bool boolean(int idx) {
    Slot& s = at(idx);
    if (s.kind != fb::KernelTypes::Bool)
      HFX_THROW("pte", "expected a Bool at value {}, got {}", idx, fb::EnumNameKernelTypes(s.kind));
    return s.b;
  }
  double number(int idx) {
    Slot& s = at(idx);
    if (s.kind == fb::KernelTypes::Double) return s.d;
    if (s.kind == fb::KernelTypes::Int) return static_cast<double>(s.i);
    if (s.kind == fb::KernelTypes::Bool) return s.b;
    HFX_THROW("pte", "expected a Scalar at value {}, got {}", idx, fb::EnumNameKernelTypes(s.kind));
  }
  bool is_null(int idx) { return at(idx).kind == fb::KernelTypes::Null; }
  std::vector<int64_t> int_list(int idx) {
    Slot& s = at(idx);
    if (s.kind != fb::KernelTypes::IntList)
      HFX_THROW("pte", "expected an IntList at value {}, got {}", idx, fb::EnumNameKernelTypes(s.kind));
    std::vector<int64_t> r;
    for (int64_t e : s.ints) r.push_back(integer(static_cast<int>(e)));
    return r;
  }
  std::string str(int idx) {
    Slot& s = at(idx);
    if (s.kind != fb::KernelTypes::String)
      HFX_THROW("pte", "expected a String at value {}, got {}", idx, fb::EnumNameKernelTypes(s.kind));
    return s.s;
  }
  DType out_dtype(int idx) { return at(idx).dtype; }

  /// Stores a kernel result into out tensor `idx`: same rank, within the bound, dtype converted.
  void write(int idx, const Tensor& r) {
    Slot& s = at(idx);
    if (s.kind != fb::KernelTypes::Tensor)
      HFX_THROW("pte", "expected an out Tensor at value {}, got {}", idx, fb::EnumNameKernelTypes(s.kind));
    if (s.constant) HFX_THROW("pte", "expected a writable out tensor at value {}, got a constant", idx);
    if (r.dim() != static_cast<int64_t>(s.bound.size()))
      HFX_THROW("pte", "expected a result of rank {} for value {} (bound {}), got {}", s.bound.size(), idx,
                shape_to_string(s.bound), shape_to_string(r.shape()));
    for (size_t d = 0; d < s.bound.size(); d++) {
      bool ok = s.dynamic ? r.shape()[d] <= s.bound[d] : r.shape()[d] == s.bound[d];
      if (!ok)
        HFX_THROW("pte", "expected the result for value {} within its {} bound {}, got {}", idx,
                  s.dynamic ? "dynamic" : "static", shape_to_string(s.bound), shape_to_string(r.shape()));
    }
    size_t need = static_cast<size_t>(r.numel()) * dtype_size(s.dtype);
    if (need > s.capacity)
      HFX_THROW("pte", "expected {} bytes to fit value {}'s {} bytes", need, idx, s.capacity);
    if (need) copy_to_contiguous(r, s.ptr, s.dtype);
    s.cur = r.shape();
  }

  void init();
  void load_initial_state();
  /// The program's data segments as init() reads them (null / 0 when absent).
  struct Segments {
    const uint8_t* constant = nullptr;
    size_t constant_size = 0;
    const flatbuffers::Vector<uint64_t>* constant_offsets = nullptr;
    const uint8_t* mutable_data = nullptr;
    size_t mutable_size = 0;
    const flatbuffers::Vector<uint64_t>* mutable_offsets = nullptr;
  };
  void allocate_arenas();
  Segments locate_segments() const;
  void read_value(size_t i, const Segments& seg);
  void read_tensor(size_t i, const fb::Tensor* t, const Segments& seg);
  void exec(const fb::KernelCall* kc);
  /// The plan's delegates, loaded at init (only XnnpackBackend; anything else is refused by name).
  std::vector<pte_detail::XnnGraphPtr> delegates;
  void load_delegates();
  void exec(const fb::DelegateCall* dc);
};

namespace pte_detail {
using Args = std::vector<int32_t>;
using Handler = std::function<void(PteMethod::Impl&, const Args&)>;
struct KernelEntry {
  size_t nargs;  // schema arguments + the return slot
  Handler fn;
};
/// ExecuTorch kernel name ("aten::add.out") → its argument count and the op-table op it runs.
const std::map<std::string, KernelEntry>& kernel_table();
/// Reads an XnnpackBackend payload (XH00 header + XNNGraph, or a bare XNNGraph); throws hfx::Error("pte").
XnnGraphPtr load_xnn_graph(const uint8_t* data, size_t size, const NamedData& named);
/// Runs it on a DelegateCall's arguments: the payload's external ids index them (inputs, then outputs).
void run_xnn_graph(const XnnGraph& g, PteMethod::Impl& m, const Args& args);
}  // namespace pte_detail

}  // namespace hfx::verify
