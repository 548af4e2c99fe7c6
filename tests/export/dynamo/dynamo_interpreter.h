// The test interpreter of written Dynamo programs: runs an ExportedProgram's graph JSON (models/model.json)
// with hfx's own kernels, each ATen target mapped back to the op it came from. Used by interpreter_test.cpp
// (whole models against eager) and dynamo_op_conformance_test.cpp (every op's case).
#pragma once
#include <cmath>
#include <map>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "hfx/core/error.h"
#include "hfx/core/symbolic.h"
#include "hfx/core/tensor.h"
#include "hfx/ops/op_schema.h"

namespace hfx::dynamo::interp {

using nlohmann::json;

inline DType dtype_of(int st) {
  switch (st) {
    case 1:
      return DType::U8;
    case 2:
      return DType::I8;
    case 4:
      return DType::I32;
    case 5:
      return DType::I64;
    case 6:
      return DType::F16;
    case 7:
      return DType::F32;
    case 12:
      return DType::Bool;
    case 13:
      return DType::BF16;
  }
  HFX_THROW("test", "expected a known ScalarType, got {}", st);
}

class Interpreter {
 public:
  std::map<std::string, Tensor> tensors;
  std::map<std::string, int64_t> ints;

  double as_double(const json& a) {
    const json& v = a.contains("as_float") ? a["as_float"]
                    : a.contains("as_int") ? a["as_int"]
                                           : a["as_bool"];
    if (v.is_string()) return v == "Infinity" ? INFINITY : -INFINITY;
    if (v.is_boolean()) return v.get<bool>() ? 1.0 : 0.0;
    return v.get<double>();
  }
  int64_t as_int(const json& a) {
    if (a.contains("as_int")) return a["as_int"];
    if (a.contains("as_sym_int")) {
      const json& s = a["as_sym_int"];
      return s.contains("as_int") ? s["as_int"].get<int64_t>() : ints.at(s["as_name"]);
    }
    if (a.contains("as_name")) return ints.at(a["as_name"]);
    HFX_THROW("test", "expected an int argument, got {}", a.dump());
  }
  std::vector<int64_t> as_ints(const json& a) {
    std::vector<int64_t> v;
    if (a.contains("as_ints"))
      for (const auto& x : a["as_ints"]) v.push_back(x);
    else
      for (const auto& x : a["as_sym_ints"]) v.push_back(as_int(x));
    return v;
  }
  Tensor tensor(const json& a) { return tensors.at(a["as_tensor"]["name"]); }
  bool is_tensor(const json& a) { return a.contains("as_tensor"); }

  void run(const json& graph) {
    for (const auto& n : graph["nodes"]) step(n);
  }

 private:
  // A call the op table declares (hfx/ops/op_lowering.h), read back by its argument names.
  void declared(const OpSchema& s, std::map<std::string, json>& a, const json& node) {
    std::vector<Tensor> in;
    Attrs attrs;
    for (const CallArg& x : s.lower.aten.args) {
      if (!a.count(x.name)) HFX_THROW("test", "expected argument {} of {}", x.name, s.lower.aten.target);
      const json& v = a[x.name];
      if (x.kind == CallArg::Kind::Input) {
        if (in.size() <= static_cast<size_t>(x.input)) in.resize(static_cast<size_t>(x.input) + 1);
        in[static_cast<size_t>(x.input)] = tensor(v);
      } else if (x.kind == CallArg::Kind::Attr) {
        if (v.contains("as_bool"))
          attrs.set(x.attr, v["as_bool"].get<bool>());
        else if (v.contains("as_float"))
          attrs.set(x.attr, as_double(v));
        else if (v.contains("as_ints"))
          attrs.set(x.attr, as_ints(v));
        else if (v.contains("as_string"))
          attrs.set(x.attr, v["as_string"].get<std::string>());
        else
          attrs.set(x.attr, as_int(v));
      }
    }
    call(s.name, in, attrs, node);
  }

  void call(const std::string& op, const std::vector<Tensor>& in, const Attrs& attrs, const json& node) {
    const OpSchema& s = op_schema(op);
    std::vector<Tensor> out = s.kernel(in, normalize_attrs(s, attrs));
    tensors[node["outputs"][0]["as_tensor"]["name"]] = out.at(0);
  }

