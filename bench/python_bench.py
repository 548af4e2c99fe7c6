"""bench/python_bench.py — the Python package against its own baselines (issue 42), on the llama-100m shape
(f32, ~400 MB; bench/.cache/llama-100m, made by `hfx create-tiny llama --preset llama-100m`).

    .venv/bin/python bench/python_bench.py [OUT.jsonl]

Prints JSON lines {"name", "value", "baseline", "ratio", "unit", "note"} (appended to OUT.jsonl if given):
  live_export_added_rss_mib     what exporting a live transformers model (llama-100m shape, built in the
                                process's memory) to ONNX adds to the RSS of the process holding it (VmHWM,
                                reset once the model is built, less the RSS then)   vs 10 % of the model's bytes
  live_export_peak_rss_mib      that peak                                           vs RSS holding the model + 10 %
  python_vs_cli_export_s        wall time of `python -c "OnnxExporter().export_for_generation(CK, ...)"` vs
                                `hfx export CK --format onnx --dtype bf16 -o ...` on the Llama-3.2-1B shape
                                (bench/.cache/llama-1b, bf16; whole processes, median of HFX_BENCH_REPS,
                                default 3, alternating)
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


# The child measuring memory: RSS before the model, then the model built from the checkpoint's config by transformers,
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
# Built in the process's own memory (from_config): from_pretrained may leave parameters backed by the mapped
# file, whose pages would count in RSS only as the export reads them.
config = transformers.AutoConfig.from_pretrained(sys.argv[1])
model = transformers.AutoModelForCausalLM.from_config(config, dtype=torch.float32)
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
    mib, allowance = 1 << 20, 0.1 * m["model_bytes"]
    note = (f"model {m['model_bytes'] / mib:.0f} MiB; process RSS before the model {m['before'] / mib:.0f} MiB "
            f"(python, torch, transformers, hfx), holding the model {m['after_load'] / mib:.0f} MiB, peak during the "
            f"export {m['peak'] / mib:.0f} MiB")
    return [
        {"name": "live_export_added_rss_mib", "value": round((m["peak"] - m["after_load"]) / mib, 1),
         "baseline": round(allowance / mib, 1), "ratio": round((m["peak"] - m["after_load"]) / allowance, 3),
         "unit": "MiB", "note": "what the export adds to the process holding the model, vs 10 % of the model's "
                                "bytes (a copy of the weights would add 100 %); " + note},
        {"name": "live_export_peak_rss_mib", "value": round(m["peak"] / mib, 1),
         "baseline": round((m["after_load"] + allowance) / mib, 1),
         "ratio": round(m["peak"] / (m["after_load"] + allowance), 3), "unit": "MiB",
         "note": "peak RSS of the export process vs its RSS holding the model + 10 % of the model's bytes; " + note},
    ]


def measure_time(site: Path, ck: Path, work: Path, reps: int) -> dict:
    env = dict(os.environ, PYTHONPATH=str(site))
    py = ["python", sys.executable, "-c",
          "import sys; from hfx.exporters import OnnxExporter, OnnxConfig; "
          "OnnxExporter().export_for_generation(sys.argv[1], config=OnnxConfig(dtype='bf16'), out=sys.argv[2], "
          "progress=False)", str(ck), str(work / "py-onnx")]
    cli = ["cli", HFX, "export", str(ck), "--format", "onnx", "--dtype", "bf16", "-o", str(work / "cli-onnx")]
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
    big = Path(os.environ.get("HFX_BENCH_TIME_CKPT", str(CACHE / "llama-1b")))
    if not (big / "model.safetensors").exists():
        log("creating llama-1b (Llama-3.2-1B shape, bf16, ~2.5 GB; a few minutes)")
        subprocess.run([HFX, "create-tiny", "llama", "--preset", "llama-3.2-1b", "-o", str(big)], check=True,
                       capture_output=True)
    with tempfile.TemporaryDirectory(prefix="hfx-pybench-") as tmp:
        work = Path(tmp)
        site = package_site(work)
        rows = measure_memory(site, ck, work)
        rows.append(measure_time(site, big, work, int(os.environ.get("HFX_BENCH_REPS", "3"))))
    for row in rows:
        line = json.dumps(row)
        print(line)
        if len(sys.argv) > 1:
            with open(sys.argv[1], "a") as f:
                f.write(line + "\n")


if __name__ == "__main__":
    main()
