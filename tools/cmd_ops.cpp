// `hfx ops`: lists the op table (name, arity, attributes with defaults, composite or primitive) and, with
// --lowerings, each op's declared one-call lowerings (hfx/ops/op_lowering.h).
#include <fmt/format.h>

#include "commands.h"
#include "hfx/ops/op_schema.h"

namespace hfx::cli {

namespace {
// "executorch=aten::abs.out aten=torch.ops.aten.abs.default onnx=Abs xnnpack=XNNAbs"; a backend without a
// declared call shows the route the op table states for it, e.g. onnx=hand_written("keepdims and the dim as
// attributes").
std::string lowerings(const OpSchema& s) {
  const OpLowering& l = s.lower;
  auto one = [](const char* backend, const std::string& target, const RouteNote& r) {
    if (!target.empty()) return fmt::format(" {}={}", backend, target);
    return fmt::format(" {}={}{}", backend, route_name(r.route), r.why.empty() ? "" : "(\"" + r.why + "\")");
  };
  return one("executorch", l.executorch.target, l.executorch_route) +
         one("aten", l.aten.target, l.aten_route) + one("onnx", l.onnx, l.onnx_route) +
         one("xnnpack", l.xnnpack, l.xnnpack_route);
}
}  // namespace

void register_ops(CLI::App& app) {
  auto* cmd = app.add_subcommand("ops", "List the op table");
  static bool show_lowerings = false;
  cmd->add_flag(
      "--lowerings", show_lowerings,
      "also each op's declared lowerings (ExecuTorch kernel, ATen overload, ONNX op, XNNPACK node) "
      "and, where none is declared, how that backend takes the op (hand_written, decomposed, refused, "
      "not_delegated) and why");
  cmd->footer("Example:\n  hfx ops --lowerings");
  cmd->callback([] {
    for (const OpSchema* s : all_op_schemas()) {
      std::string attrs;
      for (const auto& a : s->attrs)
        attrs += fmt::format("{}{}{}", attrs.empty() ? "" : ", ", a.name,
                             a.required ? "" : "=" + attr_to_string(a.default_value));
      fmt::print("{:<24} in={}{} {}{}\n", s->name, s->min_inputs,
                 s->max_inputs == s->min_inputs
                     ? ""
                     : (s->max_inputs < 0 ? "+" : fmt::format("..{}", s->max_inputs)),
                 s->composite() ? "[composite] " : "", attrs.empty() ? "" : "{" + attrs + "}");
      if (show_lowerings) fmt::print("    {}\n", lowerings(*s));
    }
  });
}

}  // namespace hfx::cli
