// bench/report.mjs — assembles the JSON pieces bench/run_all.sh wrote into one results.json, prints the
// table (every figure beside its baseline as a ratio) and, with --markdown, prints it as Markdown.
//   node bench/report.mjs RUN_DIR OUT.json [--markdown]
import fs from 'node:fs';
import path from 'node:path';

const [runDir, outPath, flag] = process.argv.slice(2);
const read = (f) => {
  const p = path.join(runDir, f);
  if (!fs.existsSync(p)) return null;
  const text = fs.readFileSync(p, 'utf8').trim();
  if (!text) return null;
  return f.endsWith('.jsonl') ? text.split('\n').map((l) => JSON.parse(l)) : JSON.parse(text);
};

const r = { machine: read('machine.json'), build: read('build.json'), total: read('total.json'), figures: [] };
const fig = (section, name, value, unit, baseline_name, baseline, ratio, target, better = 'higher') => {
  const met = target == null ? null : better === 'higher' ? ratio >= target : ratio <= target;
  r.figures.push({ section, name, value, unit, baseline_name, baseline, ratio, target, met });
};
const fix = (x, d = 3) => (x == null || Number.isNaN(x) ? null : Number(x.toFixed(d)));

// export at real size
const ex = read('export.json');
if (ex) {
  r.export = ex;
  fig('export', 'hfx export llama-3.2-1b (bf16) --format onnx --external-data: wall', fix(ex.export_s), 's',
      'cp model.safetensors (same disk)', fix(ex.cp_s), fix(ex.export_s / ex.cp_s), 1.5, 'lower');
  fig('export', 'export peak RSS', fix(ex.peak_rss_kb / 1024, 1), 'MiB', 'target', 300, fix(ex.peak_rss_kb / 1024 / 300), 1.0, 'lower');
  fig('export', 'bytes written / checkpoint bytes', fix(ex.output_bytes / 2 ** 30, 2), 'GiB', 'checkpoint GiB',
      fix(ex.input_bytes / 2 ** 30, 2), fix(ex.output_bytes / ex.input_bytes), null, 'lower');
}

// ORT fused vs standard
const os = read('ort_standard.json'), of = read('ort_ort.json');
if (os && of) {
  r.ort = { standard: os, ort: of };
  fig('ort', `decode tok/s, --target ort (fused), ${of.threads} threads`, fix(of.decode_tok_s), 'tok/s', 'standard-op graph',
      fix(os.decode_tok_s), fix(of.decode_tok_s / os.decode_tok_s), 1.5);
  fig('ort', `prefill ${of.prefill_tokens} tokens, --target ort (fused) [speed-up = standard time / fused time]`, fix(of.prefill_s),
      's', 'standard-op graph', fix(os.prefill_s), fix(os.prefill_s / of.prefill_s), null);
}

// eager vs llama.cpp
const eh = read('eager_hfx.jsonl'), el = read('eager_llamacpp.jsonl');
if (eh && el) {
  r.eager = { hfx: eh, llamacpp: el };
  for (const h of eh) {
    const l = el.find((x) => x.threads === h.threads);
    if (!l) continue;
    fig('eager', `prefill ${h.prefill_tokens} tok/s, hfx eager, ${h.threads} thread(s)`, fix(h.prefill_tok_s, 1), 'tok/s',
        'llama.cpp (same GGUF F32 weights)', fix(l.prefill_tok_s, 1), fix(h.prefill_tok_s / l.prefill_tok_s), 0.8);
    fig('eager', `decode tok/s, hfx eager, ${h.threads} thread(s)`, fix(h.decode_tok_s, 2), 'tok/s', 'llama.cpp',
        fix(l.decode_tok_s, 2), fix(h.decode_tok_s / l.decode_tok_s), 0.8);
  }
}

// generation overhead
const g = read('generate.json');
if (g) {
  r.generate = g;
  fig('generate', `hfx::Generator over ORT, ${g.prompt_tokens}-token prompt + ${g.new_tokens} new tokens: wall`, fix(g.generate_s),
      's', 'bare Ort::Session::Run of the same steps', fix(g.bare_s), fix(g.generate_s / g.bare_s, 4), 1.03, 'lower');
}

// kernels
const k = read('kernels.json');
if (k) {
  const by = {};
  for (const b of k.benchmarks) by[b.name] = b;
  r.kernels = { context: k.context, benchmarks: k.benchmarks.map((b) => ({ name: b.name, real_time: b.real_time, time_unit: b.time_unit, gflops: b.gflops })) };
  for (const shape of ['1/2048/2048', '128/2048/2048', '512/2048/8192']) {
    const pairs = [['BM_kernel_mm', 'BM_raw_sgemm_nn', 'kernels::mm'], ['BM_kernel_linear', 'BM_raw_sgemm_nt', 'kernels::linear'],
                   ['BM_kernel_linear_bf16', 'BM_raw_sgemm_nt', 'kernels::linear (bf16 operands)']];
    for (const [a, b, label] of pairs) {
      const va = by[`${a}/${shape}/real_time`], vb = by[`${b}/${shape}/real_time`];
      if (va && vb) fig('kernels', `${label} M/K/N=${shape} GFLOP/s`, fix(va.gflops, 1), 'GFLOP/s', 'OpenBLAS sgemm alone',
                        fix(vb.gflops, 1), fix(va.gflops / vb.gflops), null);
    }
  }
  for (const shape of ['512/512', '1/2048', '1/8192']) {
    const va = by[`BM_kernel_sdpa/${shape}/real_time`], vb = by[`BM_baseline_sdpa/${shape}/real_time`];
    if (va && vb) fig('kernels', `kernels::sdpa S/T=${shape} GFLOP/s (dense-equivalent)`, fix(va.gflops, 1), 'GFLOP/s',
                      'per-head sgemm+softmax+sgemm', fix(vb.gflops, 1), fix(va.gflops / vb.gflops), null);
  }
}

fs.writeFileSync(outPath, JSON.stringify(r, null, 2) + '\n');

const rows = r.figures.map((f) => [f.section, f.name, `${f.value} ${f.unit}`, `${f.baseline_name}: ${f.baseline}`, String(f.ratio),
  f.target == null ? '' : `${f.met ? 'met' : 'NOT met'} (${f.target})`]);
if (flag === '--markdown') {
  console.log('| section | figure | value | baseline (same run) | ratio | target |');
  console.log('|---|---|---|---|---|---|');
  for (const row of rows) console.log(`| ${row.join(' | ')} |`);
} else {
  const head = ['section', 'figure', 'value', 'baseline', 'ratio', 'target'];
  const w = head.map((h, i) => Math.min(70, Math.max(h.length, ...rows.map((x) => x[i].length))));
  const line = (x) => x.map((c, i) => c.slice(0, w[i]).padEnd(w[i])).join('  ');
  console.log(line(head));
  for (const row of rows) console.log(line(row));
  if (r.machine) console.log(`\nmachine: ${r.machine.cpu}, ${r.machine.cores} cores, ${r.machine.mem_gib} GiB; commit ${r.machine.commit}; load at start ${r.machine.load_avg_start}`);
  if (r.total) console.log(`suite wall time: ${r.total.total_s} s (build ${r.build ? r.build.build_s : '?'} s)`);
  console.log(`wrote ${outPath}`);
}
