"""`hfx export --format gguf` of T5 and mT5 (llama.cpp's t5 arch: encoder and decoder), judged by llama.cpp itself.

node-llama-cpp runs no encoder-decoder model, so the judge here is llama.cpp's C API in node-llama-cpp's released
libllama, called through ctypes: llama_encode over the input ids, then llama_decode one decoder token at a time
(the decoder start token first), reading the logits after each.

Checkpoints (transformers' own classes and random init, transformers 5.23):
  - t5@spm: T5ForConditionalGeneration, ReLU MLP, tied embeddings (the decoder output scaled by d_model^-0.5 before
    lm_head: the file's output matrix carries the factor), a sentencepiece Unigram (nmt_nfkc) trained on the corpus'
    pieces and converted by transformers' T5Tokenizer;
  - mt5@spm: MT5ForConditionalGeneration, gated GELU (ggml's f16 GELU table on the transformers side, as llama.cpp
    runs it), untied lm_head, 3 encoder and 2 decoder layers.
Judged: structure (gguf-py), llama.cpp's logits at every decoder position against transformers on the file's
weights (f32, f16, q8_0 at test_gguf's bounds), 32 greedy tokens at f32, the tokenizer on the 1,000 strings, and
`hfx verify`'s read-back (its runtime checks are "not judged": it has no encoder-decoder runtime).
"""
from __future__ import annotations

import ctypes
import json
import shutil
from pathlib import Path

import numpy as np
import pytest

from conftest import run_hfx
from test_gguf import GGML_BASE, LOGIT_BOUNDS, centered, export_of, ggml_gelu, ggml_quantize, kind_type, strings

ARCHS = {"t5@spm": ("T5", dict(feed_forward_proj="relu", num_layers=2, num_decoder_layers=2)),
         "mt5@spm": ("MT5", dict(feed_forward_proj="gated-gelu", num_layers=3, num_decoder_layers=2))}
ENC_IDS = [12, 45, 280, 77, 8, 250, 101, 64, 99, 180, 1]
DEC_IDS = [7, 301, 42, 150, 9, 33, 260]


def checkpoint(workdir: Path, arch: str) -> Path:
    folder = workdir / "gguf" / arch
    if (folder / "config.json").exists():
        return folder
    import sentencepiece as spm
    import torch
    import transformers

    family, knobs = ARCHS[arch]
    tmp = folder.with_name(arch + ".tmp")
    shutil.rmtree(tmp, ignore_errors=True)
    spm_dir = tmp / "spm"
    spm_dir.mkdir(parents=True)
    with open(spm_dir / "spiece.model", "wb") as f:
        spm.SentencePieceTrainer.train(sentence_iterator=iter(strings(4000)), model_writer=f, vocab_size=600,
                                       model_type="unigram", character_coverage=1.0, minloglevel=2,
                                       normalization_rule_name="nmt_nfkc", hard_vocab_limit=False, num_threads=1,
                                       pad_id=0, eos_id=1, unk_id=2, bos_id=-1)
    tok = transformers.T5Tokenizer.from_pretrained(str(spm_dir), extra_ids=4)
    tok.save_pretrained(tmp)
    shutil.rmtree(spm_dir)
    torch.manual_seed(11)
    cfg = getattr(transformers, family + "Config")(
        vocab_size=len(tok), d_model=64, d_kv=16, d_ff=128, num_heads=4, relative_attention_num_buckets=8,
        pad_token_id=tok.pad_token_id, eos_token_id=tok.eos_token_id, decoder_start_token_id=tok.pad_token_id,
        **knobs)
    getattr(transformers, family + "ForConditionalGeneration")(cfg).save_pretrained(tmp)
    tmp.rename(folder)
    return folder


def export(workdir: Path, arch: str, kind: str) -> Path:
    return export_of(checkpoint, workdir, arch, kind)


