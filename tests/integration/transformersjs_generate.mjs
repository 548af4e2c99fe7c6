// Greedy generation with Transformers.js (the real consumer) over an hfx ONNX export folder.
// usage: node transformersjs_generate.mjs NODE_MODULES OUT_DIR MAX_NEW_TOKENS IDS_JSON
// IDS_JSON: [[ids of prompt 1], [ids of prompt 2], ...] (left padding is done here with pad id 0 and
// an attention mask). Prints {"sequences": [[...new tokens...], ...]} as JSON on stdout.
import path from 'node:path';
import { pathToFileURL } from 'node:url';

const [nodeModules, outDir, maxNew, idsJson] = process.argv.slice(2);
const tjs = await import(pathToFileURL(path.join(nodeModules, '@huggingface/transformers/dist/transformers.node.mjs')).href);
const { AutoModelForCausalLM, Tensor, env } = tjs;
env.allowRemoteModels = false;
env.localModelPath = path.dirname(path.resolve(outDir)) + '/';
const model = await AutoModelForCausalLM.from_pretrained(path.basename(path.resolve(outDir)), { dtype: 'fp32' });

const prompts = JSON.parse(idsJson);
const width = Math.max(...prompts.map((p) => p.length));
const B = prompts.length;
const ids = new BigInt64Array(B * width);
const mask = new BigInt64Array(B * width);
prompts.forEach((p, b) => {
  const pad = width - p.length;
  for (let i = 0; i < width; i++) {
    ids[b * width + i] = i < pad ? 0n : BigInt(p[i - pad]);
    mask[b * width + i] = i < pad ? 0n : 1n;
  }
});
const out = await model.generate({
  input_ids: new Tensor('int64', ids, [B, width]),
  attention_mask: new Tensor('int64', mask, [B, width]),
  max_new_tokens: Number(maxNew),
  do_sample: false,
});
const seqs = [];
const total = out.dims[1];
for (let b = 0; b < B; b++) {
  const row = [];
  for (let i = width; i < total; i++) row.push(Number(out.data[b * total + i]));
  seqs.push(row);
}
process.stdout.write(JSON.stringify({ sequences: seqs }) + '\n');
