"""Vision-language support for test_vision.py: checkpoints, transformers' reference, and the three runtimes
driven through one interface.

The reference is transformers 5.x eager (attn_implementation="eager") on the checkpoint folder. What the
decoder is judged on comes from transformers itself: a forward pre-hook on the text model records the
inputs_embeds (the image features already merged over the image tokens by transformers' own
masked_scatter) and the position_ids (qwen2_vl: get_rope_index's M-RoPE positions) it runs on, so hfx's
decoder program is fed exactly what transformers' text model was fed.
"""
from __future__ import annotations

import json
import re
from pathlib import Path

import numpy as np

from loops import past_name

STEPS = 32


# --- checkpoints -----------------------------------------------------------------------------------------

def hub_layout(folder: Path) -> None:
    """Rewrites transformers 5's saved vision tower keys (`vision_tower.embeddings...`: transformers 5 drops
    CLIPVisionModel / SiglipVisionModel's `vision_model.` prefix) to the layout the Hub's llava / gemma3
    checkpoints carry (`vision_tower.vision_model.embeddings...`), which transformers 5 loads as well
    (its PrefixChange conversion)."""
    from safetensors.torch import load_file, save_file

    path = folder / "model.safetensors"
    sd = load_file(path)
    out = {}
    for k, v in sd.items():
        if k.startswith("vision_tower.") and not k.startswith("vision_tower.vision_model."):
            k = "vision_tower.vision_model." + k[len("vision_tower."):]
        out[k] = v
    save_file(out, path, metadata={"format": "pt"})


def make_vlm_checkpoint(case, folder: Path, layout: str) -> Path:
    """cases.make_checkpoint (transformers' own config and model classes, every parameter perturbed), then,
    for layout "hub", the vision tower keys as the Hub's checkpoints name them."""
    import cases as cases_mod

    if (folder / "model.safetensors").exists():
        return folder
    tmp = folder.with_name(folder.name + ".build")
    if tmp.exists():
        import shutil
        shutil.rmtree(tmp)
    cases_mod.make_checkpoint(case, tmp)
    if layout == "hub":
        hub_layout(tmp)
    tmp.rename(folder)
    return folder


# --- inputs ----------------------------------------------------------------------------------------------

def rng_pixels(shape, seed):
    return np.random.default_rng(seed).standard_normal(shape).astype(np.float32)


