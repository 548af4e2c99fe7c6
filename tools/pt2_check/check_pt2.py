#!/usr/bin/env python3
"""Checks hfx's .pt2 archives against PyTorch and Transformers themselves.

For each architecture:
  1. a tiny checkpoint is made (`hfx create-tiny`, or Transformers' own random init with
     --checkpoint-source transformers) and exported by `hfx export --format dynamo`;
  2. every archive (prefill.pt2, decode.pt2) is opened with the PT2 archive loader directly
     (torch.export.pt2_archive._package.load_pt2, so a failure shows the real error) and with
     torch.export.load;
  3. ep.module() runs on the archive's own sample inputs (ep.example_inputs) and is compared with the
     eager outputs of AutoModelForCausalLM.from_pretrained(<the same folder>) on the same inputs;
  4. the same checkpoint is exported with transformers.exporters' DynamoExporter and OnnxExporter to
     put export time, graph size and numerics side by side.
Prints a table and writes a JSON report. Needs torch >= 2.11 and transformers >= 5.13; runs on CPU
in a few minutes for the tiny presets.
"""
from __future__ import annotations

import argparse
import json
import os
import shutil
import subprocess
import sys
import tempfile
import time
import traceback
from pathlib import Path

DEFAULT_ARCHS = ["llama", "mistral", "qwen2", "qwen3", "phi3", "gemma", "gemma2", "gpt2"]


def log(msg: str) -> None:
    print(msg, flush=True)


def max_abs(a, b) -> float:
    import torch

    a = a.detach().float().cpu()
    b = b.detach().float().cpu()
    if a.shape != b.shape:
        return float("inf")
    return (a - b).abs().max().item() if a.numel() else 0.0


# ---------------------------------------------------------------- checkpoint + hfx export


def make_checkpoint(arch: str, folder: Path, args) -> None:
    if args.checkpoint_source == "hfx":
        cmd = [args.hfx, "create-tiny", arch, "-o", str(folder)]
        subprocess.run(cmd, check=True, capture_output=True, text=True)
        return
    # Transformers' own random init of the architecture's tiny config (hfx must still accept it).
    import torch
    from transformers import AutoConfig, AutoModelForCausalLM

    cfg = AutoConfig.for_model(
        arch, vocab_size=256, hidden_size=64, intermediate_size=128, num_hidden_layers=2, num_attention_heads=4,
        num_key_value_heads=2, head_dim=16, max_position_embeddings=512)
    torch.manual_seed(0)
    AutoModelForCausalLM.from_config(cfg, torch_dtype=torch.float32).save_pretrained(folder, safe_serialization=True)


def hfx_export(ckpt: Path, out: Path, args) -> float:
    t0 = time.perf_counter()
    q = ["--quantize", "int4", "--symmetric", "--group-size", "32"] if args.quantize else []
    r = subprocess.run([args.hfx, "export", str(ckpt), "--format", "dynamo", *q, "-o", str(out)], capture_output=True, text=True)
    if r.returncode != 0:
        raise RuntimeError(f"hfx export failed: {r.stderr.strip() or r.stdout.strip()}")
    return time.perf_counter() - t0


def graph_nodes_of_archive(path: Path) -> int:
    import zipfile

    with zipfile.ZipFile(path) as z:
        name = next(n for n in z.namelist() if n.endswith("models/model.json"))
        program = json.loads(z.read(name))
    return len(program["graph_module"]["graph"]["nodes"])


# ---------------------------------------------------------------- golden eager outputs


def eager_outputs(model, kwargs: dict):
    """Runs the Transformers model on hfx's flat inputs; past_key_values is a list of (k, v)."""
    import torch
    from transformers import DynamicCache

    kw = {k: v for k, v in kwargs.items() if k != "past_key_values"}
    cache = DynamicCache(config=model.config)
    for i, (k, v) in enumerate(kwargs.get("past_key_values") or []):
        cache.update(k.clone(), v.clone(), i)
    with torch.no_grad():
        out = model(**kw, past_key_values=cache, use_cache=True)
    presents = []
    pkv = out.past_key_values
    layers = getattr(pkv, "layers", None)
    for i in range(len(layers) if layers is not None else len(pkv)):
        if layers is not None:
            presents.append((layers[i].keys, layers[i].values))
        else:
            presents.append(tuple(pkv[i][:2]))
    return out.logits, presents


