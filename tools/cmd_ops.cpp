// `hfx ops`: lists the op table (name, arity, attributes with defaults, composite or primitive) and, with
// --lowerings, each op's declared one-call lowerings (hfx/ops/op_lowering.h).
#include <fmt/format.h>

#include "commands.h"
#include "hfx/ops/op_schema.h"

namespace hfx::cli {

namespace {
// "executorch=aten::abs.out aten=torch.ops.aten.abs.default onnx=Abs xnnpack=XNNAbs", or what is
// hand-written.
std::string lowerings(const OpSchema& s) {
  const OpLowering& l = s.lower;
  auto one = [](const char* backend, const std::string& target) {
    return fmt::format(" {}={}", backend, target.empty() ? "(hand-written or decomposed)" : target);
  };
  return one("executorch", l.executorch.target) + one("aten", l.aten.target) + one("onnx", l.onnx) +
         one("xnnpack", l.xnnpack.empty() ? std::string("(rule or portable)") : l.xnnpack);
}
}  // namespace

void register_ops(CLI::App& app) {
  auto* cmd = app.add_subcommand("ops", "List the op table");
  static bool show_lowerings = false;
  cmd->add_flag("--lowerings", show_lowerings,
                "also each op's declared lowerings: ExecuTorch kernel, ATen overload, ONNX op, XNNPACK node");
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
