"""`hfx generate` as a chat user meets it, against transformers 5.x, one architecture per generation structure
(issue 44): for decoder-only (SmolLM2-135M-Instruct, trained, its own ChatML template), mixture of experts
(qwen2_moe + Qwen2.5's template), state-space (mamba + Phi-3.5's template) and vision-language (llava + its
processor's template, one image), `hfx generate DIR --chat MSG --system SYS --json` must give

  - the rendered prompt of `apply_chat_template(messages, add_generation_prompt=True, tokenize=False)` (the
    processor's for llava, the system message and the image as content parts),
  - its ids as `apply_chat_template(tokenize=True)` encodes them (the tokenizer's adds no special tokens; the
    processor's adds them unless the prompt starts with BOS, and expands the image marker),
  - 16 greedy tokens equal to transformers' `generate(do_sample=False)` (EOS off on both sides:
    `--ignore-eos`, `eos_token_id=None`),

from the checkpoint (eager) and from its ONNX export (ONNX Runtime). Encoder-decoder (t5) has no chat: `--chat`
is refused naming the structure, and `--prompt`'s 16 greedy tokens equal `generate`'s. Speech (whisper):
`--prompt` and `--chat` are refused, naming the structure and `--audio`; `--audio CLIP --max-new-tokens 16`
gives the ids of `generate(input_features, language="en", task="transcribe", max_new_tokens=16)` on the
feature extractor's features (its seek loop included: 4 windows of 16 tokens on this clip), silence others.

The tiny checkpoints come from `hfx create-tiny` (they carry tokenizers and, for llava, the processor files),
loaded by transformers' own classes; the templates are real models' (tests/data/chat_templates).
"""
from __future__ import annotations

import copy
import json
import shutil
import struct
import zlib
from pathlib import Path

import pytest

import test_trained
from conftest import ROOT, run_hfx

TEMPLATES = ROOT / "tests" / "data" / "chat_templates" / "templates"
SYSTEM, MESSAGE, STEPS = "Be brief.", "Hello there, what is this?", 16
# structure: (model_type, chat template file or None for the checkpoint's own)
CASES = {
    "decoder": ("smollm2", None),
    "moe": ("qwen2_moe", "qwen2.5-7b-instruct.jinja"),
    "ssm": ("mamba", "phi-3.5-mini-instruct.jinja"),
    "vlm": ("llava", None),
}


def png(path: Path, w: int = 30, h: int = 30) -> Path:
    """An RGB PNG with a gradient (no resampling at llava's 30-pixel processor size)."""
    path.parent.mkdir(parents=True, exist_ok=True)
    raw = b"".join(b"\x00" + bytes((x * 7 + y * 3 + c * 50) % 256 for x in range(w) for c in range(3))
                   for y in range(h))

    def chunk(tag, data):
        return struct.pack(">I", len(data)) + tag + data + struct.pack(">I", zlib.crc32(tag + data) & 0xFFFFFFFF)
    path.write_bytes(b"\x89PNG\r\n\x1a\n" + chunk(b"IHDR", struct.pack(">IIBBBBB", w, h, 8, 2, 0, 0, 0))
                     + chunk(b"IDAT", zlib.compress(raw)) + chunk(b"IEND", b""))
    return path


def tiny(workdir: Path, arch: str, template: str | None) -> Path:
    folder = workdir / "chat" / arch
    if not (folder / "config.json").exists():
        tmp = folder.with_name(arch + ".tmp")
        shutil.rmtree(tmp, ignore_errors=True)
        run_hfx("create-tiny", arch, "--dtype", "float32", "-o", tmp)
        if template:
            (tmp / "chat_template.jinja").write_text((TEMPLATES / template).read_text())
        tmp.rename(folder)
    return folder


def checkpoint(workdir: Path, structure: str) -> Path:
    arch, template = CASES[structure]
    if arch == "smollm2":
        return test_trained.trained(workdir)["folder"]
    return tiny(workdir, arch, template)


def onnx_export(workdir: Path, ckpt: Path) -> Path:
    out = workdir / "chat" / (ckpt.name + "-onnx")
    if not out.exists():
        run_hfx("export", ckpt, "--format", "onnx", "-o", out)
    return out