  void step(const json& n) {
    const std::string t = n["target"];
    std::map<std::string, json> a;
    for (const auto& x : n["inputs"]) a[x["name"]] = x["arg"];
    auto sym_out = [&](int64_t v) { ints[n["outputs"][0]["as_sym_int"]["as_name"]] = v; };
    auto bool_out = [&](bool v) { ints[n["outputs"][0]["as_sym_bool"]["as_name"]] = v; };
    // ---- symbolic ints
    if (t == "torch.ops.aten.sym_size.int")
      return sym_out(tensor(a["self"]).size(a["dim"]["as_int"].get<int64_t>()));
    if (t == "_operator.add") return sym_out(as_int(a["a"]) + as_int(a["b"]));
    if (t == "_operator.sub") return sym_out(as_int(a["a"]) - as_int(a["b"]));
    if (t == "_operator.mul") return sym_out(as_int(a["a"]) * as_int(a["b"]));
    if (t == "_operator.floordiv") {
      int64_t x = as_int(a["a"]), y = as_int(a["b"]);
      return sym_out(x / y - ((x % y != 0) && ((x < 0) != (y < 0))));
    }
    if (t == "_operator.mod") {
      int64_t x = as_int(a["a"]), y = as_int(a["b"]), m = x % y;
      return sym_out(m != 0 && ((m < 0) != (y < 0)) ? m + y : m);
    }
    if (t == "torch.sym_min") return sym_out(std::min(as_int(a["a"]), as_int(a["b"])));
    if (t == "torch.sym_max") return sym_out(std::max(as_int(a["a"]), as_int(a["b"])));
    if (t == "_operator.ge") return bool_out(as_int(a["a"]) >= as_int(a["b"]));
    if (t == "_operator.le") return bool_out(as_int(a["a"]) <= as_int(a["b"]));
    if (t == "_operator.eq") return bool_out(as_int(a["a"]) == as_int(a["b"]));
    if (t == "torch.ops.aten._assert_scalar.default") {
      if (!ints.at(a["self"]["as_sym_bool"]["as_name"]))
        HFX_THROW("test", "{}", a["assert_msg"]["as_string"].get<std::string>());
      return;
    }
    // ---- tensors: back to hfx ops
    auto opt = [&](const char* k) { return a.count(k) && !a[k].contains("as_none"); };
    auto kw_bool = [&](const char* k, bool d) { return a.count(k) ? a[k]["as_bool"].get<bool>() : d; };
    const std::string aten = t.substr(std::string("torch.ops.").size());  // "aten.add.Tensor"
    auto base = aten.substr(0, aten.rfind('.'));                          // "aten.add"
    auto overload = aten.substr(aten.rfind('.') + 1);
    if (overload == "Tensor" && (base == "aten.add" || base == "aten.mul") && !is_tensor(a["other"]))
      return call(base + ".Scalar", {tensor(a["self"])}, Attrs{{"other", as_double(a["other"])}}, n);
    if (const OpSchema* s = find_op_by_aten_target(t)) return declared(*s, a, n);
    if (aten == "aten.linear.default") {
      std::vector<Tensor> in{tensor(a["input"]), tensor(a["weight"])};
      if (opt("bias")) in.push_back(tensor(a["bias"]));
      return call("aten.linear", in, {}, n);
    }
    if (aten == "aten.gelu.default")
      return call("aten.gelu", {tensor(a["self"])},
                  Attrs{{"approximate",
                         a.count("approximate") ? a["approximate"]["as_string"].get<std::string>() : "none"}},
                  n);
    if (aten == "aten.sum.dim_IntList" || aten == "aten.mean.dim" || aten == "aten.amax.default")
      return call(aten == "aten.amax.default" ? "aten.amax" : aten, {tensor(a["self"])},
                  Attrs{{"dim", as_ints(a["dim"])}, {"keepdim", kw_bool("keepdim", false)}}, n);
    if (aten == "aten.cumsum.default")
      return call("aten.cumsum", {tensor(a["self"])}, Attrs{{"dim", as_int(a["dim"])}}, n);
    if (aten == "aten.permute.default")
      return call("aten.permute", {tensor(a["self"])}, Attrs{{"dims", as_ints(a["dims"])}}, n);
    if (aten == "aten.layer_norm.default") {
      std::vector<Tensor> in{tensor(a["input"])};
      in.push_back(opt("weight") ? tensor(a["weight"]) : Tensor());
      in.push_back(opt("bias") ? tensor(a["bias"]) : Tensor());
      return call("aten.layer_norm", in, Attrs{{"eps", as_double(a["eps"])}}, n);
    }
    if (aten == "aten.cat.default") {
      std::vector<Tensor> in;
      for (const auto& x : a["tensors"]["as_tensors"]) in.push_back(tensors.at(x["name"]));
      return call("aten.cat", in, Attrs{{"dim", as_int(a["dim"])}}, n);
    }
    if (aten == "aten.slice.Tensor") {
      int64_t end = as_int(a["end"]);
      if (end == INT64_MAX) end = SymRange::kInf;
      return call(aten, {tensor(a["self"])},
                  Attrs{{"dim", as_int(a["dim"])},
                        {"start", as_int(a["start"])},
                        {"end", end},
                        {"step", as_int(a["step"])}},
                  n);
    }
    if (aten == "aten.view.default")
      return call("aten.view", {tensor(a["self"])}, Attrs{{"size", as_ints(a["size"])}}, n);
    if (aten == "aten.reshape.default")
      return call("aten.view", {tensor(a["self"])}, Attrs{{"size", as_ints(a["shape"])}}, n);
    if (aten == "aten.expand.default")
      return call("aten.expand", {tensor(a["self"])}, Attrs{{"size", as_ints(a["size"])}}, n);
    if (aten == "aten._to_copy.default")
      return call("aten._to_copy", {tensor(a["self"])},
                  Attrs{{"dtype", dtype_of(a["dtype"]["as_scalar_type"])}}, n);
    if (aten == "aten.arange.start")
      return call(aten, {},
                  Attrs{{"start", as_int(a["start"])},
                        {"end", as_int(a["end"])},
                        {"dtype", dtype_of(a["dtype"]["as_scalar_type"])}},
                  n);
    if (aten == "aten.full.default")
      return call("aten.full", {},
                  Attrs{{"size", as_ints(a["size"])},
                        {"value", as_double(a["fill_value"])},
                        {"dtype", dtype_of(a["dtype"]["as_scalar_type"])}},
                  n);
    if (aten == "aten.rms_norm.default")
      return call("hfx.rms_norm", {tensor(a["input"]), tensor(a["weight"])},
                  Attrs{{"eps", as_double(a["eps"])}}, n);
    if (aten == "aten.scaled_dot_product_attention.default") {
      std::vector<Tensor> in{tensor(a["query"]), tensor(a["key"]), tensor(a["value"])};
      if (opt("attn_mask")) in.push_back(tensor(a["attn_mask"]));
      return call("hfx.sdpa", in,
                  Attrs{{"scale", as_double(a["scale"])}, {"causal", kw_bool("is_causal", false)}}, n);
    }
    HFX_THROW("test", "expected a target the interpreter knows, got {}", t);
  }
};

}  // namespace hfx::dynamo::interp
