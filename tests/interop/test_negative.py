"""Negative controls: the judges must fail, naming the component, when the artifact is wrong.

- scaled weight: the llama case's lm_head scaled by 1.001 (one weight, 0.1%) in the checkpoint hfx exports,
  judged against transformers on the original checkpoint, in every format;
- swapped method: mamba's .pte with its prefill and decode programs' names exchanged (ExecuTorch's own
  serializer rewrites the program), judged as a correct one.
"""
from __future__ import annotations

import shutil

import pytest

import test_decoders
import test_state
from cases import BY_NAME
from conftest import FORMATS, run_hfx
from judge import EXACT, Mismatch, Record
from runtimes import OnnxProgram, PteModule, Pt2Program


def scaled_checkpoint(src, dst, name: str, factor: float):
    from safetensors.numpy import load_file, save_file

    if dst.exists():
        return dst
    shutil.copytree(src, dst)
    tensors = load_file(str(src / "model.safetensors"))
    assert name in tensors, f"[interop] expected tensor {name} in {src}, got {sorted(tensors)[:8]}..."
    tensors[name] = tensors[name] * factor
    save_file(tensors, str(dst / "model.safetensors"), metadata={"format": "pt"})
    return dst


@pytest.mark.parametrize("fmt", list(FORMATS))
def test_scaled_weight_fails(fmt, workdir, checkpoint):
    case = BY_NAME["llama"]
    bad = scaled_checkpoint(checkpoint(case), workdir / "ckpt" / "llama-lm_head-x1.001", "lm_head.weight", 1.001)
    out = workdir / "out" / f"llama-lm_head-x1.001-{fmt}"
    if not out.exists():
        run_hfx("export", bad, *FORMATS[fmt][0], "-o", out)
    ref = test_decoders.reference(case, checkpoint)  # transformers on the original weights
    rec = Record(case="negative", model_type="llama", fmt=fmt, runtime=FORMATS[fmt][1])
    with pytest.raises(Mismatch) as err:
        if fmt == "onnx":
            test_decoders.judge_functional(rec, OnnxProgram(out / "onnx" / "prefill.onnx"),
                                           OnnxProgram(out / "onnx" / "decode.onnx"), ref, EXACT)
        elif fmt == "pt2":
            test_decoders.judge_functional(rec, Pt2Program(out / "prefill.pt2"), Pt2Program(out / "decode.pt2"),
                                           ref, EXACT)
        else:
            test_decoders.judge_pte(rec, PteModule(out / "model.pte"), ref)
    print(f"\n[negative control] {err.value}")
    assert "prefill logits" in str(err.value) and f"[{fmt}/" in str(err.value), str(err.value)


def test_swapped_pte_method_fails(workdir, export, checkpoint):
    from executorch.exir._serialize import _program as serde

    case = BY_NAME["mamba"]
    good = export(case, "pte-portable") / "model.pte"
    pte_file = serde.deserialize_pte_binary(good.read_bytes())
    plans = {p.name: p for p in pte_file.program.execution_plan}
    plans["prefill"].name, plans["decode"].name = "decode", "prefill"
    bad = workdir / "out" / "mamba-swapped.pte"
    bad.write_bytes(bytes(serde.serialize_pte_binary(pte_file)))
    rec = Record(case="negative", model_type="mamba", fmt="pte-portable", runtime="executorch")
    with pytest.raises((Mismatch, RuntimeError)) as err:
        test_state.judge_pte(rec, PteModule(bad), test_state.reference(case, checkpoint))
    print(f"\n[negative control] {err.value}")
    assert "'prefill'" in str(err.value), str(err.value)
    # The control's control: the same round trip without the swap passes.
    same = serde.deserialize_pte_binary(good.read_bytes())
    ok = workdir / "out" / "mamba-roundtrip.pte"
    ok.write_bytes(bytes(serde.serialize_pte_binary(same)))
    test_state.judge_pte(Record(case="negative", model_type="mamba", fmt="pte-portable", runtime="executorch"),
                         PteModule(ok), test_state.reference(case, checkpoint))