def hfx_json(*args) -> dict:
    r = run_hfx("generate", *args, "--json")
    return json.loads(r.stdout)


def greedy(model, generation_config, **inputs) -> list:
    gc = copy.deepcopy(generation_config)
    gc.eos_token_id, gc.do_sample, gc.max_new_tokens = None, False, STEPS
    out = model.generate(**inputs, generation_config=gc)
    return out[0, inputs["input_ids"].shape[1]:].tolist()


def transformers_chat(ckpt: Path, structure: str, image: Path) -> dict:
    """What transformers renders, encodes and generates for the conversation."""
    import torch
    from PIL import Image

    if structure == "vlm":
        from transformers import AutoModelForImageTextToText, AutoProcessor

        proc = AutoProcessor.from_pretrained(ckpt)
        messages = [{"role": "system", "content": [{"type": "text", "text": SYSTEM}]},
                    {"role": "user", "content": [{"type": "image", "image": Image.open(image).convert("RGB")},
                                                 {"type": "text", "text": MESSAGE}]}]
        text = proc.apply_chat_template(messages, add_generation_prompt=True, tokenize=False)
        inputs = proc.apply_chat_template(messages, add_generation_prompt=True, tokenize=True, return_dict=True,
                                          return_tensors="pt")
        model = AutoModelForImageTextToText.from_pretrained(ckpt, dtype=torch.float32)
    else:
        from transformers import AutoModelForCausalLM, AutoTokenizer

        tok = AutoTokenizer.from_pretrained(ckpt)
        messages = [{"role": "system", "content": SYSTEM}, {"role": "user", "content": MESSAGE}]
        text = tok.apply_chat_template(messages, add_generation_prompt=True, tokenize=False)
        inputs = tok.apply_chat_template(messages, add_generation_prompt=True, tokenize=True, return_dict=True,
                                         return_tensors="pt")
        model = AutoModelForCausalLM.from_pretrained(ckpt, dtype=torch.float32)
    model.eval()
    with torch.no_grad():
        ids = greedy(model, model.generation_config, **inputs)
    return {"prompt": text, "prompt_ids": inputs["input_ids"][0].tolist(), "ids": ids}


@pytest.mark.parametrize("engine", ["eager", "ort"])
@pytest.mark.parametrize("structure", list(CASES))
def test_chat_equals_transformers(structure, engine, workdir):
    ckpt = checkpoint(workdir, structure)
    image = png(workdir / "chat" / "image.png")
    folder = ckpt if engine == "eager" else onnx_export(workdir, ckpt)
    args = [folder, "--chat", MESSAGE, "--system", SYSTEM, "--max-new-tokens", STEPS, "--ignore-eos", "--greedy",
            "--engine", engine]
    if structure == "vlm":
        args += ["--image", image]
    got = hfx_json(*args)
    assert got["mode"] == "chat" and got["engine"] == engine
    row = got["rows"][0]
    want = transformers_chat(ckpt, structure, image)
    assert row["prompt"] == want["prompt"], f"{structure}: rendered prompt differs"
    assert row["prompt_ids"] == want["prompt_ids"], f"{structure}: prompt ids differ"
    assert row["ids"] == want["ids"], f"{structure} ({engine}): greedy tokens differ"
    assert len(row["ids"]) == STEPS and row["finish_reason"] == "length"


@pytest.mark.parametrize("engine", ["eager", "ort"])
def test_seq2seq_refuses_chat_and_prompts_equal_transformers(engine, workdir):
    import torch
    from transformers import AutoModelForSeq2SeqLM, AutoTokenizer

    ckpt = tiny(workdir, "t5", None)
    folder = ckpt if engine == "eager" else onnx_export(workdir, ckpt)
    r = run_hfx("generate", folder, "--chat", MESSAGE, check=False)
    assert r.returncode == 1 and "encoder-decoder" in r.stderr and "use --prompt" in r.stderr, r.stderr
    prompt = "translate English to German: hello there"
    got = hfx_json(folder, "--prompt", prompt, "--max-new-tokens", STEPS, "--engine", engine)
    assert got["mode"] == "text2text"
    tok = AutoTokenizer.from_pretrained(ckpt)
    model = AutoModelForSeq2SeqLM.from_pretrained(ckpt, dtype=torch.float32).eval()
    inputs = tok(prompt, return_tensors="pt")
    with torch.no_grad():
        out = model.generate(**inputs, max_new_tokens=STEPS, do_sample=False)[0, 1:].tolist()
    eos = model.generation_config.eos_token_id
    if eos in out:
        out = out[:out.index(eos) + 1]
    row = got["rows"][0]
    assert row["prompt_ids"] == inputs["input_ids"][0].tolist()
    assert row["ids"] == out


