#!/usr/bin/env python3
"""Convert a llama2.c checkpoint (karpathy/tinyllamas: stories260K.bin, stories15M.bin, ...) into a
Hugging Face Llama folder (config.json + model.safetensors, f32) that hfx and transformers load.

Why: the quantization agreement figures need a *trained* Llama; random weights give near-uniform
next-token distributions where any rounding flips the argmax. llama2.c's checkpoints are the trained
Llamas that can be had without network access (bench/quant_bench.sh documents where one comes from).

Usage: to_hf.py MODEL.bin OUT_DIR

Format (llama2.c run.c, "legacy version 0"): 7 int32 (dim, hidden_dim, n_layers, n_heads, n_kv_heads,
vocab_size, seq_len; a negative vocab_size means an unshared classifier), then f32 tensors in this order:
token embedding, attention norms, wq, wk, wv, wo, ffn norms, w1, w2, w3, final norm, two RoPE tables
(skipped), and the classifier when unshared. Linear weights are [out, in] as in torch.
llama2.c rotates adjacent pairs (Meta's layout); transformers rotates halves, so wq and wk rows are
permuted per head the way transformers' convert_llama_weights_to_hf does.
"""
import json
import os
import struct
import sys

import numpy as np


def permute(w, n_heads):
    out_dim, in_dim = w.shape
    return w.reshape(n_heads, out_dim // n_heads // 2, 2, in_dim).transpose(0, 2, 1, 3).reshape(out_dim, in_dim)


def read_checkpoint(path):
    raw = open(path, "rb").read()
    dim, hidden, layers, heads, kv_heads, vocab, seq_len = struct.unpack("7i", raw[:28])
    shared = vocab > 0
    vocab = abs(vocab)
    if dim <= 0 or dim % heads or heads % kv_heads or layers <= 0:
        sys.exit(f"[llama2c] expected a llama2.c legacy checkpoint header, got {dim, hidden, layers, heads, kv_heads}")
    data = np.frombuffer(raw, dtype="<f4", offset=28)
    pos = 0

    def take(*shape):
        nonlocal pos
        n = int(np.prod(shape))
        if pos + n > data.size:
            sys.exit(f"[llama2c] {path}: file ends at float {data.size}, expected at least {pos + n}")
        t = data[pos:pos + n].reshape(shape).copy()
        pos += n
        return t

    hd = dim // heads
    kv = kv_heads * hd
    w = {"embed": take(vocab, dim), "attn_norm": take(layers, dim), "wq": take(layers, dim, dim),
         "wk": take(layers, kv, dim), "wv": take(layers, kv, dim), "wo": take(layers, dim, dim),
         "ffn_norm": take(layers, dim), "w1": take(layers, hidden, dim), "w2": take(layers, dim, hidden),
         "w3": take(layers, hidden, dim), "norm": take(dim)}
    take(seq_len, hd // 2)
    take(seq_len, hd // 2)
    w["cls"] = w["embed"] if shared else take(vocab, dim)
    if pos != data.size:
        sys.exit(f"[llama2c] {path}: {data.size - pos} floats left after the classifier; not a legacy checkpoint")
    cfg = dict(dim=dim, hidden=hidden, layers=layers, heads=heads, kv_heads=kv_heads, vocab=vocab,
               seq_len=seq_len, shared=shared)
    return cfg, w


def hf_tensors(cfg, w):
    t = {"model.embed_tokens.weight": w["embed"], "model.norm.weight": w["norm"]}
    for i in range(cfg["layers"]):
        p = f"model.layers.{i}."
        t[p + "input_layernorm.weight"] = w["attn_norm"][i]
        t[p + "post_attention_layernorm.weight"] = w["ffn_norm"][i]
        t[p + "self_attn.q_proj.weight"] = permute(w["wq"][i], cfg["heads"])
        t[p + "self_attn.k_proj.weight"] = permute(w["wk"][i], cfg["kv_heads"])
        t[p + "self_attn.v_proj.weight"] = w["wv"][i]
        t[p + "self_attn.o_proj.weight"] = w["wo"][i]
        t[p + "mlp.gate_proj.weight"] = w["w1"][i]
        t[p + "mlp.down_proj.weight"] = w["w2"][i]
        t[p + "mlp.up_proj.weight"] = w["w3"][i]
    if not cfg["shared"]:
        t["lm_head.weight"] = w["cls"]
    return t


def write_safetensors(path, tensors):
    header, blobs, off = {"__metadata__": {"format": "pt"}}, [], 0
    for name in sorted(tensors):
        b = np.ascontiguousarray(tensors[name], dtype="<f4").tobytes()
        header[name] = {"dtype": "F32", "shape": list(tensors[name].shape), "data_offsets": [off, off + len(b)]}
        blobs.append(b)
        off += len(b)
    h = json.dumps(header, separators=(",", ":")).encode()
    h += b" " * (-len(h) % 8)
    with open(path, "wb") as f:
        f.write(struct.pack("<Q", len(h)) + h)
        for b in blobs:
            f.write(b)


def main():
    if len(sys.argv) != 3:
        sys.exit("usage: to_hf.py MODEL.bin OUT_DIR")
    cfg, w = read_checkpoint(sys.argv[1])
    os.makedirs(sys.argv[2], exist_ok=True)
    config = {
        "architectures": ["LlamaForCausalLM"], "model_type": "llama", "hidden_size": cfg["dim"],
        "intermediate_size": cfg["hidden"], "num_hidden_layers": cfg["layers"],
        "num_attention_heads": cfg["heads"], "num_key_value_heads": cfg["kv_heads"],
        "vocab_size": cfg["vocab"], "max_position_embeddings": cfg["seq_len"], "rms_norm_eps": 1e-5,
        "rope_theta": 10000.0, "hidden_act": "silu", "tie_word_embeddings": cfg["shared"],
        "bos_token_id": 1, "eos_token_id": 2, "torch_dtype": "float32",
    }
    with open(os.path.join(sys.argv[2], "config.json"), "w") as f:
        json.dump(config, f, indent=2)
    write_safetensors(os.path.join(sys.argv[2], "model.safetensors"), hf_tensors(cfg, w))
    n = sum(v.size for k, v in hf_tensors(cfg, w).items())
    print(f"{sys.argv[2]}: llama, {n} parameters, dim {cfg['dim']}, {cfg['layers']} layers, vocab {cfg['vocab']}")


if __name__ == "__main__":
    main()
