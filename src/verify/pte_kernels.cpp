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

}  // namespace

const std::map<std::string, KernelEntry>& kernel_table() {
  static const std::map<std::string, KernelEntry> t = [] {
    std::map<std::string, KernelEntry> k;
    using M = PteMethod::Impl;
    // binary with alpha (must be 1: hfx never writes another)
    for (auto [et, op] : std::vector<std::pair<const char*, const char*>>{
             {"aten::add.out", "aten.add.Tensor"}, {"aten::sub.out", "aten.sub.Tensor"}})
      k[et] = {5, [op = op](M& m, const Args& a) {
                 if (m.number(a[2]) != 1)
                   HFX_THROW("pte", "expected alpha 1 for {}, got {}", op, m.number(a[2]));
                 m.write(a[3], run_op(op, {m.tensor(a[0]), m.tensor(a[1])}));
               }};
    for (auto [et, op] :
         std::vector<std::pair<const char*, const char*>>{{"aten::mul.out", "aten.mul.Tensor"},
                                                          {"aten::div.out", "aten.div.Tensor"},
                                                          {"aten::maximum.out", "aten.maximum"},
                                                          {"aten::minimum.out", "aten.minimum"},
                                                          {"aten::eq.Tensor_out", "aten.eq.Tensor"},
                                                          {"aten::lt.Tensor_out", "aten.lt.Tensor"},
                                                          {"aten::le.Tensor_out", "aten.le.Tensor"},
                                                          {"aten::gt.Tensor_out", "aten.gt.Tensor"},
                                                          {"aten::ge.Tensor_out", "aten.ge.Tensor"},
                                                          {"aten::logical_and.out", "aten.logical_and"},
                                                          {"aten::logical_or.out", "aten.logical_or"},
                                                          {"aten::mm.out", "aten.mm"},
                                                          {"aten::bmm.out", "aten.bmm"}})
      k[et] = {4, [op = op](M& m, const Args& a) {
                 m.write(a[2], run_op(op, {m.tensor(a[0]), m.tensor(a[1])}));
               }};
    for (const char* u : {"neg", "abs", "relu", "exp", "log", "sqrt", "rsqrt", "tanh", "sigmoid", "sin",
                          "cos", "reciprocal", "erf", "logical_not"}) {
      std::string op = std::string("aten.") + u;
      k[std::string("aten::") + u + ".out"] = {
          3, [op](M& m, const Args& a) { m.write(a[1], run_op(op.c_str(), {m.tensor(a[0])})); }};
    }
    k["aten::add.Scalar_out"] = {
        5, [](M& m, const Args& a) {
          if (m.number(a[2]) != 1) HFX_THROW("pte", "expected alpha 1 for add.Scalar_out");
          m.write(a[3], run_op("aten.add.Scalar", {m.tensor(a[0])}, {{"other", m.number(a[1])}}));
        }};
    k["aten::mul.Scalar_out"] = {
        4, [](M& m, const Args& a) {
          m.write(a[2], run_op("aten.mul.Scalar", {m.tensor(a[0])}, {{"other", m.number(a[1])}}));
        }};
    k["aten::pow.Tensor_Scalar_out"] = {
        4, [](M& m, const Args& a) {
          m.write(a[2], run_op("aten.pow.Tensor_Scalar", {m.tensor(a[0])}, {{"exponent", m.number(a[1])}}));
        }};
    k["aten::where.self_out"] = {
        5, [](M& m, const Args& a) {
          m.write(a[3], run_op("aten.where.self", {m.tensor(a[0]), m.tensor(a[1]), m.tensor(a[2])}));
        }};
    k["aten::gelu.out"] = {
        4, [](M& m, const Args& a) {
          m.write(a[2], run_op("aten.gelu", {m.tensor(a[0])}, {{"approximate", m.str(a[1])}}));
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
    k["aten::amax.out"] = {5, [](M& m, const Args& a) {
                             m.write(a[3], run_op("aten.amax", {m.tensor(a[0])},
                                                  {{"dim", m.int_list(a[1])}, {"keepdim", m.boolean(a[2])}}));
                           }};
    k["aten::argmax.out"] = {5, [](M& m, const Args& a) {
                               if (m.is_null(a[1]))
                                 HFX_THROW("pte", "expected a dim for argmax.out, got None");
                               m.write(a[3],
                                       run_op("aten.argmax", {m.tensor(a[0])},
                                              {{"dim", m.integer(a[1])}, {"keepdim", m.boolean(a[2])}}));
                             }};
    k["aten::cumsum.out"] = {
        5, [](M& m, const Args& a) {
          m.write(a[3], run_op("aten.cumsum", {m.tensor(a[0])}, {{"dim", m.integer(a[1])}}));
        }};
    for (auto [et, op] : std::vector<std::pair<const char*, const char*>>{
             {"aten::_softmax.out", "aten._softmax"}, {"aten::_log_softmax.out", "aten._log_softmax"}})
      k[et] = {5, [op = op](M& m, const Args& a) {
                 if (m.boolean(a[2])) HFX_THROW("pte", "expected half_to_float false for {}", op);
                 m.write(a[3], run_op(op, {m.tensor(a[0])}, {{"dim", m.integer(a[1])}}));
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
    k["aten::embedding.out"] = {7, [](M& m, const Args& a) {
                                  if (m.integer(a[2]) != -1 || m.boolean(a[3]) || m.boolean(a[4]))
                                    HFX_THROW("pte",
                                              "expected embedding.out with padding_idx -1 and no flags");
                                  m.write(a[5], run_op("aten.embedding", {m.tensor(a[0]), m.tensor(a[1])}));
                                }};
    k["aten::index_select.out"] = {
        5, [](M& m, const Args& a) {
          m.write(a[3],
                  run_op("aten.index_select", {m.tensor(a[0]), m.tensor(a[2])}, {{"dim", m.integer(a[1])}}));
        }};
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
    k["aten::view_copy.out"] = {
        4, [](M& m, const Args& a) {
          m.write(a[2],
                  run_op("aten.view", {m.tensor(a[0])}, {{"size", syms(m.int_list(a[1]))}}).contiguous());
        }};
    k["aten::permute_copy.out"] = {
        4, [](M& m, const Args& a) {
          m.write(a[2], run_op("aten.permute", {m.tensor(a[0])}, {{"dims", m.int_list(a[1])}}));
        }};
    k["aten::expand_copy.out"] = {
        5, [](M& m, const Args& a) {
          if (m.boolean(a[2])) HFX_THROW("pte", "expected implicit false for expand_copy.out");
          m.write(a[3], run_op("aten.expand", {m.tensor(a[0])}, {{"size", syms(m.int_list(a[1]))}}));
        }};
    k["aten::unsqueeze_copy.out"] = {
        4, [](M& m, const Args& a) {
          m.write(a[2], run_op("aten.unsqueeze", {m.tensor(a[0])}, {{"dim", m.integer(a[1])}}));
        }};
    k["aten::squeeze_copy.dim_out"] = {
        4, [](M& m, const Args& a) {
          m.write(a[2], run_op("aten.squeeze.dim", {m.tensor(a[0])}, {{"dim", m.integer(a[1])}}));
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
    return k;
  }();
  return t;
}

}  // namespace hfx::verify::pte_detail
