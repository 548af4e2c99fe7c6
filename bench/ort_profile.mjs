// bench/ort_profile.mjs — sums an ONNX Runtime profile (ort_bench --profile) per op type:
//   node bench/ort_profile.mjs PROFILE.json   → JSON lines {op, ms, share} sorted by time
import fs from 'node:fs';
const ev = JSON.parse(fs.readFileSync(process.argv[2], 'utf8'));
const by = {};
let total = 0;
for (const e of ev) {
  if (e.cat !== 'Node' || !e.name.endsWith('_kernel_time')) continue;
  const op = (e.args && e.args.op_name) || '?';
  by[op] = (by[op] || 0) + e.dur;
  total += e.dur;
}
for (const [op, us] of Object.entries(by).sort((a, b) => b[1] - a[1]))
  console.log(JSON.stringify({ op, ms: +(us / 1000).toFixed(2), share: +(us / total).toFixed(4) }));
