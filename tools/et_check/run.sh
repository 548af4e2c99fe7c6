#!/usr/bin/env bash
# Runs hfx's ExecuTorch exports of every decoder-only architecture that has a transformers golden on
# ExecuTorch's own C++ runtime (et_run, built beside the project: docs/executorch-runtime.md) and compares them.
#
#   tools/et_check/run.sh [BUILD_DIR] [--backend portable|xnnpack] [--et-root DIR] [--out DIR]
#                         [--archs a,b,...] [--threads N] [--decode N] [--quantize int4|int8 [--group-size G]]
#                         [--prequantized gptq [--group-size G]]
#
#   BUILD_DIR   the project's build (default: build/ of this checkout); needs BUILD_DIR/hfx
#   --backend   passed to `hfx export --format executorch --backend B` (default portable)
#   --et-root   where build.sh built ExecuTorch (default $ET_ROOT or /work/et); uses ET_ROOT/et_run-build/et_run
#   --out       work and report directory (default $ET_ROOT/check-<backend>)
#
# Goldens: tests/data/goldens/*-lm.json that have prompts[].greedy_new_tokens (transformers' logits and
# greedy tokens for `hfx create-tiny ARCH` checkpoints; see tools/hf_goldens/). Per architecture:
#   hfx create-tiny ARCH -o OUT/ARCH/ckpt
#   hfx export OUT/ARCH/ckpt --format executorch --backend B -o OUT/ARCH/pte
#   et_run on each golden prompt (prefill + N greedy decode steps, N=32), compare.py against the golden
#   et_run --over-max (get_max_seq_len + 1 tokens), which must fail
# --quantize int4|int8 (needs --backend xnnpack and the hf-oracle, HFO=/work/hfo by default): exports with
#   `--quantize Q --symmetric --group-size G` (ExecuTorch's 8da4w / 8da8w) and compares with a golden made on the
#   spot: dequantize.py writes the checkpoint of the weights the program holds (re-derived in numpy), and
#   the transformers oracle runs it on the golden's prompts (float32 activations). The program quantizes its
#   activations to int8 per token at run time, so the logits are held to hfx verify's bound for it (ET_CHECK_TOL
#   overrides): 0.5 ("int8-dynamic-activations"), 1.5 for a model with routed experts ("…-moe": a router may
#   pick another expert), and the greedy tokens are reported, not required (random tiny models have top-2
#   margins below the activation rounding). Architectures whose golden came from a
#   transformers newer than the oracle's trees (4.47, 4.51) are reported as "no oracle".
# --prequantized gptq (needs --backend xnnpack and the hf-oracle): the checkpoint is `hfx create-tiny ARCH
#   --quantize gptq --bits 4 --group-size G` (AutoGPTQ layout, sym), exported with no --quantize (its codes as
#   they are, scales rounded to bf16); the golden is made on the spot as for --quantize, from
#   `dequantize.py --from-gptq` (AutoGPTQ's formula with bf16 scales), with the same bounds.
# Writes OUT/report.json and OUT/table.txt (one line per architecture); exits 1 if any architecture fails.
set -uo pipefail
HERE=$(cd "$(dirname "$0")" && pwd)
ROOT=$(cd "$HERE/../.." && pwd)
BUILD_DIR="" BACKEND=portable ET_ROOT=${ET_ROOT:-/work/et} OUT="" ARCHS="" THREADS=0 DECODE=32 QUANT="" GROUP=32
PREQ=""
HFO=${HFO:-/work/hfo}
while (($#)); do
  case $1 in
    --backend) BACKEND=$2; shift 2 ;;
    --et-root) ET_ROOT=$2; shift 2 ;;
    --out) OUT=$2; shift 2 ;;
    --archs) ARCHS=$2; shift 2 ;;
    --threads) THREADS=$2; shift 2 ;;
    --decode) DECODE=$2; shift 2 ;;
    --quantize) QUANT=$2; shift 2 ;;
    --group-size) GROUP=$2; shift 2 ;;
    --prequantized) PREQ=$2; shift 2 ;;
    -h|--help) sed -n '2,33p' "$0"; exit 0 ;;
    -*) echo "run.sh: unknown option $1" >&2; exit 2 ;;
    *) BUILD_DIR=$1; shift ;;
  esac
done
BUILD_DIR=${BUILD_DIR:-$ROOT/build}
HFX=$BUILD_DIR/hfx
ET_RUN=$ET_ROOT/et_run-build/et_run
OUT=${OUT:-$ET_ROOT/check-$BACKEND${QUANT:+-$QUANT}${PREQ:+-$PREQ}}
EXPORT_FLAGS=()
CREATE_FLAGS=()
if [[ -n $PREQ ]]; then
  [[ $PREQ == gptq && $BACKEND == xnnpack && -z $QUANT ]] ||
    { echo "run.sh: --prequantized takes gptq with --backend xnnpack and no --quantize (got $PREQ, $BACKEND)" >&2; exit 2; }
  [[ -x $HFO/run.sh ]] || { echo "run.sh: --prequantized needs the hf-oracle at HFO=$HFO (tools/hf_goldens/README.md)" >&2; exit 2; }
  CREATE_FLAGS=(--quantize gptq --bits 4 --group-size "$GROUP")
  export ET_CHECK_GREEDY=report
