// The .pte writer: lowering (graph node → kernel call), symbolic sizes, memory planning, constant and
// mutable segments, flatbuffer serialization and the extended header. See pte_writer.h.
#include "export/executorch/pte_writer.h"

#include <algorithm>
#include <cstdlib>
#include <cstring>
#include <functional>
#include <map>
#include <set>

#include <flatbuffers/flatbuffers.h>
#include <fmt/format.h>

#include "hfx/core/error.h"
#include "hfx_gen/program_generated.h"

namespace hfx::et {
namespace fb = executorch_flatbuffer;

namespace {

size_t align_up(size_t n, size_t a) { return (n + a - 1) / a * a; }

fb::ScalarType scalar_type(DType dt) {
  switch (dt) {
    case DType::F32: return fb::ScalarType::FLOAT;
    case DType::F16: return fb::ScalarType::HALF;
    case DType::BF16: return fb::ScalarType::BFLOAT16;
    case DType::I64: return fb::ScalarType::LONG;
    case DType::I32: return fb::ScalarType::INT;
    case DType::I8: return fb::ScalarType::CHAR;
    case DType::U8: return fb::ScalarType::BYTE;
    case DType::Bool: return fb::ScalarType::BOOL;
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
    if (!dtype_is_float(self) && v == static_cast<double>(static_cast<int64_t>(v))) return I(static_cast<int64_t>(v));
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
    plan_.calls.push_back(Call{op, std::vector<int32_t>(args.begin(), args.end()), {}, {}});
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
          HFX_THROW("executorch", "expected symbol '{}' to be the size of some input axis of method '{}', got none", s.name(),
                    spec_.name);
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
      case Sym::Kind::FloorDiv: r = prim("floordiv.Scalar", sym(args.at(0)), sym(args.at(1))); break;
      case Sym::Kind::Mod: {
        // Python's a % b (floor) from floordiv: the prim mod op truncates like C.
        int a = sym(args.at(0)), b = sym(args.at(1));
        int q = prim("floordiv.Scalar", a, b);
        r = prim("sub.Scalar", a, prim("mul.Scalar", q, b));
        break;
      }
      case Sym::Kind::Const: break;
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
          HFX_THROW("executorch",
                    "expected every dim of '{}' {} to have an upper bound (the portable runtime refuses DYNAMIC_UNBOUND), "
                    "got '{}' unbounded in method '{}'; give the Dim a max or let the stage-4 program fix cap it",
                    name, t.str(), d.str(), spec_.name);
        ub = r.max;
        e.dynamic = true;
      }
      if (ub < 0 || ub > INT32_MAX)
        HFX_THROW("executorch", "expected sizes of '{}' to fit int32, got bound {} for dim '{}'", name, ub, d.str());
      e.sizes.push_back(static_cast<int32_t>(ub));
      numel *= ub;
    }
    e.planned = planned;
    e.nbytes = numel * static_cast<int64_t>(dtype_size(t.dtype));
    return e;
  }