class LlamaCpp:
    """llama.cpp's C API through ctypes (node-llama-cpp's libllama). Only defaults of the params structs are used
    (returned and passed back whole, into buffers larger than the structs); llama_batch's layout is the one every
    llama.h since 2024 has."""

    class Batch(ctypes.Structure):
        _fields_ = [("n_tokens", ctypes.c_int32), ("token", ctypes.POINTER(ctypes.c_int32)),
                    ("embd", ctypes.c_void_p), ("pos", ctypes.c_void_p), ("n_seq_id", ctypes.c_void_p),
                    ("seq_id", ctypes.c_void_p), ("logits", ctypes.c_void_p)]

    class Params(ctypes.Structure):
        _fields_ = [("raw", ctypes.c_uint8 * 1024)]

    def __init__(self, gguf: Path):
        bins = GGML_BASE.parent
        ctypes.CDLL(str(bins / "libggml-base.so"), mode=ctypes.RTLD_GLOBAL)
        ggml = ctypes.CDLL(str(next(bins.glob("libggml.v*.so"))), mode=ctypes.RTLD_GLOBAL)
        ggml.ggml_backend_load_all_from_path.argtypes = [ctypes.c_char_p]
        ggml.ggml_backend_load_all_from_path(str(bins).encode())  # the CPU backend variants beside it
        lib = self.lib = ctypes.CDLL(str(next(bins.glob("libllama.v*.so"))))
        vp, i32 = ctypes.c_void_p, ctypes.c_int32
        for name, res, args in [("llama_model_default_params", self.Params, []),
                                ("llama_context_default_params", self.Params, []),
                                ("llama_model_load_from_file", vp, [ctypes.c_char_p, self.Params]),
                                ("llama_init_from_model", vp, [vp, self.Params]),
                                ("llama_model_get_vocab", vp, [vp]),
                                ("llama_vocab_n_tokens", i32, [vp]),
                                ("llama_model_decoder_start_token", i32, [vp]),
                                ("llama_tokenize", i32, [vp, ctypes.c_char_p, i32, ctypes.POINTER(i32), i32,
                                                         ctypes.c_bool, ctypes.c_bool]),
                                ("llama_batch_get_one", self.Batch, [ctypes.POINTER(i32), i32]),
                                ("llama_encode", i32, [vp, self.Batch]), ("llama_decode", i32, [vp, self.Batch]),
                                ("llama_get_logits_ith", ctypes.POINTER(ctypes.c_float), [vp, i32]),
                                ("llama_free", None, [vp]), ("llama_model_free", None, [vp])]:
            fn = getattr(lib, name)
            fn.restype, fn.argtypes = res, args
        lib.llama_backend_init()
        self.model = lib.llama_model_load_from_file(str(gguf).encode(), lib.llama_model_default_params())
        assert self.model, f"[llama.cpp] could not load {gguf}"
        self.vocab = lib.llama_model_get_vocab(self.model)
        self.n_vocab = lib.llama_vocab_n_tokens(self.vocab)

    # llama_context_params offsets (llama.h of node-llama-cpp 3.21.1's llama.cpp: nine uint32 counts, ctx_type, four
    # enums — flash_attn_type the last —, eight floats, two pointers, then type_k and type_v), checked against
    # their defaults before use.
    FLASH_ATTN, TYPE_K, TYPE_V = 52, 104, 108

    def context_params(self):
        """Defaults, but K/V cache in f32 and no flash attention (its f16 accumulation): the f32 files' numbers."""
        p = self.lib.llama_context_default_params()
        raw = np.frombuffer(bytes(p.raw[:112]), dtype=np.int32)
        assert raw[self.FLASH_ATTN // 4] == -1 and raw[self.TYPE_K // 4] == 1 and raw[self.TYPE_V // 4] == 1, (
            f"[llama.cpp] expected llama_context_params' defaults flash_attn_type -1 (auto), type_k/type_v 1 (f16) at "
            f"bytes {self.FLASH_ATTN}/{self.TYPE_K}/{self.TYPE_V}, got {raw.tolist()}: llama.h's layout changed")
        for off, v in ((self.FLASH_ATTN, 0), (self.TYPE_K, 0), (self.TYPE_V, 0)):
            ctypes.memmove(ctypes.addressof(p) + off, ctypes.byref(ctypes.c_int32(v)), 4)
        return p

    def close(self):
        self.lib.llama_model_free(self.model)

    def _run(self, fn, ctx, ids):
        arr = (ctypes.c_int32 * len(ids))(*ids)
        rc = fn(ctx, self.lib.llama_batch_get_one(arr, len(ids)))
        assert rc == 0, f"[llama.cpp] {fn.__name__} returned {rc}"

    def decoder_logits(self, enc_ids: list, dec_ids: list) -> np.ndarray:
        """Logits after each of dec_ids (fed one at a time after the encoder pass)."""
        ctx = self.lib.llama_init_from_model(self.model, self.context_params())
        assert ctx, "[llama.cpp] llama_init_from_model failed"
        try:
            self._run(self.lib.llama_encode, ctx, enc_ids)
            out = []
            for t in dec_ids:
                self._run(self.lib.llama_decode, ctx, [t])
                out.append(np.ctypeslib.as_array(self.lib.llama_get_logits_ith(ctx, -1), (self.n_vocab,)).copy())
            return np.stack(out).astype(np.float64)
        finally:
            self.lib.llama_free(ctx)

    def greedy(self, enc_ids: list, n: int) -> list:
        ctx = self.lib.llama_init_from_model(self.model, self.context_params())
        try:
            self._run(self.lib.llama_encode, ctx, enc_ids)
            tok, out = self.lib.llama_model_decoder_start_token(self.model), []
            for _ in range(n):
                self._run(self.lib.llama_decode, ctx, [tok])
                tok = int(np.argmax(np.ctypeslib.as_array(self.lib.llama_get_logits_ith(ctx, -1), (self.n_vocab,))))
                out.append(tok)
            return out
        finally:
            self.lib.llama_free(ctx)

    def tokenize(self, text: str) -> list:
        raw = text.encode()
        buf = (ctypes.c_int32 * (len(raw) + 8))()
        n = self.lib.llama_tokenize(self.vocab, raw, len(raw), buf, len(buf), False, True)
        assert n >= 0, f"[llama.cpp] llama_tokenize returned {n}"
        return list(buf[:n])


