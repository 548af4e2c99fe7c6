// src/export/executorch/method_emitter.h — private to the .pte writer: the in-memory program (values, calls,
// plans, the constant and mutable pools) and the MethodEmitter that turns one method's graph into kernel
// calls, symbolic sizes and planned memory (pte_writer.cpp), through the lowering table
// (pte_lowering_table.cpp).
#pragma once
#include <cstdint>
#include <functional>
#include <map>
#include <set>
#include <string>
#include <vector>

#include <fmt/format.h>

#include "export/executorch/pte_writer.h"
#include "export/executorch/xnnpack_delegate.h"
#include "hfx/core/error.h"
#include "hfx_gen/program_generated.h"

namespace hfx::et::detail {
namespace fb = executorch_flatbuffer;

inline size_t align_up(size_t n, size_t a) { return (n + a - 1) / a * a; }

inline fb::ScalarType scalar_type(DType dt) {
  switch (dt) {
    case DType::F32:
      return fb::ScalarType::FLOAT;
    case DType::F16:
      return fb::ScalarType::HALF;
    case DType::BF16:
      return fb::ScalarType::BFLOAT16;
    case DType::I64:
      return fb::ScalarType::LONG;
    case DType::I32:
      return fb::ScalarType::INT;
    case DType::I8:
      return fb::ScalarType::CHAR;
    case DType::U8:
      return fb::ScalarType::BYTE;
    case DType::Bool:
      return fb::ScalarType::BOOL;
  }
  HFX_THROW("executorch", "expected a dtype ExecuTorch knows, got {}", static_cast<int>(dt));
}

// ---------------------------------------------------------------- in-memory program
struct EV {
  fb::KernelTypes kind = fb::KernelTypes::Null;
  int64_t i = 0;
  bool b = false;
  double d = 0;
  std::string s;
  std::vector<int64_t> ints;  // IntList (boxed: value indices)
  std::vector<int32_t> refs;  // TensorList / OptionalTensorList
  // Tensor
  fb::ScalarType st = fb::ScalarType::FLOAT;
  std::vector<int32_t> sizes;
  bool dynamic = false;
  uint32_t data_buffer_idx = 0;
  bool planned = false;
  uint64_t mem_offset = 0;
  int64_t nbytes = 0;
};

struct Call {
  int op = 0;
  int delegate = -1;  // >= 0: a DelegateCall of the plan's delegate `delegate` (op unused)
  std::vector<int32_t> args;
  std::string check;  // a contract check: its stacktrace frame's context (the guard), else empty
  std::string where;  // file:line of the code that asked for the guard
};

struct Plan {
  std::string name;
  std::vector<EV> values;
  std::vector<int32_t> inputs, outputs;
  std::vector<Call> calls;
  std::vector<std::pair<std::string, std::string>> operators;
  std::vector<int64_t> non_const_buffer_sizes{0};
  std::vector<std::string> warnings;
  std::vector<uint32_t> delegates;  // each delegate's payload: an index into Pools::payloads
  int nodes = 0, delegated_nodes = 0;
  double flops = 0, delegated_flops = 0;
  std::map<std::string, double> portable_flops;  // per op, of the nodes left to portable kernels
};

// Program-wide pools: constants (deduplicated by storage) and zeroed initial states of mutable buffers.
struct Pools {
  explicit Pools(const PteWriteOptions& o) : opt(o) {}
  const PteWriteOptions& opt;
  std::vector<uint8_t> constants;
  std::vector<uint64_t> constant_offsets{0};  // entry 0: reserved for non-constant tensors
  std::map<std::tuple<const void*, size_t, int>, uint32_t> seen;
  std::vector<uint8_t> mutables;
  std::vector<uint64_t> mutable_offsets{0};