  void lower(const Node& n);
  void emit_guard_checks();
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

// ---------------------------------------------------------------- the lowering table
using LowerFn = std::function<void(MethodEmitter&, const Node&)>;

const std::map<std::string, LowerFn>& lowering_table() {
  static const std::map<std::string, LowerFn> table = [] {
    std::map<std::string, LowerFn> t;
    auto in = [](const Node& n, size_t i) { return n.inputs.at(i); };
    // binary with alpha
    for (const char* op : {"add", "sub"})
      t[std::string("aten.") + op + ".Tensor"] = [op, in](MethodEmitter& m, const Node& n) {
        m.out_call(n, std::string("aten::") + op, "out", {m.T(in(n, 0)), m.T(in(n, 1)), m.I(1)});
      };
    // binary without alpha: hfx op → (kernel, overload)
    const std::vector<std::tuple<const char*, const char*, const char*>> binary = {
        {"aten.mul.Tensor", "aten::mul", "out"},         {"aten.div.Tensor", "aten::div", "out"},
        {"aten.maximum", "aten::maximum", "out"},        {"aten.minimum", "aten::minimum", "out"},
        {"aten.eq.Tensor", "aten::eq", "Tensor_out"},    {"aten.lt.Tensor", "aten::lt", "Tensor_out"},
        {"aten.le.Tensor", "aten::le", "Tensor_out"},    {"aten.gt.Tensor", "aten::gt", "Tensor_out"},
        {"aten.ge.Tensor", "aten::ge", "Tensor_out"},    {"aten.logical_and", "aten::logical_and", "out"},
        {"aten.logical_or", "aten::logical_or", "out"},  {"aten.mm", "aten::mm", "out"},
        {"aten.bmm", "aten::bmm", "out"},
    };
    for (const auto& [op, k, ov] : binary)
      t[op] = [k = std::string(k), ov = std::string(ov), in](MethodEmitter& m, const Node& n) {
        m.out_call(n, k, ov, {m.T(in(n, 0)), m.T(in(n, 1))});
      };
    for (const char* op : {"neg", "abs", "relu", "exp", "log", "sqrt", "rsqrt", "tanh", "sigmoid", "sin", "cos", "reciprocal",
                           "erf", "logical_not"})
      t[std::string("aten.") + op] = [op, in](MethodEmitter& m, const Node& n) {
        m.out_call(n, std::string("aten::") + op, "out", {m.T(in(n, 0))});
      };
    t["aten.add.Scalar"] = [in](MethodEmitter& m, const Node& n) {
      m.out_call(n, "aten::add", "Scalar_out", {m.T(in(n, 0)), m.scalar(n.attrs.f("other"), in(n, 0)->type.dtype), m.I(1)});
    };
    t["aten.mul.Scalar"] = [in](MethodEmitter& m, const Node& n) {
      m.out_call(n, "aten::mul", "Scalar_out", {m.T(in(n, 0)), m.scalar(n.attrs.f("other"), in(n, 0)->type.dtype)});
    };
    t["aten.pow.Tensor_Scalar"] = [in](MethodEmitter& m, const Node& n) {
      m.out_call(n, "aten::pow", "Tensor_Scalar_out", {m.T(in(n, 0)), m.D(n.attrs.f("exponent"))});
    };
    t["aten.where.self"] = [in](MethodEmitter& m, const Node& n) {
      m.out_call(n, "aten::where", "self_out", {m.T(in(n, 0)), m.T(in(n, 1)), m.T(in(n, 2))});
    };
    t["aten.gelu"] = [in](MethodEmitter& m, const Node& n) {
      m.out_call(n, "aten::gelu", "out", {m.T(in(n, 0)), m.Str(n.attrs.s("approximate"))});
    };
    // reductions
    t["aten.sum.dim_IntList"] = [in](MethodEmitter& m, const Node& n) {
      const auto& d = n.attrs.ints("dim");
      m.out_call(n, "aten::sum", "IntList_out", {m.T(in(n, 0)), d.empty() ? m.N() : m.IL(d), m.B(n.attrs.b("keepdim")), m.N()});
    };
    t["aten.mean.dim"] = [in](MethodEmitter& m, const Node& n) {
      const auto& d = n.attrs.ints("dim");
      m.out_call(n, "aten::mean", "out", {m.T(in(n, 0)), d.empty() ? m.N() : m.IL(d), m.B(n.attrs.b("keepdim")), m.N()});
    };
    t["aten.amax"] = [in](MethodEmitter& m, const Node& n) {
      m.out_call(n, "aten::amax", "out", {m.T(in(n, 0)), m.IL(n.attrs.ints("dim")), m.B(n.attrs.b("keepdim"))});
    };
    t["aten.argmax"] = [in](MethodEmitter& m, const Node& n) {
      m.out_call(n, "aten::argmax", "out", {m.T(in(n, 0)), m.I(n.attrs.i("dim")), m.B(n.attrs.b("keepdim"))});
    };
    t["aten.cumsum"] = [in](MethodEmitter& m, const Node& n) {
      m.out_call(n, "aten::cumsum", "out", {m.T(in(n, 0)), m.I(n.attrs.i("dim")), m.N()});
    };
    for (const char* op : {"_softmax", "_log_softmax"})
      t[std::string("aten.") + op] = [op, in](MethodEmitter& m, const Node& n) {
        m.out_call(n, std::string("aten::") + op, "out", {m.T(in(n, 0)), m.I(n.attrs.i("dim")), m.B(false)});
      };
    t["aten.layer_norm"] = [in](MethodEmitter& m, const Node& n) {
      const Value* x = in(n, 0);
      TensorType stat{DType::F32, x->type.shape};
      stat.shape.back() = Sym(1);
      int o0 = m.T(m.out(n)), o1 = m.temp(stat, n.name + ".mean"), o2 = m.temp(stat, n.name + ".rstd");
      Value* w = n.inputs.size() > 1 ? n.inputs[1] : nullptr;
      Value* b = n.inputs.size() > 2 ? n.inputs[2] : nullptr;
      EV ret;
      ret.kind = fb::KernelTypes::TensorList;
      ret.refs = {o0, o1, o2};
      int r = m.add(ret);
      m.call("aten::native_layer_norm", "out",
             {m.T(x), m.IL(std::vector<Sym>{x->type.shape.back()}), w ? m.T(w) : m.N(), b ? m.T(b) : m.N(), m.D(n.attrs.f("eps")), o0,
              o1, o2},
             r);
    };
    // indexing
    t["aten.embedding"] = [in](MethodEmitter& m, const Node& n) {
      m.out_call(n, "aten::embedding", "out", {m.T(in(n, 0)), m.T(in(n, 1)), m.I(-1), m.B(false), m.B(false)});
    };
    t["aten.index_select"] = [in](MethodEmitter& m, const Node& n) {
      m.out_call(n, "aten::index_select", "out", {m.T(in(n, 0)), m.I(n.attrs.i("dim")), m.T(in(n, 1))});
    };
    t["aten.index_copy"] = [in](MethodEmitter& m, const Node& n) {
      const Value* self = in(n, 0);
      int64_t rank = static_cast<int64_t>(self->type.shape.size());
      int64_t dim = n.attrs.i("dim");
      if (dim < 0) dim += rank;
      std::vector<Value*> idx(static_cast<size_t>(dim), nullptr);
      idx.push_back(n.inputs.at(1));
      if (m.is_mutable_buffer(self)) {
        // The KV-cache update: in place on the buffer (ExecuTorch's special-cased index_put_).
        int buf = m.T(self);
        m.call("aten::index_put_", "", {buf, m.OTL(idx), m.T(in(n, 2)), m.B(false)}, buf);
        m.bind(m.out(n), buf);
      } else {
        m.out_call(n, "aten::index_put", "out", {m.T(self), m.OTL(idx), m.T(in(n, 2)), m.B(false)});
      }
    };
    t["aten.cat"] = [](MethodEmitter& m, const Node& n) {
      m.out_call(n, "aten::cat", "out", {m.TL(n.inputs), m.I(n.attrs.i("dim"))});
    };
    t["aten.slice.Tensor"] = [in](MethodEmitter& m, const Node& n) {
      Sym end = n.attrs.sym("end");
      bool open = end.is_const() && end.value() >= SymRange::kInf;
      m.out_call(n, "aten::slice_copy", "Tensor_out",
                 {m.T(in(n, 0)), m.I(n.attrs.i("dim")), m.sym(n.attrs.sym("start")), open ? m.N() : m.sym(end), m.I(n.attrs.i("step"))});
    };
    t["aten.view"] = [in](MethodEmitter& m, const Node& n) {
      m.out_call(n, "aten::view_copy", "out", {m.T(in(n, 0)), m.IL(n.attrs.syms("size"))});
    };
    t["aten.permute"] = [in](MethodEmitter& m, const Node& n) {
      m.out_call(n, "aten::permute_copy", "out", {m.T(in(n, 0)), m.IL(n.attrs.ints("dims"))});
    };
    t["aten.expand"] = [in](MethodEmitter& m, const Node& n) {
      m.out_call(n, "aten::expand_copy", "out", {m.T(in(n, 0)), m.IL(n.attrs.syms("size")), m.B(false)});
    };
    t["aten.unsqueeze"] = [in](MethodEmitter& m, const Node& n) {
      m.out_call(n, "aten::unsqueeze_copy", "out", {m.T(in(n, 0)), m.I(n.attrs.i("dim"))});
    };
    t["aten.squeeze.dim"] = [in](MethodEmitter& m, const Node& n) {
      m.out_call(n, "aten::squeeze_copy", "dim_out", {m.T(in(n, 0)), m.I(n.attrs.i("dim"))});
    };
    t["aten._to_copy"] = [in](MethodEmitter& m, const Node& n) {
      m.out_call(n, "aten::_to_copy", "out", {m.T(in(n, 0)), m.B(false), m.N()});
    };
    // factories
    t["aten.arange.start"] = [](MethodEmitter& m, const Node& n) {
      m.out_call(n, "aten::arange", "start_out", {m.sym(n.attrs.sym("start")), m.sym(n.attrs.sym("end")), m.I(1)});
    };
    t["aten.full"] = [](MethodEmitter& m, const Node& n) {
      m.out_call(n, "aten::full", "out", {m.IL(n.attrs.syms("size")), m.scalar(n.attrs.f("value"), n.attrs.dtype("dtype"))});
    };
    return t;
  }();
  return table;
}

void MethodEmitter::lower(const Node& n) {
  const auto& t = lowering_table();
  auto it = t.find(n.op);
  if (it == t.end())
    HFX_THROW("executorch",
              "expected only ops with a portable-kernel lowering in method '{}' (after the stage-5 node fixes), got {} at '{}'",
              spec_.name, n.op, n.name);
  it->second(*this, n);
}

Plan MethodEmitter::emit() {
  // Mutable buffers: planned for the whole method, zeroed initial state; not method inputs.
  std::map<std::string, std::string> buffer_out;
  for (const auto& [in_name, out_name] : spec_.mutable_buffers) {
    Value* v = g_.find_input(in_name);
    if (!v) HFX_THROW("executorch", "expected mutable buffer '{}' to be a graph input of '{}', got none", in_name, spec_.name);
    if (!g_.find_output(out_name))
      HFX_THROW("executorch", "expected the new value of buffer '{}' as graph output '{}', got none", in_name, out_name);
    buffers_.insert(v);
    buffer_out[out_name] = in_name;
    EV e = tensor_ev(v->type, v->name, true);
    if (e.dynamic) HFX_THROW("executorch", "expected a static shape for mutable buffer '{}', got {}", in_name, v->type.str());
    e.data_buffer_idx = pools_.add_zeroed(static_cast<size_t>(e.nbytes));
    int idx = add(e);
    tensors_[v] = idx;
    pinned_.insert(idx);
  }
  for (Value* v : g_.inputs()) {
    if (buffers_.count(v)) continue;
    int idx = add(tensor_ev(v->type, v->name, true));
    tensors_[v] = idx;
    pinned_.insert(idx);
    plan_.inputs.push_back(idx);
    for (size_t a = 0; a < v->type.shape.size(); a++) {
      const Sym& d = v->type.shape[a];
      if (d.kind() == Sym::Kind::Symbol && !sources_.count(d.name())) sources_[d.name()] = {idx, static_cast<int>(a)};
    }
  }
  emit_guard_checks();
  for (const auto& n : g_.nodes()) lower(*n);
  for (Value* v : g_.outputs()) {
    if (auto it = buffer_out.find(v->name); it != buffer_out.end()) {
      const Value* buf = g_.find_input(it->second);
      if (T(v) != T(buf))
        HFX_THROW("executorch", "expected output '{}' to be the in-place update of buffer '{}' (aten.index_copy on it), got {}",
                  v->name, it->second, v->producer ? v->producer->op : "no producer");
      continue;
    }
    int idx = T(v);
    pinned_.insert(idx);
    plan_.outputs.push_back(idx);
  }
  // Every user of a buffer other than its in-place update must come before that update.
  for (const Value* b : buffers_) {
    bool written = false;
    for (const auto& n : g_.nodes()) {
      bool uses = std::find(n->inputs.begin(), n->inputs.end(), b) != n->inputs.end();
      if (!uses) continue;
      if (written) HFX_THROW("executorch", "expected every read of buffer '{}' before its in-place update, got {} after it", b->name, n->name);
      if (n->op == "aten.index_copy" && n->inputs[0] == b) written = true;
    }
  }
  plan_memory();
  return std::move(plan_);
}

// The capture's deferred guards (lower <= expr <= upper over input sizes), enforced the way ExecuTorch
// enforces dynamic bounds, since its runtime registers no assert kernel (its own exporter drops
// aten._assert_scalar): aten::full.out of size [expr - lower] into a bool tensor bounded at
// upper - lower. Outside the guard the kernel's resize fails (above the bound: NotSupported; negative:
// InvalidArgument) and the method stops before any node of the model ran. Each check's stacktrace
// frame names the guard, so a reader can say which contract the call broke.
void MethodEmitter::emit_guard_checks() {
  for (const Guard& gd : spec_.guards) {
    bool sourced = true;
    for (const std::string& name : gd.expr.free_symbols()) sourced = sourced && sources_.count(name);
    const SymRange r = env_.bounds(gd.expr);
    const int64_t lo = gd.lower > -SymRange::kInf ? gd.lower : r.min,
                  hi = gd.upper < SymRange::kInf ? gd.upper : r.max;
    if (!sourced || lo <= -SymRange::kInf || hi >= SymRange::kInf || hi - lo > INT32_MAX || hi < lo) {
      plan_.warnings.push_back(fmt::format(
          "[executorch] deferred guard '{}' ({}) not checked in method '{}': {}", gd.what, gd.where,
          spec_.name, sourced ? "its bounds do not fit a tensor size" : "a symbol has no input axis"));
      continue;
    }
    EV e = tensor_ev(TensorType{DType::Bool, {Sym(hi - lo)}}, "contract check", true);
    e.dynamic = true;
    const int out = add(e);
    call("aten::full", "out", {IL(std::vector<Sym>{gd.expr - Sym(lo)}), I(0), out}, out);
    plan_.calls.back().check = fmt::format("{} in [{}, {}] ({})", gd.expr.str(), lo, hi, gd.what);
    plan_.calls.back().where = gd.where;
  }
}

// Greedy planning by size: each tensor takes the lowest aligned offset that does not overlap a tensor
// already placed whose lifetime (first..last instruction touching it) intersects its own.
void MethodEmitter::plan_memory() {
  const int n_calls = static_cast<int>(plan_.calls.size());
  std::vector<int> first(plan_.values.size(), INT32_MAX), last(plan_.values.size(), -1);
  auto touch = [&](int v, int at) {
    if (v < 0 || plan_.values[v].kind != fb::KernelTypes::Tensor) return;
    first[v] = std::min(first[v], at);
    last[v] = std::max(last[v], at);
  };
  for (int c = 0; c < n_calls; c++) {
    for (int a : plan_.calls[c].args) {
      if (a < 0) continue;
      const EV& e = plan_.values[a];
      touch(a, c);
      if (e.kind == fb::KernelTypes::TensorList || e.kind == fb::KernelTypes::OptionalTensorList)
        for (int r : e.refs) touch(r, c);
    }
  }
  struct Item {
    int v;
    int64_t size;
    int lo, hi;
  };
  std::vector<Item> items;
  for (size_t v = 0; v < plan_.values.size(); v++) {
    const EV& e = plan_.values[v];
    if (e.kind != fb::KernelTypes::Tensor || !e.planned) continue;
    int lo = first[v], hi = last[v];
    if (pinned_.count(static_cast<int>(v)) || hi < 0) lo = -1, hi = n_calls;
    items.push_back({static_cast<int>(v), static_cast<int64_t>(align_up(static_cast<size_t>(e.nbytes), opt_.memory_alignment)), lo, hi});
  }
  std::stable_sort(items.begin(), items.end(), [](const Item& a, const Item& b) { return a.size > b.size; });
  std::vector<std::pair<int64_t, const Item*>> placed;  // offset, item
  int64_t total = 0;
  for (const Item& it : items) {
    std::vector<std::pair<int64_t, int64_t>> busy;
    for (const auto& [off, p] : placed)
      if (!(p->hi < it.lo || it.hi < p->lo)) busy.emplace_back(off, off + p->size);
    std::sort(busy.begin(), busy.end());
    int64_t off = 0;
    for (const auto& [b0, b1] : busy) {
      if (off + it.size <= b0) break;
      off = std::max(off, b1);
    }
    placed.emplace_back(off, &it);
    plan_.values[it.v].mem_offset = static_cast<uint64_t>(off);
    total = std::max(total, off + it.size);
  }
  plan_.non_const_buffer_sizes = {0, total};
}

// ---------------------------------------------------------------- serialization
flatbuffers::Offset<fb::EValue> pack(flatbuffers::FlatBufferBuilder& b, const EV& e) {
  flatbuffers::Offset<void> u;
  switch (e.kind) {
    case fb::KernelTypes::Null: u = fb::CreateNull(b).Union(); break;
    case fb::KernelTypes::Int: u = fb::CreateInt(b, e.i).Union(); break;
    case fb::KernelTypes::Bool: u = fb::CreateBool(b, e.b).Union(); break;
    case fb::KernelTypes::Double: u = fb::CreateDouble(b, e.d).Union(); break;
    case fb::KernelTypes::String: u = fb::CreateStringDirect(b, e.s.c_str()).Union(); break;
    case fb::KernelTypes::IntList: u = fb::CreateIntListDirect(b, &e.ints).Union(); break;
    case fb::KernelTypes::TensorList: u = fb::CreateTensorListDirect(b, &e.refs).Union(); break;
    case fb::KernelTypes::OptionalTensorList: u = fb::CreateOptionalTensorListDirect(b, &e.refs).Union(); break;
    case fb::KernelTypes::Tensor: {
      std::vector<uint8_t> dim_order(e.sizes.size());
      for (size_t i = 0; i < dim_order.size(); i++) dim_order[i] = static_cast<uint8_t>(i);
      flatbuffers::Offset<fb::AllocationDetails> alloc = 0;
      if (e.planned)
        alloc = fb::CreateAllocationDetails(b, 1, static_cast<uint32_t>(e.mem_offset & 0xffffffffu),
                                            static_cast<uint32_t>(e.mem_offset >> 32));
      u = fb::CreateTensorDirect(b, e.st, 0, &e.sizes, &dim_order, false, e.data_buffer_idx, alloc, 0,
                                 e.dynamic ? fb::TensorShapeDynamism::DYNAMIC_BOUND : fb::TensorShapeDynamism::STATIC)
              .Union();
      break;
    }
    default: HFX_THROW("executorch", "expected a value kind the writer packs, got {}", static_cast<int>(e.kind));
  }
  return fb::CreateEValue(b, e.kind, u);
}

flatbuffers::Offset<fb::ExecutionPlan> pack(flatbuffers::FlatBufferBuilder& b, const Plan& p) {
  std::vector<flatbuffers::Offset<fb::EValue>> values;
  for (const EV& e : p.values) values.push_back(pack(b, e));
  std::vector<flatbuffers::Offset<fb::Instruction>> instrs;
  for (const Call& c : p.calls)
    instrs.push_back(fb::CreateInstruction(b, fb::InstructionArguments::KernelCall, fb::CreateKernelCallDirect(b, c.op, &c.args).Union()));
  // Contract checks carry a stacktrace frame (one FrameList per instruction, empty for the others).
  std::vector<flatbuffers::Offset<fb::FrameList>> frames;
  const bool checks =
      std::any_of(p.calls.begin(), p.calls.end(), [](const Call& c) { return !c.check.empty(); });
  for (const Call& c : p.calls) {
    std::vector<flatbuffers::Offset<fb::Frame>> items;
    if (!c.check.empty()) {
      const size_t colon = c.where.rfind(':');
      const std::string file = c.where.substr(0, colon);
      const int line = colon == std::string::npos ? 0 : std::atoi(c.where.c_str() + colon + 1);
      items.push_back(fb::CreateFrameDirect(b, file.c_str(), line, "hfx.contract", c.check.c_str()));
    }
    if (checks) frames.push_back(fb::CreateFrameListDirect(b, &items));
  }
  std::vector<flatbuffers::Offset<fb::Chain>> chains{
      fb::CreateChainDirect(b, &p.inputs, &p.outputs, &instrs, checks ? &frames : nullptr)};
  std::vector<flatbuffers::Offset<fb::Operator>> ops;
  for (const auto& [n, o] : p.operators) ops.push_back(fb::CreateOperatorDirect(b, n.c_str(), o.c_str()));
  std::vector<flatbuffers::Offset<fb::BackendDelegate>> delegates;
  auto meta = fb::CreateContainerMetadataDirect(b, "", "");
  return fb::CreateExecutionPlanDirect(b, p.name.c_str(), meta, &values, &p.inputs, &p.outputs, &chains, &ops, &delegates,
                                       &p.non_const_buffer_sizes);
}

Plan const_plan(const PteConstMethod& m) {
  Plan p;
  p.name = m.name;
  for (const PteConstant& c : m.values) {
    EV e;
    if (auto* i = std::get_if<int64_t>(&c)) e.kind = fb::KernelTypes::Int, e.i = *i;
    else if (auto* b = std::get_if<bool>(&c)) e.kind = fb::KernelTypes::Bool, e.b = *b;
    else e.kind = fb::KernelTypes::Double, e.d = std::get<double>(c);
    p.values.push_back(e);
    p.outputs.push_back(static_cast<int32_t>(p.values.size() - 1));
  }
  return p;
}

void put_u32(uint8_t* p, uint32_t v) {
  for (int i = 0; i < 4; i++) p[i] = static_cast<uint8_t>(v >> (8 * i));
}
void put_u64(uint8_t* p, uint64_t v) {
  for (int i = 0; i < 8; i++) p[i] = static_cast<uint8_t>(v >> (8 * i));
}

}  // namespace