def eager(ckpt: Path, arch: str, kind: str | None):
    """transformers' model of the checkpoint, as llama.cpp runs a `kind` file (matrices through the file's type and
    back; ggml's GELU) or as it is (kind None)."""
    import torch
    from gguf import quants
    from transformers import AutoModelForSeq2SeqLM

    model = AutoModelForSeq2SeqLM.from_pretrained(ckpt, dtype=torch.float32).eval()
    if kind is not None:
        for name, p in model.named_parameters():
            if p.dim() < 2 or "relative_attention_bias" in name or kind == "f32":
                continue
            x = p.data.contiguous().numpy().astype(np.float32)
            t = kind_type(kind, x.shape[-1])
            p.data = torch.from_numpy(np.ascontiguousarray(quants.dequantize(ggml_quantize(x, t), t).reshape(x.shape)))
        for m in model.modules():  # T5's gated MLP's GELU: llama.cpp looks it up in ggml's f16 table
            act = getattr(m, "act", None)
            if isinstance(act, torch.nn.Module) and "gelu" in type(act).__name__.lower():
                m.act = ggml_gelu()
    return model


def eager_logits(model, dec_ids: list) -> np.ndarray:
    import torch

    with torch.no_grad():
        out = model(input_ids=torch.tensor([ENC_IDS]), decoder_input_ids=torch.tensor([dec_ids]))
    return out.logits[0].numpy().astype(np.float64)


@pytest.mark.parametrize("arch", list(ARCHS))
def test_structure(workdir, arch):
    from gguf import GGUFReader

    ckpt = checkpoint(workdir, arch)
    cfg = json.loads((ckpt / "config.json").read_text())
    r = GGUFReader(export(workdir, arch, "f32"))
    f = {k: v.contents() for k, v in r.fields.items() if not k.startswith("GGUF.")}
    assert f["general.architecture"] == "t5" and f["tokenizer.ggml.model"] == "t5"
    assert f["t5.block_count"] == cfg["num_layers"] and f["t5.decoder_block_count"] == cfg["num_decoder_layers"]
    assert f["t5.decoder_start_token_id"] == cfg["decoder_start_token_id"]
    assert f["tokenizer.ggml.add_eos_token"] is True and f["tokenizer.ggml.add_bos_token"] is False
    names = {t.name for t in r.tensors}
    assert {"enc.blk.0.attn_rel_b.weight", "dec.blk.0.attn_rel_b.weight", "dec.blk.1.cross_attn_o.weight",
            "enc.output_norm.weight"} <= names
    # T5's tied head takes its input scaled by d_model^-0.5: the file's output matrix carries the factor; MT5's is
    # the embedding as it is (transformers 5 ties it always), which llama.cpp uses when the file has no output
    assert ("output.weight" in names) == (arch == "t5@spm")
    assert ("enc.blk.0.ffn_gate.weight" in names) == (arch == "mt5@spm")


