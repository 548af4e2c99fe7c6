// tests/models/llama_cpp_logits.js — llama.cpp (node-llama-cpp) as an independent oracle: prints, as
// JSON, the full next-token softmax after each token of a sequence.
//   node llama_cpp_logits.js NODE_MODULES MODEL.gguf VOCAB TOK,TOK,...
// f32 everywhere: flash attention off, F32 KV cache, CPU only.
const path = require('path');
const { pathToFileURL } = require('url');

(async () => {
  const [nodeModules, modelPath, vocabArg, tokArg] = process.argv.slice(2);
  const { getLlama, LlamaLogLevel } = await import(pathToFileURL(path.join(nodeModules, 'node-llama-cpp', 'dist', 'index.js')).href);
  const llama = await getLlama({ gpu: false, build: 'never', logLevel: LlamaLogLevel.error });
  const model = await llama.loadModel({ modelPath });
  const context = await model.createContext({
    contextSize: 256, batchSize: 256, threads: 1, flashAttention: false,
    experimentalKvCacheKeyType: 'F32', experimentalKvCacheValueType: 'F32',
  });
  const seq = context.getSequence();
  const V = Number(vocabArg);
  const tokens = tokArg.split(',').map(Number);
  const res = await seq.controlledEvaluate(tokens.map((t) => [t, { generateNext: { probabilities: true } }]));
  const out = res.map((r) => {
    const row = new Array(V).fill(0);
    for (const [tok, p] of r.next.probabilities) row[tok] = p;
    return row;
  });
  process.stdout.write(JSON.stringify(out) + '\n');
  await context.dispose();
  await model.dispose();
  await llama.dispose();
})().catch((e) => {
  process.stderr.write(String(e && e.stack || e) + '\n');
  process.exit(1);
});
