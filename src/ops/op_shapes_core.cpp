// The shape and dtype rules of the elementwise, reduction, linear-algebra, indexing and factory ops of the
// op table (op_table.cpp), over symbolic dims (see op_shapes.h).
#include "hfx/core/error.h"
#include "ops/op_shapes.h"

namespace hfx::op_shapes {

// Broadcast two symbolic shapes (numpy rules). Unequal symbolic dims are decided through the env, which
// records a guard if the ranges cannot tell.
SymShape broadcast(const SymShape& a, const SymShape& b, ShapeEnv& env, const char* op) {
  size_t n = std::max(a.size(), b.size());
  SymShape out(n);
  for (size_t i = 0; i < n; i++) {
    bool ha = i + a.size() >= n, hb = i + b.size() >= n;
    Sym x = ha ? a[i + a.size() - n] : Sym(1);
    Sym y = hb ? b[i + b.size() - n] : Sym(1);
    if (!ha) {
      out[i] = y;
      continue;
    }
    if (!hb) {
      out[i] = x;
      continue;
    }
    if (x.same(y)) {
      out[i] = x;
      continue;
    }
    if (x.is_const() && x.value() == 1) {
      out[i] = y;
      continue;
    }
    if (y.is_const() && y.value() == 1) {
      out[i] = x;
      continue;
    }
    if (x.is_const() && y.is_const())
      HFX_THROW("ops", "expected broadcastable shapes for {}, got {} and {}", op, shape_str(a), shape_str(b));
    if (env.eq(x, y)) {
      out[i] = x;
      continue;
    }
    if (env.eq(x, Sym(1))) {
      out[i] = y;
      continue;
    }
    if (env.eq(y, Sym(1))) {
      out[i] = x;
      continue;
    }
    HFX_THROW("ops", "expected broadcastable shapes for {}, got {} and {}", op, shape_str(a), shape_str(b));
  }
  return out;
}

Out binary(const In& in, const Attrs&, ShapeEnv& env, const char* op) {
  const auto& a = need(in, 0, op);
  const auto& b = need(in, 1, op);
  return {TensorType{promote_types(a.dtype, b.dtype), broadcast(a.shape, b.shape, env, op)}};
}
// True division: integer operands give float32, as torch does.
Out true_div(const In& in, const Attrs& a, ShapeEnv& env) {
  Out o = binary(in, a, env, "aten.div.Tensor");
  if (!dtype_is_float(o[0].dtype)) o[0].dtype = DType::F32;
  return o;
}
Out compare(const In& in, const Attrs&, ShapeEnv& env, const char* op) {
  return {TensorType{DType::Bool, broadcast(need(in, 0, op).shape, need(in, 1, op).shape, env, op)}};
}
Out same_as_first(const In& in, const Attrs&, ShapeEnv&) { return {*in.at(0)}; }
Out float_unary(const In& in, const Attrs&, ShapeEnv&) {
  TensorType t = *in.at(0);
  if (!dtype_is_float(t.dtype)) t.dtype = DType::F32;
  return {t};
}

Out reduce(const In& in, const Attrs& a, ShapeEnv&, const char* op) {
  const auto& x = need(in, 0, op);
  int64_t r = static_cast<int64_t>(x.shape.size());
  std::vector<int64_t> dims = a.ints("dim");
  if (dims.empty()) {
    dims.resize(r);
    std::iota(dims.begin(), dims.end(), 0);
  }
  std::vector<bool> red(r, false);
  for (auto d : dims) red[norm_dim(d, r, op)] = true;
  SymShape s;
  for (int64_t i = 0; i < r; i++) {
    if (!red[i])
      s.push_back(x.shape[i]);
    else if (a.b("keepdim"))
      s.push_back(Sym(1));
  }
  // torch sums integers and bools in int64; mean/amax keep the input dtype.
  DType dt = (std::string(op) == "aten.sum.dim_IntList" && !dtype_is_float(x.dtype)) ? DType::I64 : x.dtype;
  return {TensorType{dt, s}};
}

Out infer_matmul(const In& in, const Attrs&, ShapeEnv& env, const char* op) {
  const auto& a = need(in, 0, op);
  const auto& b = need(in, 1, op);
  if (a.shape.size() < 1 || b.shape.size() < 1) HFX_THROW("ops", "expected at least 1-d operands for {}", op);
  SymShape as = a.shape, bs = b.shape;
  bool a1 = as.size() == 1, b1 = bs.size() == 1;
  if (a1) as.insert(as.begin(), Sym(1));
  if (b1) bs.push_back(Sym(1));
  Sym k1 = as.back(), k2 = bs[bs.size() - 2];
  if (!k1.same(k2) && !env.eq(k1, k2))
    HFX_THROW("ops", "expected matching inner dims for {}, got {} and {}", op, shape_str(a.shape),
              shape_str(b.shape));
  SymShape ab(as.begin(), as.end() - 2), bb(bs.begin(), bs.end() - 2);
  SymShape out = broadcast(ab, bb, env, op);
  if (!a1) out.push_back(as[as.size() - 2]);
  if (!b1) out.push_back(bs.back());
  return {TensorType{promote_types(a.dtype, b.dtype), out}};
}

Out infer_mm(const In& in, const Attrs& at, ShapeEnv& env) {
  if (need(in, 0, "aten.mm").shape.size() != 2 || need(in, 1, "aten.mm").shape.size() != 2)
    HFX_THROW("ops", "expected 2-d operands for aten.mm, got {} and {}", in[0]->str(), in[1]->str());
  return infer_matmul(in, at, env, "aten.mm");
}
Out infer_bmm(const In& in, const Attrs& at, ShapeEnv& env) {
  if (need(in, 0, "aten.bmm").shape.size() != 3 || need(in, 1, "aten.bmm").shape.size() != 3)
    HFX_THROW("ops", "expected 3-d operands for aten.bmm, got {} and {}", in[0]->str(), in[1]->str());
  return infer_matmul(in, at, env, "aten.bmm");
}

Out infer_linear(const In& in, const Attrs&, ShapeEnv& env) {
  const auto& x = need(in, 0, "aten.linear");
  const auto& w = need(in, 1, "aten.linear");
  if (w.shape.size() != 2) HFX_THROW("ops", "expected a 2-d weight for aten.linear, got {}", w.str());
  if (x.shape.empty()) HFX_THROW("ops", "expected at least 1-d input for aten.linear, got a scalar");
  if (!x.shape.back().same(w.shape[1]) && !env.eq(x.shape.back(), w.shape[1]))
    HFX_THROW("ops", "expected input features {} to match weight {}, got {}", w.shape[1].str(), w.str(),
              x.str());
  if (in.size() > 2 && in[2] && (in[2]->shape.size() != 1 || !in[2]->shape[0].same(w.shape[0])))
    HFX_THROW("ops", "expected bias of shape [{}] for aten.linear, got {}", w.shape[0].str(), in[2]->str());
  SymShape s = x.shape;
  s.back() = w.shape[0];
  return {TensorType{promote_types(x.dtype, w.dtype), s}};
}

Out infer_where(const In& in, const Attrs&, ShapeEnv& env) {
  const char* op = "aten.where.self";
  SymShape s = broadcast(need(in, 0, op).shape,
                         broadcast(need(in, 1, op).shape, need(in, 2, op).shape, env, op), env, op);
  return {TensorType{promote_types(in[1]->dtype, in[2]->dtype), s}};
}

Out infer_argmax(const In& in, const Attrs& a, ShapeEnv&) {
  const auto& x = need(in, 0, "aten.argmax");
  int64_t d = norm_dim(a.i("dim"), static_cast<int64_t>(x.shape.size()), "aten.argmax");
  SymShape s = x.shape;
  if (a.b("keepdim"))
    s[d] = Sym(1);
  else
    s.erase(s.begin() + d);
  return {TensorType{DType::I64, s}};
}

Out infer_dim_check_same(const In& in, const Attrs& a, ShapeEnv&, const char* op) {
  const auto& x = need(in, 0, op);
  norm_dim(a.i("dim"), static_cast<int64_t>(x.shape.size()), op);
  return {x};
}

Out infer_layer_norm(const In& in, const Attrs&, ShapeEnv&) { return {need(in, 0, "aten.layer_norm")}; }

Out infer_cat(const In& in, const Attrs& a, ShapeEnv& env) {
  if (in.empty()) HFX_THROW("ops", "expected at least one input for aten.cat, got none");
  const auto& x = need(in, 0, "aten.cat");
  int64_t r = static_cast<int64_t>(x.shape.size());
  int64_t d = norm_dim(a.i("dim"), r, "aten.cat");
  SymShape s = x.shape;
  DType dt = x.dtype;
  for (size_t i = 1; i < in.size(); i++) {
    const auto& y = need(in, i, "aten.cat");
    if (static_cast<int64_t>(y.shape.size()) != r)
      HFX_THROW("ops", "expected rank {} for every aten.cat input, got {} at input {}", r, y.str(), i);
    for (int64_t j = 0; j < r; j++) {
      if (j == d) continue;
      if (!y.shape[j].same(s[j]) && !env.eq(y.shape[j], s[j]))
        HFX_THROW("ops", "expected aten.cat inputs to agree off dim {}, got {} and {}", d, x.str(), y.str());
    }
    s[d] = s[d] + y.shape[d];
    dt = promote_types(dt, y.dtype);
  }
  return {TensorType{dt, s}};
}

Out infer_slice(const In& in, const Attrs& a, ShapeEnv& env) {
  const auto& x = need(in, 0, "aten.slice.Tensor");
  int64_t d = norm_dim(a.i("dim"), static_cast<int64_t>(x.shape.size()), "aten.slice.Tensor");
  Sym n = x.shape[d];
  Sym start = a.sym("start"), end = a.sym("end");
  int64_t step = a.i("step");
  if (step <= 0) HFX_THROW("ops", "expected a positive slice step, got {}", step);
  // Negative constants count from the end, as in Python.
  if (start.is_const() && start.value() < 0) start = n + start;
  if (end.is_const() && end.value() < 0) end = n + end;
  start = env.max(env.min(start, n), Sym(0));
  end = env.max(env.min(end, n), start);
  Sym len = floordiv(end - start + Sym(step - 1), Sym(step));
  SymShape s = x.shape;
  s[d] = len;
  return {TensorType{x.dtype, s}};
}

Out infer_view(const In& in, const Attrs& a, ShapeEnv& env) {
  const auto& x = need(in, 0, "aten.view");
  SymShape s = a.syms("size");
  Sym total(1);
  for (const auto& d : x.shape) total = total * d;
  int infer = -1;
  Sym known(1);
  for (size_t i = 0; i < s.size(); i++) {
    if (s[i].is_const() && s[i].value() == -1) {
      if (infer >= 0) HFX_THROW("ops", "expected at most one -1 in aten.view size, got {}", shape_str(s));
      infer = static_cast<int>(i);
    } else {
      known = known * s[i];
    }
  }
  if (infer >= 0) s[infer] = floordiv(total, known);
  Sym got(1);
  for (const auto& d : s) got = got * d;
  if (!got.same(total) && !env.eq(got, total))
    HFX_THROW("ops", "expected aten.view to keep {} elements of {}, got size {}", total.str(), x.str(),
              shape_str(s));
  return {TensorType{x.dtype, s}};
}

Out infer_permute(const In& in, const Attrs& a, ShapeEnv&) {
  const auto& x = need(in, 0, "aten.permute");
  const auto& dims = a.ints("dims");
  int64_t r = static_cast<int64_t>(x.shape.size());
  if (static_cast<int64_t>(dims.size()) != r)
    HFX_THROW("ops", "expected {} dims for aten.permute of {}, got {}", r, x.str(), dims.size());
  SymShape s(r);
  std::vector<bool> seen(r, false);
  for (int64_t i = 0; i < r; i++) {
    int64_t d = norm_dim(dims[i], r, "aten.permute");
    if (seen[d]) HFX_THROW("ops", "expected a permutation for aten.permute, got dim {} twice", d);
    seen[d] = true;
    s[i] = x.shape[d];
  }
  return {TensorType{x.dtype, s}};
}

Out infer_expand(const In& in, const Attrs& a, ShapeEnv& env) {
  const auto& x = need(in, 0, "aten.expand");
  SymShape s = a.syms("size");
  if (s.size() < x.shape.size())
    HFX_THROW("ops", "expected aten.expand to at least rank {}, got {}", x.shape.size(), shape_str(s));
  size_t lead = s.size() - x.shape.size();
  for (size_t i = lead; i < s.size(); i++) {
    const Sym& have = x.shape[i - lead];
    if (s[i].is_const() && s[i].value() == -1) {
      s[i] = have;
      continue;
    }
    if (have.same(s[i]) || (have.is_const() && have.value() == 1)) continue;
    if (!env.eq(have, s[i]))
      HFX_THROW("ops", "expected size 1 or {} at dim {} for aten.expand of {}, got {}", s[i].str(), i,
                x.str(), have.str());
  }
  return {TensorType{x.dtype, s}};
}

Out infer_unsqueeze(const In& in, const Attrs& a, ShapeEnv&) {
  const auto& x = need(in, 0, "aten.unsqueeze");
  int64_t r = static_cast<int64_t>(x.shape.size()) + 1;
  int64_t d = a.i("dim");
  if (d < 0) d += r;
  if (d < 0 || d >= r)
    HFX_THROW("ops", "expected dim in [{}, {}) for aten.unsqueeze, got {}", -r, r, a.i("dim"));
  SymShape s = x.shape;
  s.insert(s.begin() + d, Sym(1));
  return {TensorType{x.dtype, s}};
}

Out infer_squeeze(const In& in, const Attrs& a, ShapeEnv& env) {
  const auto& x = need(in, 0, "aten.squeeze.dim");
  int64_t d = norm_dim(a.i("dim"), static_cast<int64_t>(x.shape.size()), "aten.squeeze.dim");
  SymShape s = x.shape;
  if (env.eq(s[d], Sym(1))) s.erase(s.begin() + d);
  return {TensorType{x.dtype, s}};
}

Out infer_to_copy(const In& in, const Attrs& a, ShapeEnv&) {
  return {TensorType{a.dtype("dtype"), need(in, 0, "aten._to_copy").shape}};
}

Out infer_arange(const In&, const Attrs& a, ShapeEnv& env) {
  Sym len = env.max(a.sym("end") - a.sym("start"), Sym(0));
  return {TensorType{a.dtype("dtype"), {len}}};
}
Out infer_full(const In&, const Attrs& a, ShapeEnv&) {
  return {TensorType{a.dtype("dtype"), a.syms("size")}};
}

Out to_bool(const In& i, const Attrs&, ShapeEnv&) { return Out{TensorType{DType::Bool, i.at(0)->shape}}; }
Out infer_matmul2(const In& i, const Attrs& a, ShapeEnv& e) { return infer_matmul(i, a, e, "aten.matmul"); }

}  // namespace hfx::op_shapes