def compare(ep_out, golden) -> dict:
    logits, presents = golden
    res = {"logits_max_abs": max_abs(ep_out["logits"], logits)}
    ours = ep_out.get("past_key_values") or []
    worst = 0.0
    for (k, v), (gk, gv) in zip(ours, presents):
        # Sliding-window caches may keep fewer positions in Transformers: compare the common tail.
        n = min(k.shape[-2], gk.shape[-2])
        worst = max(worst, max_abs(k[..., -n:, :], gk[..., -n:, :]), max_abs(v[..., -n:, :], gv[..., -n:, :]))
    res["present_max_abs"] = worst
    res["present_layers"] = [len(ours), len(presents)]
    return res


# ---------------------------------------------------------------- one archive


def check_archive(path: Path, model, args) -> dict:
    import torch
    from torch.export.pt2_archive._package import load_pt2

    rec = {"archive": str(path), "bytes": path.stat().st_size}
    t0 = time.perf_counter()
    try:
        contents = load_pt2(str(path))  # the archive loader itself: real errors, not a wrapper's
        rec["load_pt2"] = "ok"
        rec["models"] = sorted(contents.exported_programs)
    except Exception as e:  # noqa: BLE001
        rec["load_pt2"] = f"FAIL: {type(e).__name__}: {e}"
        rec["load_pt2_traceback"] = traceback.format_exc()
    try:
        ep = torch.export.load(str(path))
        rec["torch_export_load"] = "ok"
    except Exception as e:  # noqa: BLE001
        rec["torch_export_load"] = f"FAIL: {type(e).__name__}: {e}"
        rec["traceback"] = traceback.format_exc()
        return rec
    rec["load_seconds"] = time.perf_counter() - t0
    rec["graph_nodes"] = len([n for n in ep.graph.nodes if n.op == "call_function"])
    rec["range_constraints"] = {str(k): [str(v.lower), str(v.upper)] for k, v in ep.range_constraints.items()}
    if ep.example_inputs is None:
        rec["run"] = "FAIL: no sample inputs in the archive"
        return rec
    args_, kwargs = ep.example_inputs
    try:
        t0 = time.perf_counter()
        with torch.no_grad():
            out = ep.module()(*args_, **kwargs)
        rec["run_seconds"] = time.perf_counter() - t0
        rec["run"] = "ok"
    except Exception as e:  # noqa: BLE001
        rec["run"] = f"FAIL: {type(e).__name__}: {e}"
        rec["traceback"] = traceback.format_exc()
        return rec
    try:
        rec.update(compare(out, eager_outputs(model, kwargs)))
        rec["numerics"] = "ok" if rec["logits_max_abs"] <= args.atol and rec["present_max_abs"] <= args.atol else "FAIL"
    except Exception as e:  # noqa: BLE001
        rec["numerics"] = f"FAIL: {type(e).__name__}: {e}"
        rec["traceback"] = traceback.format_exc()
    # A second shape inside the declared ranges: the program must stay dynamic.
    try:
        kw2 = {k: v for k, v in kwargs.items()}
        if kw2["input_ids"].shape[1] > 1:
            kw2 = {k: (v[:, :-1] if k in ("input_ids", "position_ids") else v) for k, v in kw2.items()}
            kw2["attention_mask"] = kwargs["attention_mask"][:, :-1]
        with torch.no_grad():
            out2 = ep.module()(**kw2)
        c2 = compare(out2, eager_outputs(model, kw2))
        rec["second_shape_logits_max_abs"] = c2["logits_max_abs"]
    except Exception as e:  # noqa: BLE001
        rec["second_shape"] = f"FAIL: {type(e).__name__}: {e}"
    return rec


# ---------------------------------------------------------------- Transformers' own exporters


