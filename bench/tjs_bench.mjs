// Transformers.js greedy generate on an hfx export folder, timed around model.generate only (the model
// is loaded and warmed up first). usage: node tjs_bench.mjs NODE_MODULES OUT_DIR PROMPT NEW_TOKENS REPS
// Prints {"seconds": median, "new_tokens": N, "ids": [...]} on stdout.
import path from 'node:path';
import { pathToFileURL } from 'node:url';

const [nodeModules, outDir, prompt, newTokens, reps] = process.argv.slice(2);
const tjs = await import(pathToFileURL(path.join(nodeModules, '@huggingface/transformers/dist/transformers.node.mjs')).href);
const { AutoModelForCausalLM, AutoTokenizer, env } = tjs;
env.allowRemoteModels = false;
env.localModelPath = path.dirname(path.resolve(outDir)) + '/';
const name = path.basename(path.resolve(outDir));
const tokenizer = await AutoTokenizer.from_pretrained(name);
const model = await AutoModelForCausalLM.from_pretrained(name, { dtype: 'fp32' });
const inputs = tokenizer(prompt, { add_special_tokens: true });
const gen = () => model.generate({ ...inputs, max_new_tokens: Number(newTokens), min_new_tokens: Number(newTokens), do_sample: false });
await gen();  // warm-up
const times = [];
let out;
for (let i = 0; i < Number(reps); i++) {
  const t0 = process.hrtime.bigint();
  out = await gen();
  times.push(Number(process.hrtime.bigint() - t0) / 1e9);
}
times.sort((a, b) => a - b);
const n = inputs.input_ids.dims[1];
process.stdout.write(JSON.stringify({ seconds: times[Math.floor(times.length / 2)], new_tokens: Number(newTokens),
  ids: Array.from(out.data.slice(n)).map(Number) }) + '\n');
