// ONNX Runtime session creation of one .onnx file at each graph-optimization level, and at 'all' with MLAS
// prepacking off (session.disable_prepacking, what hfx generate uses): which load step costs the time.
//
//   node bench/ort_load_levels.mjs OUT/onnx/model.onnx [disabled,basic,extended,all,all-noprepack]
import { createRequire } from 'node:module';
import { fileURLToPath } from 'node:url';
import path from 'node:path';
const here = path.dirname(fileURLToPath(import.meta.url));
const ort = createRequire(import.meta.url)(path.join(here, '../deps/npm/node_modules/onnxruntime-node'));
const model = process.argv[2];
for (const lvl of (process.argv[3] || 'disabled,basic,extended,all').split(',')) {
  const extra = lvl === 'all-noprepack' ? { extra: { session: { disable_prepacking: '1' } } } : {};
  const t0 = performance.now();
  const s = await ort.InferenceSession.create(model, { graphOptimizationLevel: lvl.replace('-noprepack', ''), intraOpNumThreads: 2, ...extra });
  console.log(lvl, ((performance.now() - t0) / 1000).toFixed(2), 's');
  await s.release();
}
