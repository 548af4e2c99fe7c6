#!/bin/bash
# Self-test of make_goldens.py on tiny random checkpoints made by make_tiny_hf.py with the real transformers classes
# (not hfx): makes them in $TINY (default /tmp/hf_tiny), writes goldens twice into $OUTD/run1 and $OUTD/run2
# (default /tmp/hf_goldens_test), checks them with check_goldens.py and that both runs are byte-identical.
#   tools/hf_goldens/test_tiny.sh [name ...]          (the project's venv; PYTHON=... overrides)
set -uo pipefail
HERE="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
PY="${PYTHON:-$HERE/../../.venv/bin/python}"
TINY="${TINY:-/tmp/hf_tiny}"
OUTD="${OUTD:-/tmp/hf_goldens_test}"
names=("$@")
if [ ${#names[@]} -eq 0 ]; then
  for m in bert roberta xlm-roberta distilbert modernbert; do
    names+=("$m" "$m-mlm" "$m-seqcls" "$m-tokcls")
  done
  names+=(t5 t5-gated bart marian)
fi
"$PY" "$HERE/make_tiny_hf.py" "$TINY" "${names[@]}" >/dev/null
rm -rf "$OUTD"; mkdir -p "$OUTD/run1" "$OUTD/run2"
rc=0
for n in "${names[@]}"; do
  for r in run1 run2; do
    "$HERE/make_goldens.sh" "$TINY/$n" -o "$OUTD/$r/$n.json" || { echo "FAIL make_goldens $n" >&2; rc=1; }
  done
  cmp -s "$OUTD/run1/$n.json" "$OUTD/run2/$n.json" || { echo "FAIL $n: two runs differ" >&2; rc=1; }
done
/usr/bin/python3 "$HERE/check_goldens.py" "$OUTD"/run1/*.json || rc=1
du -ch "$OUTD"/run1/*.json | tail -1
exit $rc
