// Renders chat templates with @huggingface/jinja (the engine Transformers.js uses for apply_chat_template),
// the reference hfx's chat templates are compared with (tests/tokenizers/chat_template_parity_test.cpp).
//
//   node chat_template_render.mjs NODE_MODULES CASES.json
//
// CASES.json: [{"template": "...", "variables": {...}}, ...]. Prints a JSON list with, per case,
// {"text": "..."} or {"error": "..."} (a template that raises, or fails to parse or run).
import { readFileSync } from "node:fs";
import { pathToFileURL } from "node:url";
import path from "node:path";

const [modules, casesPath] = process.argv.slice(2);
if (!modules || !casesPath) {
  console.error("usage: node chat_template_render.mjs NODE_MODULES CASES.json");
  process.exit(2);
}
const entry = path.join(modules, "@huggingface/jinja/dist/index.js");
const { Template } = await import(pathToFileURL(entry).href);
const cases = JSON.parse(readFileSync(casesPath, "utf8"));
const out = cases.map(({ template, variables }) => {
  try {
    return { text: new Template(template).render(variables) };
  } catch (e) {
    return { error: String(e && e.message !== undefined ? e.message : e) };
  }
});
process.stdout.write(JSON.stringify(out));
