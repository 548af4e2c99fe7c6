"""Encoder-decoder support for test_seq2seq.py: checkpoints by transformers' own classes, transformers eager
as the reference (encoder once, then the decoder one call at a time on its EncoderDecoderCache), and the
loop a runtime is driven by (encoder once, decoder_model on the start prompt, then decoder_with_past fed the
previous call's own present.* leaves).

Cache leaves by hfx's names (docs/components.md, encoder-decoder): present.N.decoder.key / .value
(self-attention, the decoder length so far) and present.N.encoder.key / .value (cross-attention, the
encoder length); the past inputs are the same names under past_key_values.N.
"""
from __future__ import annotations

import dataclasses
from pathlib import Path

import numpy as np

from cases import Case
from loops import empty_past, past_name


@dataclasses.dataclass(frozen=True)
class Seq2SeqCase(Case):
    # Write lm_head.weight as its own tensor and tie_word_embeddings false in config.json: the layout of the
    # T5 v1.1 checkpoints on the Hub (transformers 5 loads them untied). transformers 5.23's T5Config turns a
    # tie_word_embeddings=False keyword into scale_decoder_outputs=False and ties anyway, so the untied layout
    # is only reached by untying the model before save_pretrained.
    untie_head: bool = False
    audio: bool = False  # whisper: input_features, a 4-token decoder prompt, no encoder attention mask


def make_checkpoint(case: Seq2SeqCase, folder: Path, seed: int = 0) -> Path:
    """cases.make_checkpoint's recipe (random init, every parameter perturbed by N(0, 0.02)), plus the
    final_logits_bias buffer of bart / marian by the same N(0, 0.02) (zeros at init: a dropped bias would not
    show), and the untied head where the case asks for it. Written before the `export` fixture runs, which
    then finds it where `checkpoint` looks."""
    import cases

    return cases.make_checkpoint(case, folder, seed, make=make_model)


def make_model(case: Seq2SeqCase, seed: int = 0):
    """The model object make_checkpoint saves (tests/python exports it live)."""
    import torch
    import transformers

    cfg = transformers.AutoConfig.for_model(case.model_type, **case.config)
    torch.manual_seed(seed)
    model = getattr(transformers, case.auto).from_config(cfg, dtype=torch.float32)
    if case.untie_head:
        model.lm_head.weight = torch.nn.Parameter(model.get_input_embeddings().weight.detach().clone())
        model.config.tie_word_embeddings = False
    with torch.no_grad():
        g = torch.Generator().manual_seed(seed + 1)
        for p in model.parameters():
            p.add_(torch.randn(p.shape, generator=g) * 0.02)
        for name, b in model.named_buffers():
            if name.endswith("final_logits_bias"):
                b.add_(torch.randn(b.shape, generator=g) * 0.02)
    return model


def decoder_prompt(case: Seq2SeqCase) -> list:
    """The decoder's first input: decoder_start_token_id; whisper's 4-token prompt (hfx records its first
    decoder call on <|startoftranscript|> + 3 forced ids, so decoder_model's sequence axis is fixed at 4)."""
    start = case.config["decoder_start_token_id"]
    return [start, start + 1, start + 2, start + 3] if case.audio else [start]


def leaf_names(n_layers: int) -> list:
    """The decoder's cache outputs in the order hfx declares them (ONNX outputs after logits; the .pte's
    outputs 1..)."""
    return [f"present.{i}.{kind}.{kv}" for i in range(n_layers) for kind in ("decoder", "encoder")
            for kv in ("key", "value")]


def cache_leaves(cache) -> dict:
    """A transformers EncoderDecoderCache as hfx names its leaves."""
    leaves = {}
    for kind, c in (("decoder", cache.self_attention_cache), ("encoder", cache.cross_attention_cache)):
        for i, layer in enumerate(c.layers):
            leaves[f"present.{i}.{kind}.key"] = layer.keys.detach().numpy().copy()
            leaves[f"present.{i}.{kind}.value"] = layer.values.detach().numpy().copy()
    return leaves


class Seq2SeqReference:
    """transformers eager: encoder once, then the decoder by cached calls (no generate())."""

    def __init__(self, case: Seq2SeqCase, folder: Path):
        import torch
        import transformers

        torch.manual_seed(0)
        self.case = case
        self.model = getattr(transformers, case.auto).from_pretrained(
            folder, dtype=torch.float32, attn_implementation="eager").eval()

    def encode(self, x: np.ndarray, mask: np.ndarray | None = None) -> np.ndarray:
        import torch

        kw = ({"input_features": torch.from_numpy(x)} if self.case.audio else
              {"input_ids": torch.from_numpy(x), "attention_mask": torch.from_numpy(mask)})
        with torch.no_grad():
            return self.model.get_encoder()(**kw).last_hidden_state.numpy().copy()

    def step(self, ids: np.ndarray, enc: np.ndarray, mask: np.ndarray | None, cache=None):
        """One decoder call on the encoder states `enc`; returns (logits, the cache object, its leaves)."""
        import torch
        from transformers.modeling_outputs import BaseModelOutput

        kw = {"encoder_outputs": BaseModelOutput(last_hidden_state=torch.from_numpy(enc)),
              "decoder_input_ids": torch.from_numpy(ids), "past_key_values": cache, "use_cache": True}
        if not self.case.audio:
            kw["attention_mask"] = torch.from_numpy(mask)
        with torch.no_grad():
            out = self.model(**kw)
        return out.logits.numpy().copy(), out.past_key_values, cache_leaves(out.past_key_values)

    def greedy(self, x: np.ndarray, mask: np.ndarray | None, prompt: list, steps: int):
        """Greedy tokens (batch 1) and the logits each was picked from."""
        enc = self.encode(x, mask)
        logits, cache, _ = self.step(np.array([prompt], np.int64), enc, mask)
        tokens, seen = [], []
        for _ in range(steps):
            last = logits[0, -1]
            seen.append(last)
            tokens.append(int(last.argmax()))
            logits, cache, _ = self.step(np.array([[tokens[-1]]], np.int64), enc, mask, cache)
        return tokens, seen


def runtime_greedy(encoder, first, with_past, enc_feeds: dict, mask, prompt: list, steps: int):
    """A functional runtime (ONNX graphs, .pt2 programs; `first` and `with_past` may be one merged graph)
    carrying its own encoder states and caches. Returns (tokens, the logits each was picked from)."""
    enc = encoder(enc_feeds)["last_hidden_state"]
    fixed = {"encoder_hidden_states": enc}
    if mask is not None:
        fixed["encoder_attention_mask"] = mask
    out = first({"input_ids": np.array([prompt], np.int64), **fixed, **empty_past(first, 1)})
    got, seen = [], []
    for _ in range(steps):
        last = out["logits"][0, -1]
        seen.append(last)
        got.append(int(last.argmax()))
        feeds = {"input_ids": np.array([[got[-1]]], np.int64), **fixed}
        feeds.update({past_name(k): v for k, v in out.items() if k.startswith("present.")})
        out = with_past(feeds)
    return got, seen
