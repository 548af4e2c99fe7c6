"""Vision-language models (llava, gemma3, idefics3, smolvlm, qwen2_vl): hfx's three components in every format's
released runtime vs transformers 5.x eager, on checkpoints made by transformers' own classes.

Per case and format, one record:
  vision_encoder  a batch of images (ONNX / .pt2: two images; .pte: one, its batch range) -> image_features,
                  vs get_image_features' pooler_output (after the projector / connector / merger), row for row
                  in the order the rows are written over the image tokens;
  embed_tokens    every id of the vocabulary vs the model's input embeddings (gemma3: scaled);
  prefill         the decoder on exactly what transformers' text model ran on in the merged forward (a forward
                  pre-hook records its inputs_embeds, with the image features merged, and its position_ids:
                  qwen2_vl's M-RoPE [3, 1, S]; gemma3 also gets token_type_ids): logits on every position and
                  every present.* leaf (the common tail where transformers keeps a sliding window shorter);
  decode          one token on the program's own prefill cache: logits and every leaf;
  greedy          32 tokens from the programs alone (vision_encoder, embed_tokens, the host merge, the decoder's
                  prefill, then embed_tokens + one cached decoder call per token) vs transformers' own greedy
                  loop (model forward with its cache, no generate()), the logits of every step on its path.
ONNX: decoder_model + decoder_with_past_model, then decoder_model_merged for both calls; .pt2: decoder_model.pt2
+ decoder_with_past_model.pt2; .pte: vision_encoder, token_embedding, text_decoder (the cache as plain tensors).

The checkpoints for the numerics are written in the Hub's layout (the keys renamed back: transformers 5 loads
them with no missing or unexpected weight, asserted); transformers 5 itself saves llava's and gemma3's vision
tower without CLIPVisionModel / SiglipVisionModel's `vision_model.` prefix, which hfx reads too
(test_transformers5_layout: Architecture::weight_layouts).
"""
from __future__ import annotations

import json

import numpy as np
import pytest

from cases import Case
from judge import EXACT, PTE, check_greedy
from vision_support import (Inputs, OnnxVlm, PteVlm, Pt2Vlm, VlmReference, carry, make_vlm_checkpoint,
                            onnx_input_order, program_greedy)

_T = dict(vocab_size=320, hidden_size=64, intermediate_size=128, num_hidden_layers=2, num_attention_heads=4,
          num_key_value_heads=2, max_position_embeddings=256, head_dim=16)
_AUTO = "AutoModelForImageTextToText"  # LlavaForConditionalGeneration, Gemma3ForConditionalGeneration, ...
_VIS = dict(hidden_size=32, intermediate_size=64, num_hidden_layers=2, num_attention_heads=4, image_size=32,
            patch_size=8)

