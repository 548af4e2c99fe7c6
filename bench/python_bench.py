"""bench/python_bench.py — the Python package against its own baselines (issue 42), on the llama-100m shape
(f32, ~400 MB; bench/.cache/llama-100m, made by `hfx create-tiny llama --preset llama-100m`).

    .venv/bin/python bench/python_bench.py [OUT.jsonl]

Prints JSON lines {"name", "value", "baseline", "ratio", "unit", "note"} (appended to OUT.jsonl if given):
  live_export_peak_rss_mib      peak RSS of a process that holds the live transformers model and exports it to
                                ONNX (VmHWM, reset after the model is built)       vs model bytes (+10 % allowed)
  live_export_added_rss_mib     the same peak less the process's RSS before the model existed (interpreter,
                                torch, transformers, hfx)                           vs model bytes
  python_vs_cli_export_s        wall time of `python -c "OnnxExporter().export_for_generation(CK, out=...)"`
                                vs `hfx export CK --format onnx -o ...` (whole processes; median of
                                HFX_BENCH_REPS, default 3, alternating)
The package comes from HFX_WHEEL, else a wheel built here by `pip wheel .` over HFX_BENCH_BUILD (default build/);
the CLI from HFX_BIN (default build/hfx).
"""
from __future__ import annotations

import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
CACHE = ROOT / "bench" / ".cache"
HFX = os.environ.get("HFX_BIN", str(ROOT / "build" / "hfx"))


def log(msg: str) -> None:
    print(f"[python-bench] {msg}", file=sys.stderr, flush=True)


def package_site(work: Path) -> Path:
    wheel = os.environ.get("HFX_WHEEL")
    if not wheel:
        env = dict(os.environ, PYTHONPATH=str(ROOT / ".pybuild"))
        build = os.environ.get("HFX_BENCH_BUILD", str(ROOT / "build"))
        subprocess.run([sys.executable, "-m", "pip", "wheel", str(ROOT), "--no-build-isolation", "--no-deps",
                        "--no-index", "-q", "-w", str(work / "dist"), "-C", f"build-dir={build}"], env=env, check=True)
        wheel = str(next((work / "dist").glob("hfx-*.whl")))
    site = work / "site"
    subprocess.run([sys.executable, "-m", "pip", "install", "-q", "--no-deps", "--no-index", "--target", str(site),
                    wheel], check=True)
    return site


# The child measuring memory: RSS before the model, then the model built from the checkpoint by transformers,
# VmHWM reset (clear_refs 5), the live export, VmHWM read.
MEMORY_CHILD = r"""
import json, sys
def status(key):
    for line in open("/proc/self/status"):
        if line.startswith(key):
            return int(line.split()[1]) * 1024
import torch, transformers, hfx
from hfx.exporters import OnnxExporter
before = status("VmRSS:")
model = transformers.AutoModelForCausalLM.from_pretrained(sys.argv[1], dtype=torch.float32)
seen, model_bytes = set(), 0
for t in model.state_dict().values():
    if t.data_ptr() not in seen:
        seen.add(t.data_ptr()); model_bytes += t.numel() * t.element_size()
after_load = status("VmRSS:")
open("/proc/self/clear_refs", "w").write("5")
OnnxExporter().export_for_generation(model, out=sys.argv[2], progress=False)
peak = status("VmHWM:")
print(json.dumps({"before": before, "after_load": after_load, "peak": peak, "model_bytes": model_bytes}))
"""


def measure_memory(site: Path, ck: Path, work: Path) -> list:
    env = dict(os.environ, PYTHONPATH=str(site))
    r = subprocess.run([sys.executable, "-c", MEMORY_CHILD, str(ck), str(work / "live-onnx")], env=env,
                       capture_output=True, text=True, check=True)
    m = json.loads(r.stdout.strip().splitlines()[-1])
    mib = 1 << 20
    note = (f"RSS before the model {m['before'] / mib:.0f} MiB (python, torch, transformers, hfx), after "
            f"from_pretrained {m['after_load'] / mib:.0f} MiB")
    return [
        {"name": "live_export_peak_rss_mib", "value": round(m["peak"] / mib, 1),
         "baseline": round(m["model_bytes"] * 1.1 / mib, 1), "ratio": round(m["peak"] / (m["model_bytes"] * 1.1), 3),
         "unit": "MiB", "note": "baseline: model bytes + 10 %; " + note},
        {"name": "live_export_added_rss_mib", "value": round((m["peak"] - m["before"]) / mib, 1),
         "baseline": round(m["model_bytes"] / mib, 1), "ratio": round((m["peak"] - m["before"]) / m["model_bytes"], 3),
         "unit": "MiB", "note": "peak less the RSS before the model existed, vs model bytes; " + note},
    ]


def measure_time(site: Path, ck: Path, work: Path, reps: int) -> dict:
    env = dict(os.environ, PYTHONPATH=str(site))
    py = ["python", sys.executable, "-c",
          "import sys; from hfx.exporters import OnnxExporter; "
          "OnnxExporter().export_for_generation(sys.argv[1], out=sys.argv[2], progress=False)", str(ck),
          str(work / "py-onnx")]
    cli = ["cli", HFX, "export", str(ck), "--format", "onnx", "-o", str(work / "cli-onnx")]
    times = {"python": [], "cli": []}
    for i in range(reps):
        for name, *cmd in ([py, cli] if i % 2 == 0 else [cli, py]):
            t0 = time.perf_counter()
            subprocess.run(cmd, env=env, check=True, capture_output=True)
            times[name].append(time.perf_counter() - t0)
    med = {k: statistics.median(v) for k, v in times.items()}
    return {"name": "python_vs_cli_export_s", "value": round(med["python"], 3), "baseline": round(med["cli"], 3),
            "ratio": round(med["python"] / med["cli"], 4), "unit": "s",
            "note": f"median of {reps} alternating runs each; python {times['python']}, cli {times['cli']}"}


def main() -> None:
    ck = CACHE / "llama-100m"
    if not (ck / "model.safetensors").exists():
        log("creating llama-100m (f32, ~400 MB)")
        subprocess.run([HFX, "create-tiny", "llama", "--preset", "llama-100m", "-o", str(ck)], check=True,
                       capture_output=True)
    with tempfile.TemporaryDirectory(prefix="hfx-pybench-") as tmp:
        work = Path(tmp)
        site = package_site(work)
        rows = measure_memory(site, ck, work)
        rows.append(measure_time(site, ck, work, int(os.environ.get("HFX_BENCH_REPS", "3"))))
    for row in rows:
        line = json.dumps(row)
        print(line)
        if len(sys.argv) > 1:
            with open(sys.argv[1], "a") as f:
                f.write(line + "\n")


if __name__ == "__main__":
    main()
