#!/usr/bin/env bash
# Runs hfx's ExecuTorch exports of the structures that are not KV-cache decoders — encoder-only,
# encoder-decoder, speech, image-text (and, on request, the state-space decoders) — on ExecuTorch's own C++
# runtime, by replaying the real calls of each model's generation loop (run.sh covers the KV-cache decoders
# against transformers goldens).
#
#   tools/et_check/run_components.sh [BUILD_DIR] [--backend portable|xnnpack] [--quantize int4|int8]
#                                    [--et-root DIR] [--out DIR] [--archs a,b,...] [--threads N]
#                                    [--max-batch N]
#
# Per architecture:
#   hfx create-tiny ARCH -o OUT/ARCH/ckpt
#   hfx export OUT/ARCH/ckpt --format executorch --backend B [--quantize Q --symmetric] [--max-batch N] -o OUT/ARCH/pte
#   (ExecuTorch exports are batch 1 by default: the loop's batch-2 and padded batch-3 samples are then cut
#   to one row; --max-batch 3 keeps them, so the runtime runs the padded calls too)
#   hfx verify OUT/ARCH/pte --save-calls OUT/ARCH/calls     (must pass: hfx's reader against eager)
#   et_run --model OUT/ARCH/pte/model.pte --replay OUT/ARCH/calls
# The call fixtures hold each recorded call's inputs and eager's outputs (src/verify/call_fixture.h) and
# each out-of-contract probe. An architecture passes when every method loads and runs every recorded call in
# the runtime within the tolerance of eager — 1e-4 in float32; with --quantize the bound hfx verify uses for
# XNNPACK's run-time activation rounding, 0.5 (1.5 for routed experts) — and every probe is refused.
# Writes OUT/report.json and OUT/table.txt; exits 1 if any architecture fails.
set -uo pipefail
HERE=$(cd "$(dirname "$0")" && pwd)
ROOT=$(cd "$HERE/../.." && pwd)
BUILD_DIR="" BACKEND=xnnpack ET_ROOT=${ET_ROOT:-/work/et} OUT="" THREADS=0 QUANT="" MAX_BATCH=""
ARCHS="bert,roberta,xlm-roberta,distilbert,modernbert,t5,bart,marian,whisper,llava,gemma3,idefics3,smolvlm,qwen2_vl"
while (($#)); do
  case $1 in
    --backend) BACKEND=$2; shift 2 ;;
    --quantize) QUANT=$2; shift 2 ;;
    --max-batch) MAX_BATCH=$2; shift 2 ;;
    --et-root) ET_ROOT=$2; shift 2 ;;
    --out) OUT=$2; shift 2 ;;
    --archs) ARCHS=$2; shift 2 ;;
    --threads) THREADS=$2; shift 2 ;;
    -h|--help) sed -n '2,24p' "$0"; exit 0 ;;
    -*) echo "run_components.sh: unknown option $1" >&2; exit 2 ;;
    *) BUILD_DIR=$1; shift ;;
  esac
done
HFX=${BUILD_DIR:-$ROOT/build}/hfx
ET_RUN=$ET_ROOT/et_run-build/et_run
OUT=${OUT:-$ET_ROOT/components-$BACKEND${QUANT:+-$QUANT}}
[[ -x $HFX ]] || { echo "run_components.sh: no hfx at $HFX (build the project first)" >&2; exit 2; }
[[ -x $ET_RUN ]] || { echo "run_components.sh: no et_run at $ET_RUN (docs/executorch-runtime.md)" >&2; exit 2; }
FLAGS=(--backend "$BACKEND")
[[ -n $QUANT ]] && FLAGS+=(--quantize "$QUANT" --symmetric)
[[ -n $MAX_BATCH ]] && FLAGS+=(--max-batch "$MAX_BATCH")
mkdir -p "$OUT"
echo "et_check components: backend=$BACKEND${QUANT:+ quantize=$QUANT} hfx=$HFX et_run=$ET_RUN out=$OUT"
REPORTS=()
IFS=, read -ra LIST <<<"$ARCHS"
for arch in "${LIST[@]}"; do
  d=$OUT/$arch
  rm -rf "$d"; mkdir -p "$d"
  echo "== $arch"
  stage=""
  if ! "$HFX" create-tiny "$arch" -o "$d/ckpt" >"$d/create.log" 2>&1; then stage=create-tiny
  elif ! "$HFX" export "$d/ckpt" --format executorch "${FLAGS[@]}" -o "$d/pte" >"$d/export.log" 2>&1; then stage=export
  elif ! "$HFX" verify "$d/pte" --save-calls "$d/calls" --no-manifest >"$d/verify.log" 2>&1; then stage="hfx verify"
  elif ! "$ET_RUN" --model "$d/pte/model.pte" --replay "$d/calls" --threads "$THREADS" --out "$d/replay.json" \
      2>"$d/et_run.stderr"; then stage=et_run
  fi
  python3 - "$arch" "$d" "$stage" "$QUANT" >"$d/report.json" <<'PY'