fi
if [[ -n $QUANT ]]; then
  [[ ($QUANT == int4 || $QUANT == int8) && $BACKEND == xnnpack ]] ||
    { echo "run.sh: --quantize takes int4 or int8 with --backend xnnpack (got $QUANT, $BACKEND)" >&2; exit 2; }
  [[ -x $HFO/run.sh ]] || { echo "run.sh: --quantize needs the hf-oracle at HFO=$HFO (tools/hf_goldens/README.md)" >&2; exit 2; }
  EXPORT_FLAGS=(--quantize "$QUANT" --symmetric --group-size "$GROUP")
  export ET_CHECK_GREEDY=report
fi
[[ -x $HFX ]] || { echo "run.sh: no hfx at $HFX (build the project first)" >&2; exit 2; }
[[ -x $ET_RUN ]] || { echo "run.sh: no et_run at $ET_RUN (build it first: docs/executorch-runtime.md)" >&2; exit 2; }
mkdir -p "$OUT"

# Decoder-only goldens.
mapfile -t GOLDENS < <(python3 - "$ROOT/tests/data/goldens" "$ARCHS" <<'PY'
import glob, json, os, sys
d, only = sys.argv[1], [a for a in sys.argv[2].split(",") if a]
for p in sorted(glob.glob(os.path.join(d, "*-lm.json"))):
    g = json.load(open(p))
    ps = g.get("prompts")
    if not isinstance(ps, list) or not ps or "greedy_new_tokens" not in ps[0]:
        continue
    arch = os.path.basename(p)[:-len("-lm.json")]
    if only and arch not in only:
        continue
    print(arch + "\t" + p)
PY
)
((${#GOLDENS[@]})) || { echo "run.sh: no decoder-only goldens selected" >&2; exit 2; }

# --quantize: the golden of the de-quantized checkpoint, from the oracle, on the committed golden's prompts.
quantized_golden() {
  local golden=$1 d=$2 arch=$3 tf run args=()
  tf=$(python3 -c "import json,sys; print(json.load(open(sys.argv[1])).get('transformers_version',''))" "$golden")
  case $tf in
    4.47*) run=$HFO/run.sh ;;
    4.51*) run=$HFO/run-4.51.sh ;;
    *) echo "no oracle (golden from transformers $tf)" >"$d/status"; echo "the oracle's trees are 4.47 and 4.51" >"$d/status.detail"; return 1 ;;
  esac
  local how=(--group-size "$GROUP" --bits "${QUANT#int}")
  [[ -n $PREQ ]] && how=(--from-gptq)
  /usr/bin/python3 "$HERE/dequantize.py" "$d/ckpt" "$d/ckpt-deq" "${how[@]}" 2>"$d/dequantize.log" ||
    { echo "dequantize.py" >"$d/status"; cp "$d/dequantize.log" "$d/status.detail"; return 1; }
  mapfile -t args < <(python3 -c "import json,sys
for p in json.load(open(sys.argv[1]))['prompts']: print('--ids'); print(','.join(map(str, p.get('input_ids', p.get('ids')))))" "$golden")
  "$run" "$d/ckpt-deq" "${args[@]}" --all-logits --greedy "$DECODE" --greedy-method nocache >"$d/oracle.json" 2>"$d/oracle.log" ||
    { echo "oracle" >"$d/status"; tail -5 "$d/oracle.log" >"$d/status.detail"; return 1; }
  python3 -c "import json,sys; c=json.load(open(sys.argv[1]))
moe = any(isinstance(c.get(k), int) and c[k] > 0 for k in ('num_local_experts', 'num_experts'))
print(1.5 if moe else 0.5)" "$d/ckpt/config.json" >"$d/tol"
  python3 - "$d/oracle.json" "$d/golden.json" <<'PY'
import json, sys
o = json.load(open(sys.argv[1]))
r = {"source": "dequantize.py of hfx create-tiny", "kind": "causal_lm", "transformers_version": o["transformers_version"],
     "prompts": [{"input_ids": p["input_ids"], "logits": p["all_logits"], "greedy_new_tokens": p["greedy_new_tokens"]}
                 for p in o["prompts"]]}
json.dump(r, open(sys.argv[2], "w"))
PY
}

echo "et_check: backend=$BACKEND${QUANT:+ quantize=$QUANT g$GROUP}${PREQ:+ prequantized=$PREQ g$GROUP} hfx=$HFX et_run=$ET_RUN out=$OUT (${#GOLDENS[@]} architectures)"
REPORTS=()
for line in "${GOLDENS[@]}"; do
  arch=${line%%$'\t'*} golden=${line#*$'\t'}
  d=$OUT/$arch
  rm -rf "$d"; mkdir -p "$d"
  echo "== $arch"
  if ! "$HFX" create-tiny "$arch" "${CREATE_FLAGS[@]}" -o "$d/ckpt" >"$d/create.log" 2>&1; then
    echo "create-tiny" >"$d/status"; cp "$d/create.log" "$d/status.detail"
  elif [[ -n $QUANT$PREQ ]] && ! quantized_golden "$golden" "$d" "$arch"; then
    :  # quantized_golden wrote the status
  elif ! "$HFX" export "$d/ckpt" --format executorch --backend "$BACKEND" "${EXPORT_FLAGS[@]}" -o "$d/pte" \
      >"$d/export.log" 2>&1; then
    echo "export (--backend $BACKEND)" >"$d/status"; cp "$d/export.log" "$d/status.detail"
  elif [[ ! -f $d/pte/model.pte ]]; then
    echo "export wrote no model.pte" >"$d/status"; ls -la "$d/pte" >"$d/status.detail" 2>&1
  else
    n=$(python3 -c "import json,sys; print(len(json.load(open(sys.argv[1]))['prompts']))" "$golden")
    for ((i = 0; i < n; i++)); do
      ids=$(python3 -c "import json,sys; p=json.load(open(sys.argv[1]))['prompts'][int(sys.argv[2])]; print(','.join(map(str, p.get('input_ids', p.get('ids')))))" "$golden" "$i")
      "$ET_RUN" --model "$d/pte/model.pte" --tokens "$ids" --decode "$DECODE" --threads "$THREADS" \
        --out "$d/prompt$i.json" 2>"$d/prompt$i.stderr"
      echo $? >"$d/prompt$i.rc"
    done
    ids=$(python3 -c "import json,sys; p=json.load(open(sys.argv[1]))['prompts'][0]; print(','.join(map(str, p.get('input_ids', p.get('ids')))))" "$golden")
    "$ET_RUN" --model "$d/pte/model.pte" --tokens "$ids" --decode 0 --logits none --over-max \
      --out "$d/probe.json" 2>"$d/probe.stderr"
    echo $? >"$d/probe.rc"
  fi
  tol=${ET_CHECK_TOL:-1e-4}
  if [[ -n $QUANT$PREQ && -f $d/golden.json ]]; then golden=$d/golden.json; tol=${ET_CHECK_TOL:-$(cat "$d/tol")}; fi
  ET_CHECK_TOL=$tol python3 "$HERE/compare.py" "$golden" "$d" >"$d/report.json" ||
    echo "{\"arch\": \"$arch\", \"ok\": false, \"problems\": [\"compare.py failed\"]}" >"$d/report.json"
  REPORTS+=("$d/report.json")
done

python3 - "$OUT" "$BACKEND" "${REPORTS[@]}" <<'PY'
import json, sys
out, backend, paths = sys.argv[1], sys.argv[2], sys.argv[3:]
reps = [json.load(open(p)) for p in paths]
json.dump({"backend": backend, "architectures": reps}, open(f"{out}/report.json", "w"), indent=1)
def f(x):
    return "-" if x is None else f"{x:.2g}"
lines = [f"{'arch':<18} {'result':<6} {'max|dlogit|':>11} {'greedy':>8} {'probe':>7} {'prefill ms*':>11} {'decode ms/tok':>13}  delegates / problems"]
for r in reps:
    ps = r.get("prompts", [])
    greedy = f"{sum(1 for p in ps if p.get('greedy_match'))}/{len(ps)}" if ps else "-"
    pf = [p.get("prefill_ms") for p in ps if p.get("prefill_ms") is not None]
    dm = [p.get("decode_ms_per_token") for p in ps if p.get("decode_ms_per_token") is not None]
    probe = r.get("probe", {})
    pstr = "-" if not probe else ("failed" if probe.get("failed_as_expected") else "RAN")
    dele = [f"{m} {n}x{b}" for m, v in sorted((r.get("delegates") or {}).items()) for b, n in (v or {}).items()]
    tail = ("delegate calls: " + ", ".join(dele) if dele else "no delegates") if r.get("ok") else "; ".join(r.get("problems", []))[:300]
    lines.append(f"{r['arch']:<18} {'PASS' if r.get('ok') else 'FAIL':<6} {f(r.get('max_abs_logit_err')):>11} {greedy:>8} {pstr:>7} "
                 f"{(f'{max(pf):.1f}' if pf else '-'):>11} {(f'{sum(dm)/len(dm):.2f}' if dm else '-'):>13}  {tail}")
lines.append("* prefill ms: the slowest of the golden prompts (6/13/2 or 1/6/13 tokens), each in a fresh process, so it "
             "includes the first call's set-up; decode ms/tok: mean over the prompts of 32 steps each")
open(f"{out}/table.txt", "w").write("\n".join(lines) + "\n")
print("\n".join(lines))
print(f"report: {out}/report.json")
sys.exit(0 if all(r.get("ok") for r in reps) else 1)
PY
