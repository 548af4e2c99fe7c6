// `hfx ops`: lists the op table (name, arity, attributes with defaults, composite or primitive).
#include <fmt/format.h>

#include "commands.h"
#include "hfx/ops/op_schema.h"

namespace hfx::cli {

void register_ops(CLI::App& app) {
  auto* cmd = app.add_subcommand("ops", "List the op table");
  cmd->footer("Example:\n  hfx ops");
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
    }
  });
}

}  // namespace hfx::cli