VLMS = [
    Case("llava", "llava", "vlm",
         dict(vision_config=dict(_VIS, model_type="clip_vision_model", projection_dim=32),
              text_config=dict(_T, model_type="llama"), image_token_id=300, image_seq_length=16,
              vision_feature_layer=-2, vision_feature_select_strategy="default"),
         auto=_AUTO,
         why="CLIP tower 32x32 / 8x8 patches, feature layer -2, CLS dropped, gelu projector, llama text"),
    Case("llava_full_qwen2", "llava", "vlm",
         dict(vision_config=dict(_VIS, model_type="clip_vision_model", projection_dim=32, hidden_act="gelu"),
              text_config=dict(_T, model_type="qwen2", tie_word_embeddings=True), tie_word_embeddings=True,
              image_token_id=300, image_seq_length=17, vision_feature_layer=-1,
              vision_feature_select_strategy="full", projector_hidden_act="gelu_pytorch_tanh"),
         auto=_AUTO,
         why="'full' strategy (CLS kept: 17 tokens), last layer, gelu tower, tanh projector, qwen2 text, tied"),
    Case("gemma3", "gemma3", "vlm",
         dict(vision_config=dict(_VIS, model_type="siglip_vision_model", vision_use_head=False),
              text_config=dict(_T, model_type="gemma3_text", num_hidden_layers=3, sliding_window=8,
                               layer_types=["sliding_attention", "sliding_attention", "full_attention"],
                               query_pre_attn_scalar=16),
              mm_tokens_per_image=4, boi_token_index=300, eoi_token_index=301, image_token_index=302),
         auto=_AUTO,
         why="SigLIP, 4x4 patches pooled to 4 tokens, soft-emb RMSNorm, bidirectional image block, window 8"),
    Case("idefics3", "idefics3", "vlm",
         dict(vision_config=_VIS, text_config=dict(_T, model_type="llama"), scale_factor=2, image_token_id=300),
         auto=_AUTO,
         why="SigLIP-style tower, pixel shuffle x2 (4 tokens per image), modality projection"),
    Case("smolvlm", "smolvlm", "vlm",
         dict(vision_config=dict(_VIS, image_size=64),
              text_config=dict(_T, model_type="llama", tie_word_embeddings=True), tie_word_embeddings=True,
              scale_factor=4, image_token_id=300),
         auto=_AUTO,
         why="idefics3's layout under smolvlm's model_type: 64x64 images (8x8 patches), pixel shuffle x4, tied"),
    Case("qwen2_vl", "qwen2_vl", "vlm",
         dict(vision_config=dict(depth=2, embed_dim=32, hidden_size=64, num_heads=4, mlp_ratio=2, patch_size=4,
                                 spatial_merge_size=2, temporal_patch_size=2, in_channels=3),
              text_config=dict(_T, model_type="qwen2_vl_text", bos_token_id=1, eos_token_id=2,
                               rope_parameters=dict(rope_type="default", mrope_section=[2, 3, 3],
                                                    rope_theta=10000.0)),
              image_token_id=302, video_token_id=303, vision_start_token_id=300, vision_end_token_id=301),
         auto=_AUTO,
         why="flattened patches + grid_thw (grids 1x4x6, 1x6x4), 2-D vision rotary, M-RoPE [2, 3, 3]"),
]
_REFS: dict = {}
_DETAIL: dict = {}


@pytest.fixture(scope="module")
def vlm_checkpoint(workdir):
    """The case's checkpoint in the Hub's layout, at the folder the `export` fixture reads."""
    def make(case):
        return make_vlm_checkpoint(case, workdir / "ckpt" / case.name, layout="hub")
    yield make
    if _DETAIL:  # per-check max |delta|, beside the report
        (workdir / "vision_detail.json").write_text(json.dumps(_DETAIL, indent=1, sort_keys=True))


def reference(case, folder) -> VlmReference:
    if case.name not in _REFS:
        _REFS[case.name] = VlmReference(case, folder)
    return _REFS[case.name]


def check(rec, what, got, ref, bound):
    got, ref = np.asarray(got), np.asarray(ref)
    if got.shape == ref.shape and ref.size:
        d = _DETAIL.setdefault(f"{rec.case}/{rec.fmt}", {})
        d[what] = max(d.get(what, 0.0), float(np.abs(got.astype(np.float64) - ref).max()))
    rec.check(what, got, ref, bound)


def check_presents(rec, what, got: dict, ref: dict, bound, mask=None):
    """Every leaf on the real (mask = 1) positions (a pad position's key/value is never attended); a sliding
    layer's: the common tail (transformers keeps the window)."""
    missing = [n for n in sorted(ref) if n not in got]
    assert not missing, f"[{rec.fmt}/{rec.runtime}] {what}: expected cache leaves {missing}, got {sorted(got)}"
    for n in sorted(ref):
        g, r = got[n], ref[n]
        k = min(g.shape[-2], r.shape[-2])
        g, r = g[..., g.shape[-2] - k:, :], r[..., r.shape[-2] - k:, :]
        if mask is not None:
            keep = np.broadcast_to(mask[:, mask.shape[1] - k:].astype(bool)[:, None, :, None], r.shape)
            g, r = np.where(keep, g, 0), np.where(keep, r, 0)
        check(rec, f"{what} {n}", g, r, bound)


