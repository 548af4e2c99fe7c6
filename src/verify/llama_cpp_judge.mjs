// src/verify/llama_cpp_judge.mjs — llama.cpp (node-llama-cpp's released build) as the judge of a GGUF file:
//   node llama_cpp_judge.mjs NODE_MODULES MODEL.gguf < REQUEST.json
// `hfx verify` embeds it (CMakeLists.txt) and tests/interop/test_gguf.py runs it; it only runs what is asked and
// prints what llama.cpp computed, every comparison is the caller's. REQUEST (each key optional):
//   "tokenize": [text, ...]               → [[id, ...], ...]: special tokens in the text parsed, no BOS added
//   "probs": [id, ...]                    → [{id: p} per position]: one batch (a prefill)
//   "decode": {"ids": [...], "prefill": k} → the same, ids[:k] in one batch, then one id per call on the cache
//   "greedy": {"ids": [...], "n": N}      → N ids at temperature 0 (an end-of-generation token does not stop it)
//   "embed": [[id, ...], ...]             → [[float, ...], ...]: an embedding context's vector per sequence (the
//                                            file's pooling; the last position's hidden state without one)
//   "chat": {"variables": {...}}          → {"template": the file's tokenizer.chat_template or null, "text": it
//                                            rendered by @huggingface/jinja with the variables}
//   "threads": N                          → llama.cpp's CPU threads (1 by default)
// Printed: one JSON line with those keys and "versions". f32 everywhere: CPU, no flash attention, F32 KV cache.
import path from 'path';
import { pathToFileURL } from 'url';

const [nodeModules, modelPath] = process.argv.slice(2);
let input = '';
for await (const chunk of process.stdin) input += chunk;
const req = JSON.parse(input);
const load = (name, file) => import(pathToFileURL(path.join(nodeModules, name, 'dist', file)).href);
const { getLlama, LlamaLogLevel, getModuleVersion } = await load('node-llama-cpp', 'index.js');
const llama = await getLlama({ gpu: false, build: 'never', logLevel: LlamaLogLevel.error });
const model = await llama.loadModel({ modelPath, defaultContextFlashAttention: false });
const out = { versions: { 'node-llama-cpp': await getModuleVersion(), 'llama.cpp': llama.llamaCppRelease.release } };
if (req.tokenize) out.tokenize = req.tokenize.map((t) => Array.from(model.tokenize(t, true)));
const contextSize = Math.max(512, (req.greedy?.ids.length ?? 0) + (req.greedy?.n ?? 0) + 16);
const fresh = async () => model.createContext({
  contextSize, batchSize: 512, threads: req.threads ?? 1, flashAttention: false,
  experimentalKvCacheKeyType: 'F32', experimentalKvCacheValueType: 'F32',
});
const step = (t) => [t, { generateNext: { probabilities: true } }];
const distributions = (res) => res.map((r) => Object.fromEntries(r.next.probabilities));
if (req.probs) {
  const context = await fresh();
  out.probs = distributions(await context.getSequence().controlledEvaluate(req.probs.map(step)));
  await context.dispose();
}
if (req.decode) {
  const context = await fresh();
  const seq = context.getSequence();
  const { ids, prefill } = req.decode;
  out.decode = distributions(await seq.controlledEvaluate(ids.slice(0, prefill).map(step)));
  for (const t of ids.slice(prefill)) out.decode.push(...distributions(await seq.controlledEvaluate([step(t)])));
  await context.dispose();
}
if (req.greedy) {
  const context = await fresh();
  const ids = [];
  for await (const t of context.getSequence().evaluate(req.greedy.ids, { temperature: 0, yieldEogToken: true })) {
    ids.push(t);
    if (ids.length >= req.greedy.n) break;
  }
  out.greedy = ids;
  await context.dispose();
}
if (req.embed) {
  const size = Math.max(64, ...req.embed.map((ids) => ids.length + 8));
  const context = await model.createEmbeddingContext({ contextSize: size, batchSize: size, threads: req.threads ?? 1 });
  out.embed = [];
  for (const ids of req.embed) out.embed.push(Array.from((await context.getEmbeddingFor(ids)).vector));
  await context.dispose();
}
if (req.chat) {
  const template = model.fileInfo.metadata?.tokenizer?.chat_template ?? null;
  out.chat = { template, text: null };
  if (template !== null) {
    const { Template } = await load('@huggingface/jinja', 'index.js');
    out.chat.text = new Template(template).render(req.chat.variables);
  }
}
process.stdout.write(JSON.stringify(out) + '\n');
await model.dispose();
await llama.dispose();
