// tests/interop/llama_cpp.mjs — llama.cpp (node-llama-cpp's released build) as the GGUF judge:
//   node llama_cpp.mjs NODE_MODULES MODEL.gguf < REQUEST.json
// REQUEST: {"tokenize": [text, ...], "probs": [id, ...], "greedy": {"ids": [id, ...], "n": N}} (each optional).
// Prints {"tokenize": [[id, ...], ...] (special tokens in the text parsed, no BOS added), "probs": [[p over the vocab]
// after each id], "greedy": [N ids, temperature 0]}. f32 everywhere: no flash attention, F32 KV cache, CPU.
import path from 'path';
import { pathToFileURL } from 'url';

const [nodeModules, modelPath] = process.argv.slice(2);
let input = '';
for await (const chunk of process.stdin) input += chunk;
const req = JSON.parse(input);
const { getLlama, LlamaLogLevel } = await import(
  pathToFileURL(path.join(nodeModules, 'node-llama-cpp', 'dist', 'index.js')).href);
const llama = await getLlama({ gpu: false, build: 'never', logLevel: LlamaLogLevel.error });
const model = await llama.loadModel({ modelPath });
const out = {};
// special tokens in the text are parsed, as transformers' tokenizers do by default
if (req.tokenize) out.tokenize = req.tokenize.map((t) => Array.from(model.tokenize(t, true)));
const fresh = async () => model.createContext({
  contextSize: 512, batchSize: 512, threads: 1, flashAttention: false,
  experimentalKvCacheKeyType: 'F32', experimentalKvCacheValueType: 'F32',
});
if (req.probs) {
  const context = await fresh();
  const res = await context.getSequence().controlledEvaluate(
    req.probs.map((t) => [t, { generateNext: { probabilities: true } }]));
  out.probs = res.map((r) => Object.fromEntries(r.next.probabilities));
  await context.dispose();
}
if (req.greedy) {
  const context = await fresh();
  const ids = [];
  // EOS does not end it (transformers' side runs with eos_token_id=None)
  for await (const t of context.getSequence().evaluate(req.greedy.ids, { temperature: 0, yieldEogToken: true })) {
    ids.push(t);
    if (ids.length >= req.greedy.n) break;
  }
  out.greedy = ids;
  await context.dispose();
}
process.stdout.write(JSON.stringify(out) + '\n');
await model.dispose();
await llama.dispose();