def positions_of(seen: dict, start: int, n: int) -> np.ndarray:
    """The position_ids transformers' text model ran on (qwen2_vl: [3, 1, n]), or 0..n-1 when it built them."""
    p = seen.get("position_ids")
    if p is None:
        return np.arange(start, start + n, dtype=np.int64)[None]
    return p.astype(np.int64)


def judge_padded(rec, progs, ref, bound):
    """The decoder's prefill on a left-padded pair of prompts, one image each, on what transformers' text
    model ran on (its inputs_embeds and position_ids): logits on every real position, every leaf there."""
    inputs: Inputs = ref.inputs
    ids, mask = inputs.padded_pair()
    r_logits, _, r_leaves, seen = ref.prefill(inputs.vision_feeds(2), ids, mask)
    pos = positions_of(seen, 0, ids.shape[1])
    if pos.shape[0] == 1 and ids.shape[0] == 2:
        pos = np.repeat(pos, 2, 0)
    f = {"inputs_embeds": seen["inputs_embeds"], "attention_mask": mask, "position_ids": pos}
    if "token_type_ids" in progs.decoder_inputs():
        f["token_type_ids"] = inputs.token_types(ids)
    out = progs.prefill(f)
    real = mask.astype(bool)
    check(rec, "padded prefill logits", out["logits"][real], r_logits[real], bound)
    check_presents(rec, "padded prefill", out, r_leaves, bound, mask)


def judge(rec, progs, case, folder, bound, images: int, greedy_too: bool = True):
    ref = reference(case, folder)
    inputs: Inputs = ref.inputs
    hidden = ref.cfg["text_config"]["hidden_size"]

    # vision_encoder
    feeds = inputs.vision_feeds(images)
    got = np.asarray(progs.vision(feeds))
    want = ref.image_features(feeds)
    assert got.shape[-1] == hidden, f"[{rec.fmt}] expected image_features [..., {hidden}], got {got.shape}"
    check(rec, "vision_encoder image_features", got.reshape(-1, hidden), want, bound)

    # embed_tokens, on the whole vocabulary (in rows of 64 ids: within every program's sequence range)
    vocab = np.arange(ref.cfg["text_config"]["vocab_size"], dtype=np.int64)[None]
    got_e = np.concatenate([progs.embed(vocab[:, i:i + 64]) for i in range(0, vocab.shape[1], 64)], 1)
    check(rec, "embed_tokens inputs_embeds", got_e, ref.embeddings(vocab), bound)

    # prefill on transformers' own merged inputs_embeds and positions
    feeds1 = inputs.vision_feeds(1)
    ids = inputs.ids()
    r_logits, r_cache, r_leaves, seen = ref.prefill(feeds1, ids)
    s = ids.shape[1]
    pos = positions_of(seen, 0, s)
    wanted = progs.decoder_inputs()
    f = {"inputs_embeds": seen["inputs_embeds"], "attention_mask": np.ones_like(ids), "position_ids": pos}
    if "token_type_ids" in wanted:
        f["token_type_ids"] = inputs.token_types(ids)
    out = progs.prefill(f)
    check(rec, "prefill logits", out["logits"], r_logits, bound)
    check_presents(rec, "prefill", out, r_leaves, bound)

    # one decode step on the program's own cache
    nxt = int(r_logits[0, -1].argmax())
    d_logits, _, d_leaves, seen2 = ref.step(nxt, r_cache)
    f2 = {"inputs_embeds": seen2["inputs_embeds"], "attention_mask": np.ones((1, s + 1), np.int64),
          "position_ids": positions_of(seen2, s, 1)}
    if "token_type_ids" in wanted:
        f2["token_type_ids"] = np.zeros((1, 1), np.int64)
    f2.update(carry(out))
    out2 = progs.decode(f2)
    check(rec, "decode logits", out2["logits"], d_logits, bound)
    check_presents(rec, "decode", out2, d_leaves, bound)

    if greedy_too:
        key = ("greedy", case.name)
        if key not in _REFS:
            _REFS[key] = ref.greedy(feeds1, ids)
        tokens, step_logits = _REFS[key]
        got_t, seen_l = program_greedy(progs, inputs, feeds1, pos)
        check_greedy(rec, got_t, seen_l, tokens, step_logits, bound)
        d = _DETAIL.setdefault(f"{rec.case}/{rec.fmt}", {})
        for a, b, g, t in zip(seen_l, step_logits, got_t, tokens):  # the steps on transformers' path
            if g != t:
                break
            d["greedy logits (max over steps)"] = max(d.get("greedy logits (max over steps)", 0.0),
                                                      float(np.abs(a.astype(np.float64) - b).max()))