def transformers_inputs(model, batch=2, seq=8):
    import torch

    torch.manual_seed(0)
    ids = torch.randint(0, model.config.vocab_size, (batch, seq))
    return {"input_ids": ids, "attention_mask": torch.ones_like(ids)}


def run_exporter(kind: str, model, inputs: dict, workdir: Path, args) -> dict:
    import torch
    from transformers import exporters as hx

    rec = {"exporter": kind}
    try:
        t0 = time.perf_counter()
        if kind == "dynamo":
            cfg = hx.DynamoConfig(dynamic=True)
            try:
                ep = hx.DynamoExporter().export(model, dict(inputs), config=cfg)
            except TypeError:
                ep = hx.DynamoExporter(export_config=cfg).export(model)  # older signature
            rec["export_seconds"] = time.perf_counter() - t0
            rec["graph_nodes"] = len([n for n in ep.graph.nodes if n.op == "call_function"])
            path = workdir / "transformers_dynamo.pt2"
            torch.export.save(ep, str(path))
            rec["bytes"] = path.stat().st_size
            with torch.no_grad():
                out = ep.module()(**inputs)
                ref = model(**inputs)
            logits = out["logits"] if isinstance(out, dict) else out[0]
            rec["logits_max_abs"] = max_abs(logits, ref.logits)
        else:
            cfg = hx.OnnxConfig(dynamic=True)
            try:
                prog = hx.OnnxExporter().export(model, dict(inputs), config=cfg)
            except TypeError:
                prog = hx.OnnxExporter(export_config=cfg).export(model)
            rec["export_seconds"] = time.perf_counter() - t0
            path = workdir / "transformers_model.onnx"
            prog.save(str(path))
            rec["bytes"] = path.stat().st_size + sum(p.stat().st_size for p in workdir.glob("transformers_model.onnx.data"))
            rec["graph_nodes"] = len(prog.model_proto.graph.node) if hasattr(prog, "model_proto") else None
            with torch.no_grad():
                ref = model(**inputs)
            out = prog(**inputs)
            rec["logits_max_abs"] = max_abs(torch.as_tensor(out[0]), ref.logits)
        rec["status"] = "ok"
    except Exception as e:  # noqa: BLE001
        rec["status"] = f"FAIL: {type(e).__name__}: {e}"
        rec["traceback"] = traceback.format_exc()
    return rec


# ---------------------------------------------------------------- main


def check_arch(arch: str, root: Path, args) -> dict:
    import torch
    from transformers import AutoModelForCausalLM

    rep = {"arch": arch}
    ckpt, out = root / f"{arch}_ckpt", root / f"{arch}_dynamo"
    try:
        make_checkpoint(arch, ckpt, args)
        rep["hfx_export_seconds"] = hfx_export(ckpt, out, args)
    except Exception as e:  # noqa: BLE001
        rep["status"] = f"FAIL (checkpoint/export): {e}"
        return rep
    ref = ckpt
    if args.quantize:
        # The weights the program de-quantizes, re-derived in numpy (tools/et_check/dequantize.py, the rule of
        # docs/quantization.md with f32 scales), so transformers runs what the .pt2 computes.
        ref = root / f"{arch}_ckpt_deq"
        here = Path(__file__).resolve().parent
        subprocess.run([sys.executable, str(here.parent / "et_check" / "dequantize.py"), str(ckpt), str(ref),
                        "--group-size", "32", "--bits", "4", "--f32-scales"], check=True)
    model = AutoModelForCausalLM.from_pretrained(ref, torch_dtype=torch.float32, attn_implementation="eager").eval()
    rep["archives"] = {}
    for comp in ("prefill", "decode"):
        path = out / f"{comp}.pt2"
        if not path.exists():
            rep["archives"][comp] = {"load_pt2": "FAIL: missing"}
            continue
        rec = check_archive(path, model, args)
        rec["hfx_graph_nodes_json"] = graph_nodes_of_archive(path)
        rep["archives"][comp] = rec
    if not args.skip_transformers_exporters:
        inputs = transformers_inputs(model)
        rep["transformers"] = {k: run_exporter(k, model, inputs, out, args) for k in ("dynamo", "onnx")}
    ok = all(r.get("torch_export_load") == "ok" and r.get("run") == "ok" and r.get("numerics") == "ok" for r in rep["archives"].values())
    rep["status"] = "ok" if ok and len(rep["archives"]) == 2 else "FAIL"
    return rep


