#!/usr/bin/env python3
"""Writes the float checkpoint whose weights are what an int4 ExecuTorch/XNNPACK export computes with.

  dequantize.py CKPT OUT [--group-size 32] [--bits 4|8]

hfx exports `--quantize int4 --symmetric --backend xnnpack` as ExecuTorch's 8da4w pattern: every linear weight
W [N, K] becomes 4-bit codes in blocks of G input features with one bf16 scale per block. This script
re-derives those weights on its own (numpy, from the rule in docs/quantization.md, not from hfx's code):

    scale = bf16(max|W_block| / 7)          (round to nearest even)
    q     = clamp(round_half_even(W / scale), -8, 7)
    W'    = q * scale                       (q = 0 where the block is all zeros)

(`--bits 8`, the 8da8w export: scale = max|W_row| / 127 in f32, q = clamp(round(W / scale), -128, 127)) and
writes OUT, a copy of CKPT with W' in place of W, so the transformers oracle run on OUT gives the logits an
ideal 8da4w program would give with float32 activations. Which weights: the ones hfx quantizes — 2-d float
`*.weight` tensors whose name has none of embed, norm, wpe, wte, experts., shared., vision_tower.,
vision_model., visual., multi_modal_projector., connector. and whose input features are a multiple of G; gpt2's
Conv1D weights are stored [in, out] and quantized along `in`. A tied LM head gets its own quantized copy of the
embedding table (config.json's tie_word_embeddings becomes false; the embedding gather stays float).

`--from-gptq`: CKPT is a GPTQ checkpoint (`hfx create-tiny ARCH --quantize gptq`: AutoGPTQ's QuantLinear
layout, 4 bits, sym true), which hfx exports to ExecuTorch with its codes as they are and its float16 block
scales rounded to bf16 (docs/quantization.md). OUT gets, per layer P (K inputs, N outputs, group g), by
AutoGPTQ's published formula (written out here, not hfx's code):

    q[k, n]    = (qweight[k // 8, n] >> (4 * (k % 8))) & 15
    zero[i, n] = ((qzeros[i, n // 8] >> (4 * (n % 8))) & 15) + 1        (checkpoint_format gptq; v2: no + 1)
    W[n, k]    = bf16(scales[g_idx[k], n]) * (q[k, n] - zero[g_idx[k], n])

and no quantization_config, so the transformers oracle runs the weights the program holds.

Needs numpy (Debian's python3-numpy, which the hf-oracle's python has).
"""
import argparse
import json
import os
import re
import shutil
import struct
import sys

import numpy as np

SKIP = ("embed", "norm", "wpe", "wte", "experts.", "shared.", "vision_tower.", "vision_model.", "visual.",
        "multi_modal_projector.", "connector.")
TRANSPOSED = {"gpt2": r"transformer\.h\.\d+\.(attn\.c_attn|attn\.c_proj|mlp\.c_fc|mlp\.c_proj)\.weight"}
DTYPES = {"F32": np.float32, "F16": np.float16, "BF16": np.uint16}


def read_safetensors(path):
    with open(path, "rb") as f:
        n = struct.unpack("<Q", f.read(8))[0]
        header = json.loads(f.read(n))
        data = f.read()
    meta = header.pop("__metadata__", None)
    tensors = {}
    for name, info in header.items():
        b, e = info["data_offsets"]
        if info["dtype"] not in DTYPES:
            tensors[name] = (info["dtype"], info["shape"], data[b:e])
            continue
        a = np.frombuffer(data[b:e], dtype=DTYPES[info["dtype"]]).reshape(info["shape"])
        if info["dtype"] == "BF16":
            a = (a.astype(np.uint32) << 16).view(np.float32)
        tensors[name] = a.astype(np.float32)
    return tensors, meta


def write_safetensors(path, tensors, meta):
    header, blobs, off = {}, [], 0
    for name in sorted(tensors):
        t = tensors[name]
        if isinstance(t, tuple):
            dtype, shape, raw = t
        else:
            dtype, shape, raw = "F32", list(t.shape), np.ascontiguousarray(t, dtype="<f4").tobytes()
        header[name] = {"dtype": dtype, "shape": shape, "data_offsets": [off, off + len(raw)]}
        blobs.append(raw)
        off += len(raw)
    if meta:
        header["__metadata__"] = meta
    h = json.dumps(header, separators=(",", ":")).encode()
    h += b" " * ((8 - len(h) % 8) % 8)
    with open(path, "wb") as f:
        f.write(struct.pack("<Q", len(h)) + h)
        for b in blobs:
            f.write(b)


def to_bf16(x):
    """float32 -> nearest bfloat16 (ties to even), returned as float32."""
    u = np.ascontiguousarray(x, dtype=np.float32).view(np.uint32).astype(np.uint64)
    u = (u + 0x7FFF + ((u >> 16) & 1)) >> 16 << 16
    return u.astype(np.uint32).view(np.float32)