  uint32_t add_constant(const Tensor& t) {
    auto key = std::make_tuple(t.raw(), t.nbytes(), static_cast<int>(t.dtype()));
    if (t.is_contiguous())
      if (auto it = seen.find(key); it != seen.end()) return it->second;
    constants.resize(align_up(constants.size(), opt.tensor_alignment), 0);
    uint64_t off = constants.size();
    constants.resize(off + t.nbytes());
    if (t.nbytes()) copy_to_contiguous(t, constants.data() + off, t.dtype());
    constant_offsets.push_back(off);
    uint32_t idx = static_cast<uint32_t>(constant_offsets.size() - 1);
    if (t.is_contiguous()) seen[key] = idx;
    return idx;
  }
  // Delegate payloads and the named data they refer to (one segment each, as ExecuTorch's NamedDataStore
  // writes them); a key names one content: the same name with other bytes gets a suffix.
  std::vector<std::vector<uint8_t>> payloads;
  std::vector<std::pair<std::string, std::vector<uint8_t>>> named;
  std::map<std::string, size_t> named_index;

  uint32_t add_payload(std::vector<uint8_t> bytes) {
    payloads.push_back(std::move(bytes));
    return static_cast<uint32_t>(payloads.size() - 1);
  }
  std::string add_named(const Value* v) {
    std::vector<uint8_t> bytes(v->data.nbytes());
    if (!bytes.empty()) copy_to_contiguous(v->data, bytes.data(), v->data.dtype());
    std::string key = v->name;
    for (int k = 1;; k++) {
      auto it = named_index.find(key);
      if (it == named_index.end()) break;
      if (named[it->second].second == bytes) return key;
      key = fmt::format("{}#{}", v->name, k);
    }
    named_index[key] = named.size();
    named.emplace_back(key, std::move(bytes));
    return key;
  }
  uint32_t add_zeroed(size_t nbytes) {
    mutables.resize(align_up(mutables.size(), opt.tensor_alignment), 0);
    mutable_offsets.push_back(mutables.size());
    mutables.resize(mutables.size() + nbytes, 0);
    return static_cast<uint32_t>(mutable_offsets.size() - 1);
  }
};

// ---------------------------------------------------------------- one method
class MethodEmitter {
 public:
  MethodEmitter(const PteMethodSpec& spec, Pools& pools, const PteWriteOptions& opt)
      : spec_(spec), g_(*spec.graph), env_(spec.graph->env()), pools_(pools), opt_(opt) {
    plan_.name = spec.name;
  }

  Plan emit();

  // ---- values ----
  int add(EV e) {
    plan_.values.push_back(std::move(e));
    return static_cast<int>(plan_.values.size() - 1);
  }
  int I(int64_t v) {
    if (auto it = ints_.find(v); it != ints_.end()) return it->second;
    EV e;
    e.kind = fb::KernelTypes::Int;
    e.i = v;
    return ints_[v] = add(e);
  }
  int D(double v) {
    EV e;
    e.kind = fb::KernelTypes::Double;
    e.d = v;
    return add(e);
  }
  int B(bool v) {
    int& slot = v ? true_ : false_;
    if (slot < 0) {
      EV e;
      e.kind = fb::KernelTypes::Bool;
      e.b = v;
      slot = add(e);
    }
    return slot;
  }
  int N() {
    if (null_ < 0) null_ = add(EV{});
    return null_;
  }
  int Str(const std::string& s) {
    EV e;
    e.kind = fb::KernelTypes::String;
    e.s = s;
    return add(e);
  }
  /// A Scalar argument: Int for integer/bool tensors when the value is integral (the portable kernels
  /// refuse to cast a float scalar into an integer output), else Double.
  int scalar(double v, DType self) {
    if (!dtype_is_float(self) && v == static_cast<double>(static_cast<int64_t>(v)))
      return I(static_cast<int64_t>(v));
    return D(v);
  }
  int IL(const std::vector<Sym>& xs) {
    EV e;
    e.kind = fb::KernelTypes::IntList;
    for (const Sym& x : xs) e.ints.push_back(sym(x));
    return add(e);
  }
  int IL(const std::vector<int64_t>& xs) {
    std::vector<Sym> s(xs.begin(), xs.end());
    return IL(s);
  }
  int TL(const std::vector<Value*>& vs) {
    EV e;
    e.kind = fb::KernelTypes::TensorList;
    for (Value* v : vs) e.refs.push_back(T(v));
    return add(e);
  }
  int OTL(const std::vector<Value*>& vs) {
    EV e;
    e.kind = fb::KernelTypes::OptionalTensorList;
    for (Value* v : vs) e.refs.push_back(v ? T(v) : -1);
    return add(e);
  }

