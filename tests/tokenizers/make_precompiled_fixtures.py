"""Regenerates tests/data/tokenizers/{xlmr_precompiled_unigram,custom_charsmap_unigram}.json: Unigram tokenizers
whose normalizer is sentencepiece's compiled character map (`Precompiled`), made the way real XLM-RoBERTa /
CamemBERT / T5 tokenizer.json files are: sentencepiece trains a `.model` on the parity corpus, and transformers'
own converter (XLMRobertaTokenizer.from_pretrained on a folder holding only sentencepiece.bpe.model) writes
tokenizer.json.

- xlmr_precompiled_unigram.json: sentencepiece's built-in `nmt_nfkc` map (the one XLM-R ships: NFKC plus
  whitespace and control-character rules, ~240 KB).
- custom_charsmap_unigram.json: a small rule table (RULES below) with multi-code-point keys, a key that is a
  prefix of another, expansions and deletions, so that HF's per-grapheme, shortest-prefix rule is exercised.

Usage: .venv/bin/python tests/tokenizers/make_precompiled_fixtures.py   (sentencepiece and transformers pinned
in deps/python/requirements.lock; training is deterministic: same input, same bytes).
"""
from __future__ import annotations

import json
import shutil
import tempfile
from pathlib import Path

import sentencepiece as spm
from transformers import XLMRobertaTokenizer

ROOT = Path(__file__).resolve().parents[2]
DATA = ROOT / "tests" / "data" / "tokenizers"

# source code points -> target code points (hex), sentencepiece's normalization_rule_tsv format.
RULES = [
    ("41", "61"),             # A -> a
    ("6F", "30"),             # o -> 0: a key that prefixes the next one
    ("6F 308", "F6"),         # o + COMBINING DIAERESIS -> ö (HF's shortest-prefix rule gives "0" for the cluster)
    ("65 301", "E9"),         # e + COMBINING ACUTE -> é
    ("FB01", "66 69"),        # ﬁ -> fi (expansion)
    ("2460", "28 31 29"),     # ① -> (1)
    ("200B", "20"),           # ZERO WIDTH SPACE -> space
    ("FF21", "41"),           # Ａ -> A (not re-normalized: one pass)
    ("3131", "1100"),         # compatibility jamo -> choseong
    ("1F44D 1F3FD", "1F44D"), # 👍🏽 -> 👍 (a two-code-point emoji cluster of 8 bytes: looked up per code point)
    ("E9", "65 301"),         # é -> e + combining (decomposition)
    ("9", "20"),              # TAB -> space
]


def corpus() -> list[str]:
    lines = [json.loads(l) for l in (DATA / "corpus.txt").read_text(encoding="utf-8").split("\n") if l]
    return [l for l in lines if l.strip()]


def train(work: Path, **rule) -> Path:
    model = work / "spm" / "sentencepiece.bpe.model"
    model.parent.mkdir(parents=True, exist_ok=True)
    with open(model, "wb") as f:
        spm.SentencePieceTrainer.train(sentence_iterator=iter(corpus() * 3), model_writer=f, vocab_size=400,
                                       model_type="unigram", character_coverage=1.0, minloglevel=2,
                                       hard_vocab_limit=False, num_threads=1, **rule)
    return model.parent


def convert(folder: Path, out: Path) -> None:
    tok = XLMRobertaTokenizer.from_pretrained(str(folder))
    saved = folder.parent / "saved"
    tok.save_pretrained(str(saved))
    data = json.loads((saved / "tokenizer.json").read_text(encoding="utf-8"))
    assert "Precompiled" in json.dumps(data["normalizer"]), f"expected a Precompiled normalizer, got {data['normalizer']}"
    out.write_text(json.dumps(data, ensure_ascii=False, indent=None) + "\n", encoding="utf-8")
    print(f"wrote {out.relative_to(ROOT)} ({out.stat().st_size} bytes, vocab {len(data['model']['vocab'])})")


def main() -> None:
    with tempfile.TemporaryDirectory() as d:
        work = Path(d)
        convert(train(work / "nfkc", normalization_rule_name="nmt_nfkc"), DATA / "xlmr_precompiled_unigram.json")
        tsv = work / "rules.tsv"
        tsv.write_text("".join(f"{a}\t{b}\n" for a, b in RULES), encoding="utf-8")
        convert(train(work / "custom", normalization_rule_tsv=str(tsv)), DATA / "custom_charsmap_unigram.json")
        shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    main()