@pytest.mark.parametrize("case", VLMS, ids=lambda c: c.name)
def test_onnx(case, vlm_checkpoint, export, record):
    rec = record(case, "onnx")
    folder = vlm_checkpoint(case)
    out = export(case, "onnx")
    for merged in (False, True):
        progs = OnnxVlm(out, merged=merged)
        judge(rec, progs, case, folder, EXACT, images=2)
        judge_padded(rec, progs, reference(case, folder), EXACT)


@pytest.mark.parametrize("case", VLMS, ids=lambda c: c.name)
def test_pt2(case, vlm_checkpoint, export, record):
    rec = record(case, "pt2")
    folder = vlm_checkpoint(case)
    progs = Pt2Vlm(export(case, "pt2"))
    judge(rec, progs, case, folder, EXACT, images=2)
    judge_padded(rec, progs, reference(case, folder), EXACT)


@pytest.mark.parametrize("backend", ["portable", "xnnpack"])
@pytest.mark.parametrize("case", VLMS, ids=lambda c: c.name)
def test_pte(case, backend, vlm_checkpoint, export, record):
    fmt = f"pte-{backend}"
    rec = record(case, fmt)
    folder = vlm_checkpoint(case)
    onnx_dir = export(case, "onnx") / "onnx"  # the methods' input order: the components' declared order
    progs = PteVlm(export(case, fmt) / "model.pte", onnx_input_order(onnx_dir / "vision_encoder.onnx"),
                   onnx_input_order(onnx_dir / "decoder_model_merged.onnx"))
    judge(rec, progs, case, folder, PTE, images=1)


# transformers 5's own saved layout (no renaming): what `save_pretrained` writes today.
TF5_LAYOUT = [Case(f"{c.name}_tf5_layout", c.model_type, c.family, c.config, c.auto, c.why)
              for c in VLMS if c.name in ("llava", "gemma3")]


@pytest.mark.parametrize("case", TF5_LAYOUT, ids=lambda c: c.name)
def test_transformers5_layout(case, checkpoint, export, record):
    rec = record(case, "onnx")
    folder = checkpoint(case)  # cases.make_checkpoint: transformers' save_pretrained as it is
    out = export(case, "onnx")
    judge(rec, OnnxVlm(out), case, folder, EXACT, images=2, greedy_too=False)


# LlavaConfig knobs of transformers 4.49+ (found unsupported by this tier, now read): each case exports and is
# judged as above (ONNX).
_LLAVA = dict(vision_config=dict(_VIS, model_type="clip_vision_model", projection_dim=32),
              text_config=dict(_T, model_type="llama"), image_token_id=300)
KNOBS = [
    pytest.param(Case("llava_projector_nobias", "llava", "vlm", dict(_LLAVA, multimodal_projector_bias=False),
                      auto=_AUTO, why="LlavaConfig.multimodal_projector_bias = False")),
    pytest.param(Case("llava_feature_layers", "llava", "vlm", dict(_LLAVA, vision_feature_layer=[-2, -1]),
                      auto=_AUTO, why="vision_feature_layer as a list")),
]


@pytest.mark.parametrize("case", KNOBS, ids=lambda c: c.name)
def test_llava_config_knobs(case, vlm_checkpoint, export, record):
    rec = record(case, "onnx")
    folder = vlm_checkpoint(case)
    judge(rec, OnnxVlm(export(case, "onnx")), case, folder, EXACT, images=2, greedy_too=False)
