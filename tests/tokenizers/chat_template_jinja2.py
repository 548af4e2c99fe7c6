# Renders chat templates with Python's Jinja2 set up exactly as transformers' apply_chat_template sets it
# up, the second reference hfx's chat templates are compared with (tests/tokenizers/chat_template_parity_test.cpp).
# A test-time oracle only: hfx itself runs no Python. Jinja2 is Debian's python3-jinja2 (scripts/setup.sh),
# run by the system interpreter /usr/bin/python3.
#
#   /usr/bin/python3 chat_template_jinja2.py CASES.json
#
# CASES.json: [{"template": "...", "variables": {...}}, ...], the variables as transformers passes them
# (messages, tools, documents, add_generation_prompt, the special tokens, extra kwargs). Prints
# {"jinja2": VERSION, "results": [...]} with, per case, {"text": "..."}, {"raised": "MESSAGE"} (the template
# called raise_exception) or {"error": "..."} (it failed to parse or run).
#
# The environment follows transformers' _compile_jinja_template (src/transformers/utils/chat_template_utils.py,
# 4.47 to 4.51 alike): ImmutableSandboxedEnvironment(trim_blocks=True, lstrip_blocks=True) with the
# loopcontrols extension and its {% generation %} extension (which, outside return_assistant_tokens_mask,
# renders its body unchanged), its own `tojson` filter (json.dumps, ensure_ascii=False), and the globals
# raise_exception (TemplateError(message)) and strftime_now (datetime.now().strftime).
import json
import sys
from datetime import datetime

import jinja2
import jinja2.ext
import jinja2.nodes
from jinja2.sandbox import ImmutableSandboxedEnvironment


class AssistantTracker(jinja2.ext.Extension):
    """transformers' {% generation %}...{% endgeneration %}: without a tracker the body renders as it is."""

    tags = {"generation"}

    def parse(self, parser):
        lineno = next(parser.stream).lineno
        body = parser.parse_statements(["name:endgeneration"], drop_needle=True)
        return jinja2.nodes.CallBlock(self.call_method("_generation_support"), [], [], body).set_lineno(lineno)

    @jinja2.pass_eval_context
    def _generation_support(self, context, caller):
        return caller()


class RaisedException(jinja2.exceptions.TemplateError):
    """transformers raises TemplateError(message); the subclass only tells it apart from engine errors."""


def raise_exception(message):
    raise RaisedException(message)


def tojson(x, ensure_ascii=False, indent=None, separators=None, sort_keys=False):
    return json.dumps(x, ensure_ascii=ensure_ascii, indent=indent, separators=separators, sort_keys=sort_keys)


def strftime_now(format):
    return datetime.now().strftime(format)


def compile_template(source):
    env = ImmutableSandboxedEnvironment(
        trim_blocks=True, lstrip_blocks=True, extensions=[AssistantTracker, jinja2.ext.loopcontrols]
    )
    env.filters["tojson"] = tojson
    env.globals["raise_exception"] = raise_exception
    env.globals["strftime_now"] = strftime_now
    return env.from_string(source)


def render(case):
    try:
        return {"text": compile_template(case["template"]).render(**case["variables"])}
    except RaisedException as e:  # the template's raise_exception: its message is the result
        return {"raised": e.message}
    except Exception as e:  # a parse error, an undefined attribute, ...: never a match for the test
        return {"error": f"{type(e).__name__}: {e}"}


def main():
    if len(sys.argv) != 2:
        sys.stderr.write("usage: /usr/bin/python3 chat_template_jinja2.py CASES.json\n")
        sys.exit(2)
    with open(sys.argv[1], encoding="utf-8") as f:
        cases = json.load(f)
    out = [render(c) for c in cases]
    # ASCII with \u escapes: the bytes do not depend on the locale's stdout encoding.
    sys.stdout.write(json.dumps({"jinja2": jinja2.__version__, "results": out}))


if __name__ == "__main__":
    main()