def dequantized(w, g, bits=4, f32_scales=False):
    """W [N, K] -> the symmetric weight: 4-bit with bf16 scales per block of g along K (f32 ones with
    f32_scales: `hfx export --format dynamo --quantize int4 --symmetric`), or 8-bit with one f32 scale per
    row."""
    n, k = w.shape
    if bits == 8:
        b = w.reshape(n, 1, k)
        scale = (np.abs(b).max(axis=2) / np.float32(127.0))[:, :, None].astype(np.float32)
        lo, hi = -128, 127
    else:
        b = w.reshape(n, k // g, g)
        scale = np.abs(b).max(axis=2) / np.float32(7.0)
        scale = (scale.astype(np.float32) if f32_scales else to_bf16(scale))[:, :, None]
        lo, hi = -8, 7
    with np.errstate(divide="ignore", invalid="ignore"):
        q = np.where(scale > 0, np.clip(np.rint(b / scale), lo, hi), 0).astype(np.float32)
    return (q * scale).reshape(n, k).astype(np.float32)


def write_checkpoint(src, out, cfg, tensors, meta):
    os.makedirs(out, exist_ok=True)
    for f in os.listdir(src):
        if f not in ("model.safetensors", "config.json") and os.path.isfile(os.path.join(src, f)):
            shutil.copy(os.path.join(src, f), out)
    json.dump(cfg, open(os.path.join(out, "config.json"), "w"), indent=2)
    write_safetensors(os.path.join(out, "model.safetensors"), tensors, meta)


def from_gptq(tensors, qc):
    """Replaces each GPTQ layer's qweight / qzeros / scales / g_idx by its float weight (bf16 scales)."""
    bits = qc["bits"]
    per = 32 // bits
    v1 = qc.get("checkpoint_format", "gptq") != "gptq_v2"
    prefixes = [n[: -len(".qweight")] for n in tensors if n.endswith(".qweight")]
    for p in prefixes:
        def words(name):
            dtype, shape, raw = tensors.pop(name)
            assert dtype == "I32", f"{name}: expected I32, got {dtype}"
            return np.frombuffer(raw, dtype="<i4").reshape(shape).astype(np.uint32)
        qw, qz = words(p + ".qweight"), words(p + ".qzeros")
        scales = to_bf16(tensors.pop(p + ".scales"))  # [groups, N], F16 read as float32
        K, N = qw.shape[0] * per, qw.shape[1]
        q = np.zeros((K, N), dtype=np.int64)
        for i in range(per):
            q[i::per, :] = (qw >> (bits * i)) & ((1 << bits) - 1)
        z = np.zeros((qz.shape[0], N), dtype=np.int64)
        for i in range(per):
            z[:, i::per] = (qz >> (bits * i)) & ((1 << bits) - 1)
        z += 1 if v1 else 0
        g_idx = tensors.pop(p + ".g_idx", None)
        g = qc["group_size"] if qc["group_size"] > 0 else K
        gi = np.arange(K) // g
        if isinstance(g_idx, tuple):
            gi = np.frombuffer(g_idx[2], dtype="<i4").astype(np.int64)
        W = scales[gi, :] * (q - z[gi, :]).astype(np.float32)  # [K, N]
        tensors[p + ".weight"] = np.ascontiguousarray(W.T.astype(np.float32))
    return len(prefixes)


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("ckpt")
    ap.add_argument("out")
    ap.add_argument("--group-size", type=int, default=32)
    ap.add_argument("--bits", type=int, choices=(4, 8), default=4)
    ap.add_argument("--from-gptq", action="store_true", help="CKPT is a GPTQ checkpoint (see above)")
    ap.add_argument("--f32-scales", action="store_true", help="4-bit: f32 block scales (the .pt2 export's)")
    a = ap.parse_args()
    g = a.group_size
    cfg = json.load(open(os.path.join(a.ckpt, "config.json")))
    tensors, meta = read_safetensors(os.path.join(a.ckpt, "model.safetensors"))
    if a.from_gptq:
        count = from_gptq(tensors, cfg.pop("quantization_config"))
        write_checkpoint(a.ckpt, a.out, cfg, tensors, meta)
        print(f"dequantize.py: {count} GPTQ layers with bf16 scales -> {a.out}", file=sys.stderr)
        return 0 if count else 1
    transposed = re.compile(TRANSPOSED.get(cfg.get("model_type", ""), r"$^"))
    count = 0
    for name in list(tensors):
        t = tensors[name]
        if isinstance(t, tuple) or t.ndim != 2 or not name.endswith(".weight") or any(s in name for s in SKIP):
            continue
        tr = transposed.fullmatch(name) is not None
        w = t.T if tr else t
        if w.shape[1] % g:
            continue
        dq = dequantized(np.ascontiguousarray(w), g, a.bits, a.f32_scales)
        tensors[name] = np.ascontiguousarray(dq.T if tr else dq)
        count += 1
    embed = "model.embed_tokens.weight"
    tied = cfg.get("tie_word_embeddings", True)
    if tied and embed in tensors and "lm_head.weight" not in tensors and tensors[embed].shape[1] % g == 0:
        tensors["lm_head.weight"] = dequantized(tensors[embed], g, a.bits, a.f32_scales)
        cfg["tie_word_embeddings"] = False
        count += 1
    write_checkpoint(a.ckpt, a.out, cfg, tensors, meta)
    how = f"int4 (groups of {g}, bf16 scales)" if a.bits == 4 else "int8 (one f32 scale per row)"
    print(f"dequantize.py: {count} weights as {how} -> {a.out}", file=sys.stderr)
    return 0 if count else 1


if __name__ == "__main__":
    sys.exit(main())
