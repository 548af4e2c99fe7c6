#!/usr/bin/python3
"""Tiny random Hugging Face checkpoints (config.json + model.safetensors) made with the REAL transformers classes,
for testing make_goldens.py before `hfx create-tiny` can write these architectures. Not for committing: the goldens
under tests/data/goldens/ must come from hfx-made checkpoints.

Run with the project's venv:
  .venv/bin/python tools/hf_goldens/make_tiny_hf.py OUT_DIR [name ...]

Names: NAME (the base model) and NAME-mlm / NAME-seqcls / NAME-tokcls for bert, roberta, xlm-roberta, distilbert,
modernbert; t5 (original: relu FFN, tied embeddings), t5-gated (v1.1 style: gated-gelu, untied lm_head), bart,
marian. Sizes: hidden 32-64, 2 layers, 4 heads, vocab 256-1000, max positions 128.
Weights: numpy default_rng(crc32(name)) at about 1/sqrt(fan_in) (norm weights 1 +- 0.1, biases 0.1*N(0,1)), so
outputs are not near-uniform; tied tensors are stored once (like save_pretrained). Marian's sinusoidal position
tables are kept as transformers builds them (real checkpoints store them the same way)."""
import json
import os
import sys
import zlib

import numpy as np
import torch

sys.dont_write_bytecode = True  # no __pycache__ in the source tree
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import hfg_common  # noqa: F401,E402  (offline, quiet)
import transformers
from safetensors.torch import save_file

ENC_HEADS = {"": "Model", "-mlm": "ForMaskedLM", "-seqcls": "ForSequenceClassification",
             "-tokcls": "ForTokenClassification"}


def specs():
    T = transformers
    s = {}
    enc = {
        "bert": ("Bert", lambda: T.BertConfig(vocab_size=320, hidden_size=64, num_hidden_layers=2, num_attention_heads=4,
                                             intermediate_size=128, max_position_embeddings=128, type_vocab_size=2,
                                             pad_token_id=0)),
        "roberta": ("Roberta", lambda: T.RobertaConfig(vocab_size=400, hidden_size=48, num_hidden_layers=2,
                                                      num_attention_heads=4, intermediate_size=96,
                                                      max_position_embeddings=130, type_vocab_size=1,
                                                      pad_token_id=1, bos_token_id=0, eos_token_id=2)),
        "xlm-roberta": ("XLMRoberta", lambda: T.XLMRobertaConfig(vocab_size=500, hidden_size=32, num_hidden_layers=2,
                                                                num_attention_heads=4, intermediate_size=64,
                                                                max_position_embeddings=130, type_vocab_size=1,
                                                                pad_token_id=1, bos_token_id=0, eos_token_id=2)),
        "distilbert": ("DistilBert", lambda: T.DistilBertConfig(vocab_size=300, dim=64, n_layers=2, n_heads=4,
                                                               hidden_dim=128, max_position_embeddings=128,
                                                               pad_token_id=0)),
    }
    if hasattr(T, "ModernBertConfig"):  # transformers >= 4.48 (the 4.51 tree here)
        # 2 layers with global_attn_every_n_layers=2: layer 0 global (rope theta 160000), layer 1 local with a
        # window of 8 (+-4 tokens, rope theta 10000), so prompts longer than 5 exercise the sliding-window mask
        enc["modernbert"] = ("ModernBert", lambda: T.ModernBertConfig(
            vocab_size=640, hidden_size=64, intermediate_size=96, num_hidden_layers=2, num_attention_heads=4,
            max_position_embeddings=128, global_attn_every_n_layers=2, local_attention=8, pad_token_id=0,
            bos_token_id=1, eos_token_id=2, cls_token_id=1, sep_token_id=2, reference_compile=False))
    for name, (prefix, mk) in enc.items():
        for suffix, head in ENC_HEADS.items():
            cfg = mk()
            if suffix == "-seqcls":
                cfg.num_labels = 3
                if name == "modernbert":
                    cfg.classifier_pooling = "mean"  # exercises the attention mask in the pooling
            if suffix == "-tokcls":
                cfg.num_labels = 5
            s[name + suffix] = (prefix + head, cfg)
    s["t5"] = ("T5ForConditionalGeneration", T.T5Config(
        vocab_size=384, d_model=64, d_kv=16, d_ff=128, num_layers=2, num_decoder_layers=2, num_heads=4,
        feed_forward_proj="relu", tie_word_embeddings=True, decoder_start_token_id=0, pad_token_id=0, eos_token_id=1,
        relative_attention_num_buckets=32, relative_attention_max_distance=128))
    s["t5-gated"] = ("T5ForConditionalGeneration", T.T5Config(
        vocab_size=384, d_model=64, d_kv=16, d_ff=96, num_layers=2, num_decoder_layers=2, num_heads=4,
        feed_forward_proj="gated-gelu", tie_word_embeddings=False, decoder_start_token_id=0, pad_token_id=0,
        eos_token_id=1, relative_attention_num_buckets=32, relative_attention_max_distance=128))
    s["bart"] = ("BartForConditionalGeneration", T.BartConfig(
        vocab_size=512, d_model=64, encoder_layers=2, decoder_layers=2, encoder_attention_heads=4,
        decoder_attention_heads=4, encoder_ffn_dim=128, decoder_ffn_dim=128, max_position_embeddings=128,
        bos_token_id=0, pad_token_id=1, eos_token_id=2, decoder_start_token_id=2, forced_eos_token_id=2,
        forced_bos_token_id=0))  # forced_bos_token_id=0 as in facebook/bart-large(-cnn)
    s["marian"] = ("MarianMTModel", T.MarianConfig(
        vocab_size=300, d_model=64, encoder_layers=2, decoder_layers=2, encoder_attention_heads=4,
        decoder_attention_heads=4, encoder_ffn_dim=128, decoder_ffn_dim=128, max_position_embeddings=128,
        pad_token_id=299, decoder_start_token_id=299, eos_token_id=0, forced_eos_token_id=0,
        bad_words_ids=[[299]], scale_embedding=True,  # as in Helsinki-NLP/opus-mt-* config.json
        share_encoder_decoder_embeddings=True))
    return s