def test_speech_takes_audio_not_text(workdir):
    ckpt = tiny(workdir, "whisper", None)
    for args in (["--prompt", "hello"], ["--chat", "hello"]):
        r = run_hfx("generate", ckpt, *args, check=False)
        assert r.returncode == 1, r.stderr
        assert "speech encoder-decoder model whisper" in r.stderr and "--audio" in r.stderr, r.stderr


def wav(path: Path, seconds: float = 1.5) -> tuple:
    """A 16 kHz mono clip (two tones and a sweep, so the tiny model's features are not flat) and its samples."""
    import math
    import wave as wavemod
    n = int(16000 * seconds)
    samples = [0.3 * math.sin(2 * math.pi * 440 * i / 16000) + 0.2 * math.sin(2 * math.pi * (200 + i / 40) * i / 16000)
               for i in range(n)]
    pcm = [max(-32768, min(32767, int(round(s * 32767)))) for s in samples]
    with wavemod.open(str(path), "wb") as f:
        f.setnchannels(1)
        f.setsampwidth(2)
        f.setframerate(16000)
        f.writeframes(struct.pack(f"<{n}h", *pcm))
    return path, [p / 32768.0 for p in pcm]


@pytest.mark.parametrize("engine", ["eager", "ort"])
def test_speech_audio_greedy_equals_generate(workdir, engine):
    """`hfx generate WHISPER --audio FILE` (English, no timestamps, greedy) gives the ids of transformers'
    `generate(input_features, language="en", task="transcribe")` on the feature extractor's features."""
    import numpy as np
    import torch
    from transformers import WhisperFeatureExtractor, WhisperForConditionalGeneration

    ckpt = workdir / "chat" / "whisper-0.3"  # weights' std 0.3: tokens vary (0.02 gives one token repeated)
    if not (ckpt / "config.json").exists():
        tmp = ckpt.with_name("whisper-0.3.tmp")
        shutil.rmtree(tmp, ignore_errors=True)
        run_hfx("create-tiny", "whisper", "--dtype", "float32", "--initializer-range", "0.3", "-o", tmp)
        tmp.rename(ckpt)
    folder = ckpt if engine == "eager" else onnx_export(workdir, ckpt)
    clip, samples = wav(workdir / "chat" / "speech.wav")
    got = hfx_json(folder, "--audio", clip, "--max-new-tokens", STEPS, "--engine", engine)
    assert got["mode"] == "speech" and got["audio"] == [str(clip)]
    row = got["rows"][0]
    fe = WhisperFeatureExtractor.from_pretrained(ckpt)
    feats = fe(np.asarray(samples, dtype=np.float32), sampling_rate=16000, return_tensors="pt").input_features
    model = WhisperForConditionalGeneration.from_pretrained(ckpt, dtype=torch.float32).eval()
    with torch.no_grad():
        seq = model.generate(feats, language="en", task="transcribe", max_new_tokens=STEPS, do_sample=False)
    seq = seq[0].tolist()
    prompt = row["prompt_ids"]
    if seq[:len(prompt)] == prompt:  # the sequences carry the decoder prompt (start, language, task, notimestamps)
        seq = seq[len(prompt):]
    assert len(set(row["ids"])) > 1, row["ids"]
    assert row["ids"] == seq, (row["ids"], seq)
    print(f"[chat] whisper {engine}: prompt {prompt}, ids {row['ids']} == generate()")
    # the negative control: silence gives other ids, so the ids depend on the audio
    silent = fe(np.zeros(len(samples), dtype=np.float32), sampling_rate=16000, return_tensors="pt").input_features
    with torch.no_grad():
        seq2 = model.generate(silent, language="en", task="transcribe", max_new_tokens=STEPS, do_sample=False)
    assert seq2[0].tolist()[len(prompt):] != row["ids"]
