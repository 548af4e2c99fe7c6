// llama.cpp (node-llama-cpp, CPU build shipped with the package) on an F32 GGUF: prefill and decode
// tokens/s, one JSON line per thread count, measured exactly as bench/eager_bench.cpp measures hfx:
// the same prompt ids (same generator), one prefill step of PREFILL tokens from an empty sequence, then
// DECODE single-token greedy steps; median of REPS after one warm-up.
//   node bench/llama_cpp_bench.mjs NODE_MODULES MODEL.gguf [THREADS=1,2] [PREFILL=128] [DECODE=64] [REPS=3]
import path from 'node:path';
import { pathToFileURL } from 'node:url';

const [nodeModules, modelPath, threadsArg = '1,2', prefillArg = '128', decodeArg = '64', repsArg = '3'] = process.argv.slice(2);
const { getLlama, LlamaLogLevel } = await import(pathToFileURL(path.join(nodeModules, 'node-llama-cpp', 'dist', 'index.js')).href);
const prefill = Number(prefillArg), decode = Number(decodeArg), reps = Number(repsArg);

const llama = await getLlama({ gpu: false, build: 'never', logLevel: LlamaLogLevel.error });
const model = await llama.loadModel({ modelPath, useMmap: true });
const vocab = Number(process.env.HFX_BENCH_VOCAB || 32000);  // ids are drawn in [3, vocab)

function promptIds(n, V) {
  const ids = [];
  let s = 12345n;
  const M = (1n << 64n) - 1n;
  for (let i = 0; i < n; i++) {
    s = (s * 6364136223846793005n + 1442695040888963407n) & M;
    ids.push(3 + Number((s >> 33n) % BigInt(V - 3)));
  }
  return ids;
}
const ids = promptIds(prefill, vocab);
const median = (v) => [...v].sort((a, b) => a - b)[Math.floor(v.length / 2)];

for (const t of threadsArg.split(',').map(Number)) {
  const context = await model.createContext({
    contextSize: Math.max(512, prefill + decode + 16), batchSize: Math.max(512, prefill), threads: t,
    flashAttention: false, experimentalKvCacheKeyType: 'F32', experimentalKvCacheValueType: 'F32',
  });
  async function one(nDecode) {
    const seq = context.getSequence();
    const t0 = performance.now();
    let t1 = 0, n = 0;
    // evaluate(): prefill of the prompt, then one decode step per yielded token (greedy).
    for await (const tok of seq.evaluate(ids, { temperature: 0 })) {
      n++;
      if (n === 1) t1 = performance.now();
      if (n > nDecode) break;
    }
    const t2 = performance.now();
    seq.dispose();
    return { prefill_s: (t1 - t0) / 1000, decode_s: (t2 - t1) / 1000 };
  }
  await one(4);
  const pf = [], dc = [];
  for (let r = 0; r < reps; r++) {
    const x = await one(decode);
    pf.push(x.prefill_s);
    dc.push(x.decode_s);
  }
  const p = median(pf), d = median(dc);
  console.log(JSON.stringify({ engine: 'llama.cpp', threads: t, prefill_tokens: prefill, prefill_s: p, prefill_tok_s: prefill / p,
    decode_tokens: decode, decode_s: d, decode_tok_s: decode / d }));
  await context.dispose();
}
await model.dispose();
await llama.dispose();