def randomize(model, seed, keep=()):
    rng = np.random.default_rng(seed)
    seen, out = {}, {}
    for name, t in model.state_dict().items():
        if t.data_ptr() in seen:  # tied to an earlier tensor: written once, like save_pretrained
            continue
        seen[t.data_ptr()] = name
        if not t.is_floating_point() or any(k in name for k in keep):
            out[name] = t.detach().clone().contiguous()
            continue
        shape = tuple(t.shape)
        if len(shape) >= 2:
            fan = shape[-1] if ("embed" in name or "shared" in name or "embeddings" in name) else int(np.prod(shape[1:]))
            a = rng.standard_normal(shape) / np.sqrt(fan)
        elif name.endswith("weight"):
            a = 1.0 + 0.1 * rng.standard_normal(shape)
        else:
            a = 0.1 * rng.standard_normal(shape)
        out[name] = torch.from_numpy(a.astype(np.float32))
    return out


def main():
    out_root = sys.argv[1] if len(sys.argv) > 1 else "/tmp/hf_tiny"
    only = set(sys.argv[2:])
    for name, (arch, cfg) in specs().items():
        if only and name not in only:
            continue
        d = os.path.join(out_root, name)
        os.makedirs(d, exist_ok=True)
        cfg.architectures = [arch]
        cfg.torch_dtype = "float32"
        torch.manual_seed(0)
        model = getattr(transformers, arch)(cfg)
        keep = ("embed_positions",) if cfg.model_type == "marian" else ()
        sd = randomize(model, zlib.crc32(name.encode()), keep)
        save_file(sd, os.path.join(d, "model.safetensors"), metadata={"format": "pt"})
        cfg.to_json_file(os.path.join(d, "config.json"))
        with open(os.path.join(d, "config.json")) as f:  # 4.51 adds a runtime-only flag when a model is built
            j = json.load(f)
        j.pop("_attn_implementation_autoset", None)
        with open(os.path.join(d, "config.json"), "w") as f:
            json.dump(j, f, indent=2, sort_keys=True)
            f.write("\n")
        print(name, arch, len(sd), "tensors", sum(v.numel() for v in sd.values()), "params")


if __name__ == "__main__":
    main()
