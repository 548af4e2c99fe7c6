// The .pte reader's kernel table (pte_method_impl.h): each ExecuTorch kernel name the writer emits, the
// op-table op that computes it and how its schema arguments map onto the op's inputs and attributes.
#include <cmath>
#include <cstring>

#include "hfx/ops/op_schema.h"
#include "verify/pte_method_impl.h"

namespace hfx::verify::pte_detail {
namespace {

Tensor run_op(const char* op, const std::vector<Tensor>& in, const Attrs& a = {}) {
  const OpSchema& s = op_schema(op);
  return s.kernel(in, normalize_attrs(s, a)).at(0);
}

std::vector<Sym> syms(const std::vector<int64_t>& v) { return std::vector<Sym>(v.begin(), v.end()); }

// An argument read back as the attribute value its EValue holds (the writer picks the EValue by the value's
// type, so the kind says which).
AttrValue read_value(PteMethod::Impl& m, int idx) {
  switch (m.at(idx).kind) {
    case fb::KernelTypes::Int:
      return m.integer(idx);
    case fb::KernelTypes::Double:
      return m.number(idx);
    case fb::KernelTypes::Bool:
      return m.boolean(idx);
    case fb::KernelTypes::String:
      return m.str(idx);
    case fb::KernelTypes::IntList:
      return m.int_list(idx);
    default:
      HFX_THROW("pte", "expected an Int, Double, Bool, String or IntList at value {}, got {}", idx,
                fb::EnumNameKernelTypes(m.at(idx).kind));
  }
}

// The op table's declared call (hfx/ops/op_lowering.h) read back: inputs and attributes from the arguments
// it names, constants checked, the op's kernel run into the out tensor that follows them.
KernelEntry declared(const OpSchema& s) {
  const CallDecl& c = s.lower.executorch;
  return {c.args.size() + 2, [&s, &c](PteMethod::Impl& m, const Args& a) {
            std::vector<Tensor> ins;
            Attrs at;
            for (size_t i = 0; i < c.args.size(); i++) {
              const CallArg& x = c.args[i];
              if (x.kind == CallArg::Kind::Input) {
                if (ins.size() <= static_cast<size_t>(x.input)) ins.resize(static_cast<size_t>(x.input) + 1);
                ins[static_cast<size_t>(x.input)] = m.tensor(a[i]);
              } else if (x.kind == CallArg::Kind::None) {
                if (!m.is_null(a[i])) HFX_THROW("pte", "expected None for {} of {}", x.name, c.target);
              } else if (x.kind == CallArg::Kind::Const) {
                if (!attr_equal(read_value(m, a[i]), x.value))
                  HFX_THROW("pte", "expected {} {} for {}, got {}", x.name, attr_to_string(x.value), c.target,
                            attr_to_string(read_value(m, a[i])));
              } else {
                at.set(x.attr, read_value(m, a[i]));
              }
            }
            m.write(a[c.args.size()], s.kernel(ins, normalize_attrs(s, at)).at(0).contiguous());
          }};
}

}  // namespace

const std::map<std::string, KernelEntry>& kernel_table() {
  static const std::map<std::string, KernelEntry> t = [] {
    std::map<std::string, KernelEntry> k;
    using M = PteMethod::Impl;
    k["aten::add.Scalar_out"] = {
        5, [](M& m, const Args& a) {
          if (m.number(a[2]) != 1) HFX_THROW("pte", "expected alpha 1 for add.Scalar_out");
          m.write(a[3], run_op("aten.add.Scalar", {m.tensor(a[0])}, {{"other", m.number(a[1])}}));
        }};
    k["aten::mul.Scalar_out"] = {
        4, [](M& m, const Args& a) {
          m.write(a[2], run_op("aten.mul.Scalar", {m.tensor(a[0])}, {{"other", m.number(a[1])}}));
        }};
    // reductions
    auto dims_or_all = [](M& m, int idx) {
      return m.is_null(idx) ? std::vector<int64_t>{} : m.int_list(idx);
    };
    k["aten::sum.IntList_out"] = {
        6, [dims_or_all](M& m, const Args& a) {
          if (!m.is_null(a[3])) HFX_THROW("pte", "expected dtype None for sum.IntList_out");
          m.write(a[4], run_op("aten.sum.dim_IntList", {m.tensor(a[0])},
                               {{"dim", dims_or_all(m, a[1])}, {"keepdim", m.boolean(a[2])}}));
        }};
    k["aten::mean.out"] = {6, [dims_or_all](M& m, const Args& a) {
                             if (!m.is_null(a[3])) HFX_THROW("pte", "expected dtype None for mean.out");
                             m.write(a[4],
                                     run_op("aten.mean.dim", {m.tensor(a[0])},
                                            {{"dim", dims_or_all(m, a[1])}, {"keepdim", m.boolean(a[2])}}));
                           }};
    k["aten::native_layer_norm.out"] = {
        9, [](M& m, const Args& a) {
          Tensor x = m.tensor(a[0]);
          auto ns = m.int_list(a[1]);
          if (ns.size() != 1 || ns[0] != x.size(-1))
            HFX_THROW("pte", "expected layer norm over the last dim only, got {} dims", ns.size());
          double eps = m.number(a[4]);
          m.write(a[5],
                  run_op("aten.layer_norm", {x, m.opt_tensor(a[2]), m.opt_tensor(a[3])}, {{"eps", eps}}));
          Tensor mean = run_op("aten.mean.dim", {x}, {{"dim", std::vector<int64_t>{-1}}, {"keepdim", true}});
          Tensor dev = run_op("aten.sub.Tensor", {x, mean});
          Tensor var = run_op("aten.mean.dim", {run_op("aten.mul.Tensor", {dev, dev})},
                              {{"dim", std::vector<int64_t>{-1}}, {"keepdim", true}});
          m.write(a[6], mean);
          m.write(a[7], run_op("aten.rsqrt", {run_op("aten.add.Scalar", {var}, {{"other", eps}})}));
        }};
    // indexing and shape
    auto index_put = [](M& m, const Args& a, int out) {
      if (m.boolean(a[3])) HFX_THROW("pte", "expected accumulate false for index_put");
      Slot& l = m.at(a[1]);
      if (l.kind != fb::KernelTypes::OptionalTensorList)
        HFX_THROW("pte", "expected an OptionalTensorList of indices for index_put");
      int dim = -1;
      for (size_t i = 0; i < l.refs.size(); i++) {
        if (l.refs[i] < 0) continue;
        if (dim >= 0) HFX_THROW("pte", "expected one non-null index for index_put, got several");
        dim = static_cast<int>(i);
      }
      if (dim < 0) HFX_THROW("pte", "expected a non-null index for index_put, got none");
      Tensor r = run_op("aten.index_copy", {m.tensor(a[0]), m.tensor(l.refs[dim]), m.tensor(a[2])},
                        {{"dim", int64_t{dim}}});
      m.write(out, r);
    };
    k["aten::index_put_"] = {5, [index_put](M& m, const Args& a) {
                               index_put(m, a, a[0]);
                               if (a[4] != a[0]) m.write(a[4], m.tensor(a[0]));
                             }};
    k["aten::index_put.out"] = {6, [index_put](M& m, const Args& a) { index_put(m, a, a[4]); }};
    k["aten::cat.out"] = {4, [](M& m, const Args& a) {
                            Slot& l = m.at(a[0]);
                            if (l.kind != fb::KernelTypes::TensorList)
                              HFX_THROW("pte", "expected a TensorList for cat.out");
                            std::vector<Tensor> xs;
                            for (int r : l.refs) xs.push_back(m.tensor(r));
                            const OpSchema& s = op_schema("aten.cat");
                            m.write(a[2], s.kernel(xs, normalize_attrs(s, {{"dim", m.integer(a[1])}})).at(0));
                          }};
    k["aten::slice_copy.Tensor_out"] = {7, [](M& m, const Args& a) {
                                          Attrs at{{"dim", m.integer(a[1])}, {"step", m.integer(a[4])}};
                                          if (!m.is_null(a[2])) at.set("start", Sym(m.integer(a[2])));
                                          if (!m.is_null(a[3])) at.set("end", Sym(m.integer(a[3])));
                                          m.write(a[5], run_op("aten.slice.Tensor", {m.tensor(a[0])}, at));
                                        }};
    k["aten::_to_copy.out"] = {
        5, [](M& m, const Args& a) {
          if (!m.is_null(a[2])) HFX_THROW("pte", "expected memory_format None for _to_copy.out");
          m.write(a[3], run_op("aten._to_copy", {m.tensor(a[0])}, {{"dtype", m.out_dtype(a[3])}}));
        }};
    k["aten::arange.start_out"] = {5, [](M& m, const Args& a) {
                                     if (m.number(a[2]) != 1)
                                       HFX_THROW("pte", "expected step 1 for arange.start_out");
                                     m.write(a[3],
                                             run_op("aten.arange.start", {},
                                                    {{"start", Sym(static_cast<int64_t>(m.number(a[0])))},
                                                     {"end", Sym(static_cast<int64_t>(m.number(a[1])))},
                                                     {"dtype", m.out_dtype(a[3])}}));
                                   }};
    k["aten::full.out"] = {4, [](M& m, const Args& a) {
                             // ExecuTorch's resize refuses negative sizes (safe_numel) before the kernel
                             // writes.
                             for (int64_t d : m.int_list(a[0]))
                               if (d < 0)
                                 HFX_THROW("pte", "expected non-negative sizes for full.out, got {}", d);
                             m.write(a[2], run_op("aten.full", {},
                                                  {{"size", syms(m.int_list(a[0]))},
                                                   {"value", m.number(a[1])},
                                                   {"dtype", m.out_dtype(a[2])}}));
                           }};
    // symbolic sizes
    k["aten::sym_size.int"] = {3, [](M& m, const Args& a) {
                                 Tensor t = m.tensor(a[0]);
                                 Slot& o = m.at(a[2]);
                                 o.kind = fb::KernelTypes::Int;
                                 o.i = t.size(m.integer(a[1]));
                               }};
    auto prim = [](std::function<int64_t(int64_t, int64_t)> f) {
      return KernelEntry{3, [f](M& m, const Args& a) {
                           int64_t r = f(m.integer(a[0]), m.integer(a[1]));
                           Slot& o = m.at(a[2]);
                           o.kind = fb::KernelTypes::Int;
                           o.i = r;
                         }};
    };
    k["executorch_prim::add.Scalar"] = prim([](int64_t x, int64_t y) { return x + y; });
    k["executorch_prim::sub.Scalar"] = prim([](int64_t x, int64_t y) { return x - y; });
    k["executorch_prim::mul.Scalar"] = prim([](int64_t x, int64_t y) { return x * y; });
    k["executorch_prim::floordiv.Scalar"] = prim([](int64_t x, int64_t y) {
      if (y == 0) HFX_THROW("pte", "expected a non-zero divisor in floordiv.Scalar");
      int64_t q = x / y;
      return (x % y != 0 && ((x < 0) != (y < 0))) ? q - 1 : q;
    });
    k["executorch_prim::sym_min.Scalar"] = prim([](int64_t x, int64_t y) { return std::min(x, y); });
    k["executorch_prim::sym_max.Scalar"] = prim([](int64_t x, int64_t y) { return std::max(x, y); });
    for (const OpSchema* s : all_op_schemas()) {
      const CallDecl& c = s->lower.executorch;
      if (!c.declared()) continue;
      if (k.count(c.target))
        HFX_THROW("pte", "expected {} read once, got a declared call and a hand-written one", c.target);
      k[c.target] = declared(*s);
    }
    return k;
  }();
  return t;
}

}  // namespace hfx::verify::pte_detail
