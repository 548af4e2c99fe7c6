// Greedy text-to-text with Transformers.js (the real consumer) over an hfx ONNX export folder of an
// encoder-decoder model (t5, bart, marian).
// usage: node transformersjs_text2text.mjs NODE_MODULES OUT_DIR TASK MAX_NEW_TOKENS PROMPTS_JSON
// TASK: text2text-generation | translation. PROMPTS_JSON: ["text 1", "text 2", ...].
// Prints {"sequences": [[generated ids without the decoder start], ...], "texts": [pipeline text, ...]}:
// the ids from model.generate() on the tokenizer's padded batch, the texts from the pipeline itself.
import path from 'node:path';
import { pathToFileURL } from 'node:url';

const [nodeModules, outDir, task, maxNew, promptsJson] = process.argv.slice(2);
const tjs = await import(pathToFileURL(path.join(nodeModules, '@huggingface/transformers/dist/transformers.node.mjs')).href);
const { AutoModelForSeq2SeqLM, AutoTokenizer, pipeline, env } = tjs;
env.allowRemoteModels = false;
env.localModelPath = path.dirname(path.resolve(outDir)) + '/';
const id = path.basename(path.resolve(outDir));
const prompts = JSON.parse(promptsJson);
const n = Number(maxNew);

const tokenizer = await AutoTokenizer.from_pretrained(id);
const model = await AutoModelForSeq2SeqLM.from_pretrained(id, { dtype: 'fp32' });
const inputs = tokenizer(prompts, { padding: true });
const out = await model.generate({ ...inputs, max_new_tokens: n, do_sample: false });
const seqs = [];
const [B, total] = out.dims;
for (let b = 0; b < B; b++) {
  const row = [];
  for (let i = 1; i < total; i++) row.push(Number(out.data[b * total + i]));
  seqs.push(row);
}
const pipe = await pipeline(task, id, { dtype: 'fp32' });
const texts = [];
for (const p of prompts) {
  const r = await pipe(p, { max_new_tokens: n, do_sample: false });
  texts.push(r[0].generated_text ?? r[0].translation_text);
}
process.stdout.write(JSON.stringify({ sequences: seqs, texts }) + '\n');