import json, os, sys
arch, d, stage, quant = sys.argv[1:]
rep = {"arch": arch, "ok": not stage, "problems": []}
if stage:
    log = {"create-tiny": "create.log", "export": "export.log", "hfx verify": "verify.log", "et_run": "et_run.stderr"}[stage]
    tail = open(os.path.join(d, log), errors="replace").read().strip().splitlines()[-3:]
    rep["problems"].append(f"{stage}: " + " | ".join(tail))
else:
    cfg = json.load(open(os.path.join(d, "ckpt", "config.json")))
    moe = any(isinstance(cfg.get(k), int) and cfg[k] > 0 for k in ("num_local_experts", "num_experts"))
    tol = float(os.environ.get("ET_CHECK_TOL", (1.5 if moe else 0.5) if quant else 1e-4))
    calls = json.load(open(os.path.join(d, "replay.json")))["replay"]
    runs = [c for c in calls if not c["probe"]]
    probes = [c for c in calls if c["probe"]]
    rep.update(tol=tol, calls=len(runs), probes=len(probes), methods=sorted({c["method"] for c in calls}))
    rep["max_abs"] = max((c.get("max_abs", float("inf")) for c in runs), default=None)
    for c in runs:
        if not c.get("ok"):
            rep["problems"].append(f"{os.path.basename(c['file'])}: {c.get('error')}")
        elif not (c["max_abs"] <= tol):
            rep["problems"].append(f"{os.path.basename(c['file'])}: max abs {c['max_abs']:.3g} > {tol:g} ({c['worst']})")
    for c in probes:
        if not c.get("refused"):
            rep["problems"].append(f"{os.path.basename(c['file'])}: the out-of-contract call ran")
    if not runs:
        rep["problems"].append("no recorded calls to replay")
    rep["ok"] = not rep["problems"]
print(json.dumps(rep))
PY
  REPORTS+=("$d/report.json")
done
python3 - "$OUT" "${REPORTS[@]}" <<'PY'
import json, sys
out, paths = sys.argv[1], sys.argv[2:]
reps = [json.load(open(p)) for p in paths]
json.dump({"architectures": reps}, open(f"{out}/report.json", "w"), indent=1)
lines = [f"{'arch':<12} {'result':<6} {'max abs':>9} {'tol':>7} {'calls':>5} {'probes refused':>14}  methods / problems"]
for r in reps:
    m = "-" if r.get("max_abs") is None else f"{r['max_abs']:.2g}"
    tail = ", ".join(r.get("methods", [])) if r["ok"] else "; ".join(r["problems"])[:300]
    lines.append(f"{r['arch']:<12} {'PASS' if r['ok'] else 'FAIL':<6} {m:>9} {r.get('tol', '-')!s:>7} "
                 f"{r.get('calls', '-')!s:>5} {str(r.get('probes', '-')):>14}  {tail}")
open(f"{out}/table.txt", "w").write("\n".join(lines) + "\n")
print("\n".join(lines))
print(f"report: {out}/report.json")
sys.exit(0 if all(r["ok"] for r in reps) else 1)
PY