std::vector<std::string> pte_lowered_ops() {
  std::vector<std::string> v;
  for (const auto& [k, _] : lowering_table()) v.push_back(k);
  return v;
}

PteWriteResult write_pte(const std::vector<PteMethodSpec>& methods, const std::vector<PteConstMethod>& const_methods,
                         const PteWriteOptions& opt) {
  PteWriteResult res;
  Pools pools(opt);
  std::vector<Plan> plans;
  std::set<std::string> names, all_ops;
  for (const auto& m : methods) {
    if (!m.graph) HFX_THROW("executorch", "expected a graph for method '{}', got none", m.name);
    if (!names.insert(m.name).second) HFX_THROW("executorch", "expected unique method names, got '{}' twice", m.name);
    MethodEmitter em(m, pools, opt);
    plans.push_back(em.emit());
    const Plan& p = plans.back();
    PteMethodStats st;
    st.name = p.name;
    st.instructions = static_cast<int>(p.calls.size());
    st.values = static_cast<int>(p.values.size());
    st.planned_bytes = p.non_const_buffer_sizes.back();
    for (const EV& e : p.values)
      if (e.kind == fb::KernelTypes::Tensor && e.planned) st.naive_bytes += static_cast<int64_t>(align_up(e.nbytes, opt.memory_alignment));
    for (const auto& [n, o] : p.operators) {
      std::string full = o.empty() ? n : n + "." + o;
      st.operators.push_back(full);
      all_ops.insert(full);
    }
    res.methods.push_back(st);
    res.warnings.insert(res.warnings.end(), p.warnings.begin(), p.warnings.end());
  }
  for (const auto& c : const_methods) {
    if (!names.insert(c.name).second) HFX_THROW("executorch", "expected unique method names, got '{}' twice", c.name);
    plans.push_back(const_plan(c));
  }
  res.operators.assign(all_ops.begin(), all_ops.end());
  res.constant_bytes = static_cast<int64_t>(pools.constants.size());
  res.mutable_bytes = static_cast<int64_t>(pools.mutables.size());

  // Segments after the flatbuffer: [0] constants, [1] initial values of mutable buffers (if any).
  std::vector<std::pair<const std::vector<uint8_t>*, uint64_t>> segs;  // data, offset from segment base
  uint64_t seg_end = 0;
  auto add_seg = [&](const std::vector<uint8_t>& d) {
    uint64_t off = align_up(seg_end, opt.segment_alignment);
    segs.emplace_back(&d, off);
    seg_end = off + d.size();
    return static_cast<uint32_t>(segs.size() - 1);
  };
  uint32_t const_seg = add_seg(pools.constants);
  bool has_mut = pools.mutable_offsets.size() > 1;
  uint32_t mut_seg = has_mut ? add_seg(pools.mutables) : 0;

  flatbuffers::FlatBufferBuilder b(1 << 16);
  std::vector<flatbuffers::Offset<fb::ExecutionPlan>> eps;
  for (const Plan& p : plans) eps.push_back(pack(b, p));
  std::vector<flatbuffers::Offset<fb::DataSegment>> seg_tables;
  for (const auto& [d, off] : segs) seg_tables.push_back(fb::CreateDataSegment(b, off, d->size()));
  auto cseg = fb::CreateSubsegmentOffsetsDirect(b, const_seg, &pools.constant_offsets);
  std::vector<flatbuffers::Offset<fb::SubsegmentOffsets>> msegs;
  if (has_mut) msegs.push_back(fb::CreateSubsegmentOffsetsDirect(b, mut_seg, &pools.mutable_offsets));
  std::vector<flatbuffers::Offset<fb::Buffer>> no_buffers;  // deprecated inline constants: always empty
  std::vector<flatbuffers::Offset<fb::BackendDelegateInlineData>> no_delegate_data;
  auto root = fb::CreateProgramDirect(b, /*version=*/0, &eps, &no_buffers, &no_delegate_data, &seg_tables, cseg,
                                      has_mut ? &msegs : nullptr);
  fb::FinishProgramBuffer(b, root);

  // Insert the extended header after the 8-byte flatbuffer header; 32 bytes keep every internal
  // alignment (a multiple of the largest force_align, 16). Only the root offset is absolute.
  constexpr size_t kHeader = 32;
  const uint8_t* fbdata = b.GetBufferPointer();
  size_t fbsize = b.GetSize();
  size_t program_size = fbsize + kHeader;
  uint64_t base = align_up(program_size, opt.segment_alignment);
  std::vector<uint8_t>& out = res.bytes;
  out.assign(base + seg_end, 0);
  uint32_t root_off = static_cast<uint32_t>(fbdata[0] | fbdata[1] << 8 | fbdata[2] << 16 | static_cast<uint32_t>(fbdata[3]) << 24);
  put_u32(out.data(), root_off + static_cast<uint32_t>(kHeader));
  std::memcpy(out.data() + 4, fbdata + 4, 4);
  uint8_t* h = out.data() + 8;
  std::memcpy(h, "eh00", 4);
  put_u32(h + 4, 32);                    // header length (without padding)
  put_u64(h + 8, program_size);          // flatbuffer data incl. headers
  put_u64(h + 16, base);                 // segment base offset
  put_u64(h + 24, seg_end);              // segment data size
  std::memcpy(out.data() + 8 + kHeader, fbdata + 8, fbsize - 8);
  for (const auto& [d, off] : segs)
    if (!d->empty()) std::memcpy(out.data() + base + off, d->data(), d->size());
  return res;
}

}  // namespace hfx::et