  /// Tensor value of a graph value (constants are added to the constant segment on first use).
  int T(const Value* v) {
    if (!v) HFX_THROW("executorch", "expected a tensor argument, got an omitted one");
    if (auto it = tensors_.find(v); it != tensors_.end()) return it->second;
    if (v->kind == ValueKind::Param || v->kind == ValueKind::Const) {
      EV e = tensor_ev(v->type, v->name, /*planned=*/false);
      if (!v->data.defined()) HFX_THROW("executorch", "expected data for constant '{}', got none", v->name);
      e.data_buffer_idx = pools_.add_constant(v->data);
      return tensors_[v] = add(e);
    }
    if (v->kind == ValueKind::Input)
      HFX_THROW("executorch", "expected graph input '{}' to be declared before use", v->name);
    return tensors_[v] = add(tensor_ev(v->type, v->name, /*planned=*/true));
  }
  /// A fresh planned tensor (extra outputs such as layer-norm statistics).
  int temp(const TensorType& t, const std::string& what) { return add(tensor_ev(t, what, true)); }
  void bind(const Value* v, int idx) { tensors_[v] = idx; }
  const Value* out(const Node& n, size_t i = 0) { return n.outputs.at(i); }

  /// Emits one kernel call; `args` already holds every schema argument and the out(s); `ret` is appended.
  void call(const std::string& name, const std::string& overload, std::vector<int> args, int ret) {
    std::string key = overload.empty() ? name : name + "." + overload;
    int op;
    if (auto it = op_index_.find(key); it != op_index_.end()) {
      op = it->second;
    } else {
      op = static_cast<int>(plan_.operators.size());
      plan_.operators.emplace_back(name, overload);
      op_index_[key] = op;
    }
    args.push_back(ret);
    plan_.calls.push_back(Call{op, -1, std::vector<int32_t>(args.begin(), args.end()), {}, {}});
  }
  /// Out-variant call of a node with one output: out = node output 0.
  void out_call(const Node& n, const std::string& name, const std::string& overload, std::vector<int> args) {
    int o = T(out(n));
    args.push_back(o);
    call(name, overload, std::move(args), o);
  }