class Inputs:
    """One prompt (batch 1) with one image, and a two-image batch for the vision encoder alone."""

    def __init__(self, case, cfg: dict):
        self.mt = case.model_type
        self.cfg = cfg
        v = cfg["vision_config"]
        if self.mt == "qwen2_vl":
            self.image_token = cfg["image_token_id"]
            p, t, m = v["patch_size"], v["temporal_patch_size"], v["spatial_merge_size"]
            self.width = 3 * t * p * p
            self.grids = [(1, 4, 6), (1, 6, 4)]
            n = (4 * 6) // (m * m)
            self.prompt = [11, 25, cfg["vision_start_token_id"]] + [self.image_token] * n + \
                [cfg["vision_end_token_id"], 3, 97, 140]
        elif self.mt == "gemma3":
            self.image_token = cfg["image_token_index"]
            n = cfg["mm_tokens_per_image"]
            self.prompt = [2, 11, cfg["boi_token_index"]] + [self.image_token] * n + \
                [cfg["eoi_token_index"], 25, 3, 97]
        elif self.mt in ("idefics3", "smolvlm"):
            self.image_token = cfg["image_token_id"]
            n = (v["image_size"] // v["patch_size"]) ** 2 // cfg["scale_factor"] ** 2
            self.prompt = [1, 11, 25] + [self.image_token] * n + [3, 97, 140]
        else:  # llava
            self.image_token = cfg["image_token_index"]
            n = (v["image_size"] // v["patch_size"]) ** 2 + (cfg["vision_feature_select_strategy"] == "full")
            self.prompt = [1, 11, 25] + [self.image_token] * n + [3, 97, 140, 7]

    def vision_feeds(self, images: int, seed: int = 3) -> dict:
        """The vision encoder's inputs as hfx's programs name them: `images` images (one per prompt row;
        idefics3: the images of one row; qwen2_vl: the flattened patches of `images` grids)."""
        v = self.cfg["vision_config"]
        if self.mt == "qwen2_vl":
            grids = self.grids[:images]
            patches = sum(t * h * w for t, h, w in grids)
            return {"pixel_values": rng_pixels((patches, self.width), seed),
                    "grid_thw": np.array(grids, np.int64)}
        s = v["image_size"]
        if self.mt in ("idefics3", "smolvlm"):
            return {"pixel_values": rng_pixels((1, images, 3, s, s), seed)}
        return {"pixel_values": rng_pixels((images, 3, s, s), seed)}

    def ids(self) -> np.ndarray:
        return np.array([self.prompt], np.int64)

    def padded_pair(self):
        """Two rows, one image each: the prompt, and the prompt less its last three text tokens, left-padded
        with 0: (ids, attention_mask)."""
        rows = [self.prompt, self.prompt[:-3]]
        ids = np.zeros((2, len(self.prompt)), np.int64)
        mask = np.zeros_like(ids)
        for i, r in enumerate(rows):
            ids[i, ids.shape[1] - len(r):] = r
            mask[i, ids.shape[1] - len(r):] = 1
        return ids, mask

    def token_types(self, ids: np.ndarray) -> np.ndarray:
        return (ids == self.image_token).astype(np.int64)


# --- transformers' reference -----------------------------------------------------------------------------

def cache_leaves(cache) -> dict:
    leaves = {}
    for i, layer in enumerate(getattr(cache, "layers", None) or []):
        k, v = getattr(layer, "keys", None), getattr(layer, "values", None)
        if k is not None and hasattr(k, "numpy") and k.numel():
            leaves[f"present.{i}.key"] = k.detach().numpy().copy()
            leaves[f"present.{i}.value"] = v.detach().numpy().copy()
    return leaves


class VlmReference:
    def __init__(self, case, folder: Path):
        import torch
        import transformers

        torch.manual_seed(0)
        cls = getattr(transformers, case.auto)
        self.model, info = cls.from_pretrained(folder, dtype=torch.float32, attn_implementation="eager",
                                               output_loading_info=True)
        self.model.eval()
        bad = {k: v for k, v in info.items() if v and k in ("missing_keys", "unexpected_keys", "mismatched_keys")}
        assert not bad, f"[interop] expected transformers to load every weight of {folder}, got {bad}"
        self.case = case
        self.cfg = json.loads((folder / "config.json").read_text())
        self.inputs = Inputs(case, self.cfg)
        inner = self.model.model
        self.text_model = getattr(inner, "language_model", None) or getattr(inner, "text_model")
        self.seen: dict = {}
        self.text_model.register_forward_pre_hook(self._hook, with_kwargs=True)

    def _hook(self, module, args, kwargs):
        e, p = kwargs.get("inputs_embeds"), kwargs.get("position_ids")
        self.seen = {"inputs_embeds": e.detach().numpy().copy() if e is not None else None,
                     "position_ids": p.detach().numpy().copy() if p is not None else None}

    def image_kwargs(self, feeds: dict) -> dict:
        import torch

        kw = {"pixel_values": torch.from_numpy(feeds["pixel_values"])}
        if "grid_thw" in feeds:
            kw["image_grid_thw"] = torch.from_numpy(feeds["grid_thw"])
        return kw

    def image_features(self, feeds: dict) -> np.ndarray:
        """get_image_features' pooler_output (after the projector / connector / merger), its rows in the
        order they are written over the image tokens: [rows, text hidden]."""
        import torch

        with torch.no_grad():
            out = self.model.model.get_image_features(**self.image_kwargs(feeds), return_dict=True)
        f = out.pooler_output
        if isinstance(f, (list, tuple)):
            f = torch.cat([x.reshape(-1, x.shape[-1]) for x in f], 0)
        return f.reshape(-1, f.shape[-1]).numpy()

    def embeddings(self, ids: np.ndarray) -> np.ndarray:
        import torch

        with torch.no_grad():
            return self.model.get_input_embeddings()(torch.from_numpy(ids)).numpy()

    def prefill(self, feeds: dict, ids: np.ndarray, mask: np.ndarray | None = None):
        """The merged forward on the prompts with their images: (logits, cache, leaves, what the text model
        saw)."""
        import torch

        mask = np.ones_like(ids) if mask is None else mask
        kw = dict(input_ids=torch.from_numpy(ids), attention_mask=torch.from_numpy(mask),
                  use_cache=True, **self.image_kwargs(feeds))
        if self.case.model_type == "gemma3":
            kw["token_type_ids"] = torch.from_numpy(self.inputs.token_types(ids))
        if self.case.model_type == "qwen2_vl":
            kw["mm_token_type_ids"] = torch.from_numpy(self.inputs.token_types(ids))
        with torch.no_grad():
            out = self.model(**kw)
        return out.logits.numpy(), out.past_key_values, cache_leaves(out.past_key_values), dict(self.seen)

    def step(self, token: int, cache):
        """One cached decode call on a new token: (logits, cache, leaves, what the text model saw)."""
        import torch

        with torch.no_grad():
            out = self.model(input_ids=torch.tensor([[token]]), past_key_values=cache, use_cache=True)
        return out.logits.numpy(), out.past_key_values, cache_leaves(out.past_key_values), dict(self.seen)

    def greedy(self, feeds: dict, ids: np.ndarray, steps: int = STEPS):
        """transformers' own greedy loop (model forward with its cache; no generate())."""
        logits, cache, _, _ = self.prefill(feeds, ids)
        tokens, step_logits = [], []
        for _ in range(steps):
            last = logits[0, -1]
            step_logits.append(last)
            tokens.append(int(last.argmax()))
            logits, cache, _, _ = self.step(tokens[-1], cache)
        return tokens, step_logits


# --- hfx's programs, per format --------------------------------------------------------------------------

class OnnxVlm:
    """onnx/vision_encoder.onnx, embed_tokens.onnx, decoder_model.onnx + decoder_with_past_model.onnx (or the
    merged graph for both). An input ONNX Runtime lists as an overridable initializer (gemma3's
    token_type_ids, zero by default) is fed when the caller has it."""

    def __init__(self, folder: Path, merged: bool = False):
        from runtimes import OnnxProgram

        d = folder / "onnx"
        self.vision_p = OnnxProgram(d / "vision_encoder.onnx")
        self.embed_p = OnnxProgram(d / "embed_tokens.onnx")
        if merged:
            self.prefill_p = self.decode_p = OnnxProgram(d / "decoder_model_merged.onnx")
        else:
            self.prefill_p = OnnxProgram(d / "decoder_model.onnx")
            self.decode_p = OnnxProgram(d / "decoder_with_past_model.onnx")
        for p in {id(self.prefill_p): self.prefill_p, id(self.decode_p): self.decode_p}.values():
            p.optional = [i.name for i in p.session.get_overridable_initializers()]

    @staticmethod
    def _run(p, feeds):
        from loops import empty_past

        feeds = {**empty_past(p, feeds["inputs_embeds"].shape[0]), **feeds}
        extra = {k: np.ascontiguousarray(v) for k, v in feeds.items() if k in getattr(p, "optional", [])}
        missing = [n for n in p.inputs if n not in feeds]
        if missing:
            raise KeyError(f"[interop] expected feeds for {missing}, got {sorted(feeds)}")
        run = {k: np.ascontiguousarray(feeds[k]) for k in p.inputs}
        return dict(zip(p.outputs, p.session.run(None, {**run, **extra})))

    def vision(self, feeds):
        return self.vision_p(feeds)["image_features"]

    def embed(self, ids):
        return self.embed_p({"input_ids": ids})["inputs_embeds"]

    def prefill(self, feeds):
        return self._run(self.prefill_p, feeds)

    def decode(self, feeds):
        return self._run(self.decode_p, feeds)

    def decoder_inputs(self):
        return list(self.prefill_p.inputs) + list(getattr(self.prefill_p, "optional", []))


class Pt2Vlm:
    """vision_encoder.pt2, embed_tokens.pt2, decoder_model.pt2, decoder_with_past_model.pt2 by
    torch.export.load."""

    def __init__(self, folder: Path):
        from runtimes import Pt2Program

        self.vision_p = Pt2Program(folder / "vision_encoder.pt2")
        self.embed_p = Pt2Program(folder / "embed_tokens.pt2")
        self.prefill_p = Pt2Program(folder / "decoder_model.pt2")
        self.decode_p = Pt2Program(folder / "decoder_with_past_model.pt2")

    @staticmethod
    def _run(p, feeds):
        keyword = {re.sub(r"[^0-9A-Za-z_]", "_", k) for k in feeds}
        missing = [n for n in p.inputs if n not in feeds and n not in keyword and not n.startswith("past_key_values")]
        if missing:
            raise KeyError(f"[interop] expected feeds for {missing}, got {sorted(feeds)}")
        return p({k: v for k, v in feeds.items()
                  if k in p.inputs or re.sub(r"[^0-9A-Za-z_]", "_", k) in p.inputs
                  or k.startswith("past_key_values")})

    def vision(self, feeds):
        return self._run(self.vision_p, feeds)["image_features"]

    def embed(self, ids):
        return self._run(self.embed_p, {"input_ids": ids})["inputs_embeds"]

    def prefill(self, feeds):
        return self._run(self.prefill_p, {k: v for k, v in feeds.items() if not k.startswith("past_")})

    def decode(self, feeds):
        return self._run(self.decode_p, feeds)

    def decoder_inputs(self):
        return list(self.prefill_p.inputs)


def empty_with_strides(shape) -> np.ndarray:
    """A zero-size float32 array with the contiguous strides torch gives it ((32, 16, 16, 1) for [1, 2, 0, 16]).
    numpy's own are 0 on the axes before the empty one, and ExecuTorch's pybindings (check_tensor_meta:
    "Strides don't match dim order") abort the process on them instead of raising."""
    strides, acc = [], 4
    for d in reversed(shape):
        strides.append(acc)
        acc *= max(d, 1)
    return np.lib.stride_tricks.as_strided(np.zeros(1, np.float32), shape=shape, strides=tuple(reversed(strides)))


class PteVlm:
    """model.pte's methods vision_encoder, token_embedding, text_decoder in ExecuTorch's runtime. The methods
    take positional inputs in the order of the component's declaration, which the ONNX decoder graph of the
    same checkpoint lists (`order`); each is checked against the method's own metadata (rank, dtype)."""

    def __init__(self, path: Path, vision_order: list, decoder_order: list):
        from runtimes import PteModule

        self.pte = PteModule(path)
        for m in ("vision_encoder", "token_embedding", "text_decoder"):
            assert m in self.pte.methods, f"[pte] expected method '{m}', got {self.pte.methods}"
        self.vision_order = vision_order
        self.decoder_order = decoder_order
        self.n_leaves = sum(1 for n in decoder_order if n.startswith("past_key_values."))
        for method, order in (("vision_encoder", vision_order), ("text_decoder", decoder_order)):
            n = self.pte.num_inputs(method)
            assert n == len(order), f"[pte] expected {len(order)} inputs of {method} ({order}), got {n}"

    def check_args(self, method, order, args):
        meta = self.pte.module.method_meta(method)
        for i, (name, a) in enumerate(zip(order, args)):
            info = meta.input_tensor_meta(i)
            rank, dtype = len(info.sizes()), self.pte.input_dtype(method, i)
            assert (rank, dtype) == (a.ndim, str(a.dtype)), \
                f"[pte] {method} input {i} ('{name}'): expected rank {rank} {dtype}, got {a.ndim} {a.dtype}"

    def vision(self, feeds):
        args = [feeds[n] for n in self.vision_order]
        self.check_args("vision_encoder", self.vision_order, args)
        return self.pte("vision_encoder", args)[0]

    def embed(self, ids):
        return self.pte("token_embedding", [ids])[0]

    def _decoder(self, feeds):
        b = feeds["inputs_embeds"].shape[0]
        meta = self.pte.module.method_meta("text_decoder")
        args = []
        for i, n in enumerate(self.decoder_order):
            if n in feeds:
                args.append(feeds[n])
            elif n.startswith("past_key_values."):  # the empty past: [batch, kv heads, 0, head dim]
                sizes = list(meta.input_tensor_meta(i).sizes())
                args.append(empty_with_strides((b, sizes[1], 0, sizes[3])))
            else:
                raise KeyError(f"[interop] expected a feed for text_decoder input '{n}', got {sorted(feeds)}")
        self.check_args("text_decoder", self.decoder_order, args)
        outs = self.pte("text_decoder", args)
        names = ["logits"] + [f"present.{n[len('past_key_values.'):]}" for n in self.decoder_order
                              if n.startswith("past_key_values.")]
        assert len(outs) == len(names), f"[pte] expected {len(names)} outputs of text_decoder, got {len(outs)}"
        return dict(zip(names, outs))

    prefill = _decoder
    decode = _decoder

    def decoder_inputs(self):
        return list(self.decoder_order)


# --- the host side of the loop ---------------------------------------------------------------------------

def onnx_input_order(path: Path) -> list:
    """A graph's declared inputs in order (graph.input: initializer-backed optional inputs included)."""
    import onnx

    return [i.name for i in onnx.load(str(path), load_external_data=False).graph.input]


def merge(embeds: np.ndarray, ids: np.ndarray, features: np.ndarray, image_token: int) -> np.ndarray:
    """Writes the image features' rows over the image tokens' rows, in order (transformers' masked_scatter)."""
    out = embeds.copy()
    rows = features.reshape(-1, embeds.shape[-1])
    sel = ids == image_token
    assert int(sel.sum()) == rows.shape[0], \
        f"[interop] expected {int(sel.sum())} image feature rows for the image tokens, got {rows.shape[0]}"
    out[sel] = rows
    return out


def decoder_feeds(inputs: Inputs, embeds, positions, mask, ids, wanted: list) -> dict:
    f = {"inputs_embeds": embeds.astype(np.float32), "attention_mask": mask, "position_ids": positions}
    if "token_type_ids" in wanted:
        f["token_type_ids"] = inputs.token_types(ids)
    return f


def carry(out: dict) -> dict:
    return {past_name(k): v for k, v in out.items() if k.startswith("present.")}


def program_greedy(progs, inputs: Inputs, feeds: dict, positions: np.ndarray, steps: int = STEPS):
    """The vision-language loop on hfx's programs alone: vision_encoder once, embed_tokens on the prompt, the
    features merged on the host, the decoder's prefill, then per token embed_tokens + one cached decoder
    call on the program's own cache. positions: the prompt's position_ids ([1, S], or qwen2_vl's [3, 1, S]);
    a decode step sits at the previous step's largest position + 1 (get_rope_index's delta)."""
    ids = inputs.ids()
    wanted = progs.decoder_inputs()
    emb = merge(progs.embed(ids), ids, progs.vision(feeds), inputs.image_token)
    mask = np.ones_like(ids)
    out = progs.prefill(decoder_feeds(inputs, emb, positions, mask, ids, wanted))
    pos = positions[..., -1:].copy()
    nxt_pos = int(positions.max()) + 1
    got, seen = [], []
    for _ in range(steps):
        last = out["logits"][0, -1]
        seen.append(last)
        got.append(int(last.argmax()))
        tok = np.array([[got[-1]]], np.int64)
        mask = np.concatenate([mask, np.ones((1, 1), np.int64)], 1)
        pos = np.full_like(pos, nxt_pos)
        nxt_pos += 1
        f = decoder_feeds(inputs, progs.embed(tok), pos, mask, tok, wanted)
        f.update(carry(out))
        out = progs.decode(f)
    return got, seen