def fmt(x, spec="{:.2e}"):
    if x is None:
        return "-"
    if isinstance(x, float):
        return spec.format(x)
    return str(x)


def print_table(reports: list) -> None:
    log("")
    log(f"{'arch':<10} {'part':<8} {'load':<5} {'run':<5} {'logits Δ':>9} {'present Δ':>9} {'nodes':>6} {'MB':>7} {'export s':>8}  transformers dynamo (s/nodes/Δ)   onnx (s/nodes/Δ)")
    for rep in reports:
        tr = rep.get("transformers", {})
        td, to = tr.get("dynamo", {}), tr.get("onnx", {})
        for comp, r in (rep.get("archives") or {"-": {}}).items():
            log(f"{rep['arch']:<10} {comp:<8} {('ok' if r.get('torch_export_load') == 'ok' else 'FAIL'):<5} "
                f"{('ok' if r.get('run') == 'ok' else 'FAIL'):<5} {fmt(r.get('logits_max_abs')):>9} {fmt(r.get('present_max_abs')):>9} "
                f"{fmt(r.get('graph_nodes')):>6} {fmt((r.get('bytes') or 0) / 1e6, '{:.2f}'):>7} {fmt(rep.get('hfx_export_seconds'), '{:.2f}'):>8}  "
                f"{fmt(td.get('export_seconds'), '{:.2f}')}/{fmt(td.get('graph_nodes'))}/{fmt(td.get('logits_max_abs'))}   "
                f"{fmt(to.get('export_seconds'), '{:.2f}')}/{fmt(to.get('graph_nodes'))}/{fmt(to.get('logits_max_abs'))}")
        if rep.get("status") != "ok":
            log(f"  -> {rep['arch']}: {rep.get('status')}")


def main() -> int:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--hfx", default=os.environ.get("HFX", "hfx"), help="the hfx binary")
    p.add_argument("--archs", default=",".join(DEFAULT_ARCHS))
    p.add_argument("--workdir", default=None, help="keep checkpoints and archives here (default: a temp folder)")
    p.add_argument("--json", default="pt2_check_report.json")
    p.add_argument("--atol", type=float, default=1e-4)
    p.add_argument("--checkpoint-source", choices=["hfx", "transformers"], default="hfx")
    p.add_argument("--skip-transformers-exporters", action="store_true")
    p.add_argument("--quantize", action="store_true",
                   help="export with --quantize int4 --symmetric --group-size 32 (codes de-quantized in the graph) "
                        "and compare with transformers on the de-quantized weights")
    args = p.parse_args()

    import torch
    import transformers

    log(f"torch {torch.__version__}, transformers {transformers.__version__}, python {sys.version.split()[0]}")
    root = Path(args.workdir) if args.workdir else Path(tempfile.mkdtemp(prefix="pt2_check_"))
    root.mkdir(parents=True, exist_ok=True)
    reports = []
    for arch in [a for a in args.archs.split(",") if a]:
        log(f"== {arch}")
        try:
            reports.append(check_arch(arch, root, args))
        except Exception as e:  # noqa: BLE001
            reports.append({"arch": arch, "status": f"FAIL: {type(e).__name__}: {e}", "traceback": traceback.format_exc()})
    print_table(reports)
    meta = {"torch": torch.__version__, "transformers": transformers.__version__, "atol": args.atol, "workdir": str(root)}
    Path(args.json).write_text(json.dumps({"meta": meta, "reports": reports}, indent=2, default=str))
    log(f"\nreport: {args.json}")
    if not args.workdir:
        shutil.rmtree(root, ignore_errors=True)
    return 0 if all(r.get("status") == "ok" for r in reports) else 1


if __name__ == "__main__":
    sys.exit(main())