  /// An Int value holding `s` at run time: constant, or computed by symbolic-size ops.
  int sym(const Sym& s) {
    if (auto v = s.maybe_value()) return I(*v);
    std::string key = s.str();
    if (auto it = syms_.find(key); it != syms_.end()) return it->second;
    auto prim = [&](const char* op, int a, int b) {
      EV e;
      e.kind = fb::KernelTypes::Int;
      int r = add(e);
      // ExecuTorch registers these as "executorch_prim::<op>.Scalar": operator name "executorch_prim::<op>",
      // overload "Scalar" (as its emitter writes them).
      std::string o(op);
      call("executorch_prim::" + o.substr(0, o.find('.')), o.substr(o.find('.') + 1), {a, b}, r);
      return r;
    };
    int r = -1;
    const auto& args = s.kind() == Sym::Kind::Symbol ? std::vector<Sym>{} : s.args();
    switch (s.kind()) {
      case Sym::Kind::Symbol: {
        auto it = sources_.find(s.name());
        if (it == sources_.end())
          HFX_THROW("executorch",
                    "expected symbol '{}' to be the size of some input axis of method '{}', got none",
                    s.name(), spec_.name);
        EV e;
        e.kind = fb::KernelTypes::Int;
        e.i = 0;  // placeholder; aten::sym_size.int writes it at run time
        r = add(e);
        call("aten::sym_size", "int", {it->second.first, I(it->second.second)}, r);
        break;
      }
      case Sym::Kind::Add:
      case Sym::Kind::Mul:
      case Sym::Kind::Min:
      case Sym::Kind::Max: {
        const char* op = s.kind() == Sym::Kind::Add   ? "add.Scalar"
                         : s.kind() == Sym::Kind::Mul ? "mul.Scalar"
                         : s.kind() == Sym::Kind::Min ? "sym_min.Scalar"
                                                      : "sym_max.Scalar";
        r = sym(args.at(0));
        for (size_t i = 1; i < args.size(); i++) r = prim(op, r, sym(args[i]));
        break;
      }
      case Sym::Kind::FloorDiv:
        r = prim("floordiv.Scalar", sym(args.at(0)), sym(args.at(1)));
        break;
      case Sym::Kind::Mod: {
        // Python's a % b (floor) from floordiv: the prim mod op truncates like C.
        int a = sym(args.at(0)), b = sym(args.at(1));
        int q = prim("floordiv.Scalar", a, b);
        r = prim("sub.Scalar", a, prim("mul.Scalar", q, b));
        break;
      }
      case Sym::Kind::Const:
        break;
    }
    syms_[key] = r;
    return r;
  }

  const Graph& graph() const { return g_; }
  bool is_mutable_buffer(const Value* v) const { return v && buffers_.count(v) != 0; }

 private:
  EV tensor_ev(const TensorType& t, const std::string& name, bool planned) {
    EV e;
    e.kind = fb::KernelTypes::Tensor;
    e.st = scalar_type(t.dtype);
    int64_t numel = 1;
    for (const Sym& d : t.shape) {
      int64_t ub;
      if (auto c = d.maybe_value()) {
        ub = *c;
      } else {
        SymRange r = env_.bounds(d);
        if (!r.bounded())
          HFX_THROW(
              "executorch",
              "expected every dim of '{}' {} to have an upper bound (the portable runtime refuses "
              "DYNAMIC_UNBOUND), "
              "got '{}' unbounded in method '{}'; give the Dim a max or let the stage-4 program fix cap it",
              name, t.str(), d.str(), spec_.name);
        ub = r.max;
        e.dynamic = true;
      }
      if (ub < 0 || ub > INT32_MAX)
        HFX_THROW("executorch", "expected sizes of '{}' to fit int32, got bound {} for dim '{}'", name, ub,
                  d.str());
      e.sizes.push_back(static_cast<int32_t>(ub));
      numel *= ub;
    }
    e.planned = planned;
    e.nbytes = numel * static_cast<int64_t>(dtype_size(t.dtype));
    return e;
  }

  void lower(const Node& n);
  void lower_nodes();
  void emit_delegate(const xnn::Partition& p);
  void emit_guard_checks();
  void emit_check(const Sym& expr, int64_t lo, int64_t hi, const std::string& what, const std::string& where);
  void plan_memory();

  const PteMethodSpec& spec_;
  const Graph& g_;
  const ShapeEnv& env_;
  Pools& pools_;
  const PteWriteOptions& opt_;
  Plan plan_;
  std::map<const Value*, int> tensors_;
  std::map<int64_t, int> ints_;
  std::map<std::string, int> syms_;
  std::map<std::string, int> op_index_;
  std::map<std::string, std::pair<int, int>> sources_;  // symbol → (tensor value, axis)
  std::set<const Value*> buffers_;
  std::set<int> pinned_;  // whole-method lifetime (inputs, outputs, buffers)
  int true_ = -1, false_ = -1, null_ = -1;
};

using LowerFn = std::function<void(MethodEmitter&, const Node&)>;
/// hfx op → the kernel calls it becomes (ExecuTorch's portable out-variants).
const std::map<std::string, LowerFn>& lowering_table();

}  // namespace hfx::et::detail