@pytest.mark.parametrize("kind", ["f32", "f16", "q8_0"])
@pytest.mark.parametrize("arch", list(ARCHS))
def test_llama_cpp_logits(workdir, arch, kind):
    ckpt = checkpoint(workdir, arch)
    dec = [json.loads((ckpt / "config.json").read_text())["decoder_start_token_id"], *DEC_IDS]
    llama = LlamaCpp(export(workdir, arch, kind))
    try:
        got = llama.decoder_logits(ENC_IDS, dec)
    finally:
        llama.close()
    ref, plain = eager_logits(eager(ckpt, arch, kind), dec), eager_logits(eager(ckpt, arch, None), dec)
    assert got.shape == ref.shape, (got.shape, ref.shape)
    err = np.abs(centered(got) - centered(ref)).max() / np.abs(ref).max()
    loss = np.abs(centered(got) - centered(plain)).max() / np.abs(plain).max()
    bound = LOGIT_BOUNDS[kind]  # f32: the issue's 1e-4 (mT5's GELU through ggml's f16 table on both sides)
    print(f"[gguf] {arch} {kind}: llama.cpp's decoder logits vs transformers on the file's weights {err:.3g} of max "
          f"|logit| (bound {bound}); vs the float checkpoint {loss:.3g}; {len(dec)} positions x {ref.shape[1]}")
    assert err <= bound


@pytest.mark.parametrize("arch", list(ARCHS))
def test_llama_cpp_greedy(workdir, arch):
    import torch

    ckpt = checkpoint(workdir, arch)
    llama = LlamaCpp(export(workdir, arch, "f32"))
    try:
        got = llama.greedy(ENC_IDS, 32)
    finally:
        llama.close()
    model = eager(ckpt, arch, "f32")
    with torch.no_grad():
        want = model.generate(torch.tensor([ENC_IDS]), max_new_tokens=32, min_new_tokens=32, do_sample=False,
                              num_beams=1)[0, 1:].tolist()
    assert got == want


@pytest.mark.parametrize("arch", list(ARCHS))
def test_llama_cpp_tokenizer_agrees(workdir, arch):
    from transformers import AutoTokenizer

    texts = strings()
    tok = AutoTokenizer.from_pretrained(checkpoint(workdir, arch))
    llama = LlamaCpp(export(workdir, arch, "f32"))
    try:
        got = [llama.tokenize(t) for t in texts]
    finally:
        llama.close()
    want = [tok(t, add_special_tokens=False)["input_ids"] for t in texts]
    bad = [(t, g, w) for t, g, w in zip(texts, got, want) if g != w]
    print(f"[gguf] {arch}: {len(texts) - len(bad)} of {len(texts)} strings tokenized alike")
    assert not bad, f"{len(bad)} of {len(texts)} strings tokenize differently, e.g. {bad[:3]}"


@pytest.mark.parametrize("arch", list(ARCHS))
def test_hfx_verify_reads_back(workdir, arch):
    out = export(workdir, arch, "q8_0").parent
    report = out / "verify.json"
    run_hfx("verify", out, "--reference", checkpoint(workdir, arch), "--json", report, "--no-manifest", check=False)
    checks = {(c["component"], c["check"]): c for c in json.loads(report.read_text())["checks"]}
    assert checks[("model.gguf", "read-back")]["status"] == "passed", checks[("model.gguf", "read-back")]
    for key in ["runtime numerics", "runtime greedy", "runtime tokenizer"]:
        assert checks[("model.gguf", key)]["status"] == "not_judged"


@pytest.mark.parametrize("mix", ["q4_k_m", "q5_k_m"])
@pytest.mark.parametrize("arch", list(ARCHS))
def test_k_mix_same_as_llama_quantize(workdir, arch, mix):
    """Q4_K_M / Q5_K_M of a t5 file (enc./dec. names, cross attention's attn_v-like tensors, the encoder's block
    count as llama.cpp's n_layer) equal llama.cpp's llama_model_quantize of hfx's f32 file, byte for byte."""
    from test_gguf import LLAMA_FTYPES, llama_quantize

    out = workdir / "gguf" / f"{arch}-{mix}"
    if not (out / "model.gguf").exists():
        run_hfx("export", checkpoint(workdir, arch), "--format", "gguf", "--quantize", mix, "-o", out)
    ref = llama_quantize(export(workdir, arch, "f32"), workdir / "gguf" / f"{arch}-llama-quantize-{mix}.gguf",
                         LLAMA_FTYPES[mix])
    assert (out / "model.gguf").read_bytes() == ref.read_bytes()
