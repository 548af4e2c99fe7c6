"""Shared helpers of the golden scripts in tools/hf_goldens/: they run under the project's pinned venv
(.venv, made by scripts/setup.sh from deps/python/requirements.lock: torch 2.x, transformers 5.x) with the real,
unmodified transformers; no shims.

  setup()                    offline, quiet, 1 thread, deterministic
  load(ckpt, cls=None, ...)  from_pretrained(ckpt) in float32 with eager attention, .eval(); every weight of the
                             model must come from the file (missing / unexpected / mismatched keys are errors unless
                             the caller allows them); returns (model, notes)
  versions()                 {"transformers_version", "torch_version"} of this run
  g7(x), r7(list)            7 significant digits (the goldens' float format)
"""
import hashlib
import os
import re
import sys

os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("TRANSFORMERS_OFFLINE", "1")
os.environ.setdefault("HF_HUB_DISABLE_TELEMETRY", "1")
os.environ.setdefault("HF_HUB_DISABLE_PROGRESS_BARS", "1")
os.environ.setdefault("TRANSFORMERS_VERBOSITY", "error")
os.environ.setdefault("TOKENIZERS_PARALLELISM", "false")
os.environ.setdefault("OMP_NUM_THREADS", "1")
sys.dont_write_bytecode = True  # no __pycache__ in the source tree

import warnings  # noqa: E402

warnings.filterwarnings("ignore")

import torch  # noqa: E402
import transformers  # noqa: E402

SCRIPT_DIR = os.path.dirname(os.path.abspath(__file__))


def setup(threads=1):
    torch.set_num_threads(threads)
    torch.manual_seed(0)
    transformers.logging.set_verbosity_error()
    transformers.utils.logging.disable_progress_bar()


def versions():
    return {"transformers_version": transformers.__version__, "torch_version": torch.__version__}


def g7(x):
    return float(f"{float(x):.7g}")


def r7(xs):
    return [g7(x) for x in xs]


def sha256(path):
    h = hashlib.sha256()
    with open(path, "rb") as f:
        for chunk in iter(lambda: f.read(1 << 20), b""):
            h.update(chunk)
    return h.hexdigest()


def load(ckpt, cls=None, config=None, allow_missing=(), allow_unexpected=(), **kw):
    """cls.from_pretrained(ckpt) (cls: config.architectures[0] by default), float32, eager attention, eval.
    allow_missing / allow_unexpected: regexes of keys that may be absent from / extra in the file; every such key
    is listed in the notes. Anything else the loading info reports raises."""
    if cls is None:
        if config is None:
            config = transformers.AutoConfig.from_pretrained(ckpt)
        cls = getattr(transformers, config.architectures[0])
    elif isinstance(cls, str):
        cls = getattr(transformers, cls)
    if config is not None:
        kw["config"] = config
    torch.manual_seed(0)
    model, info = cls.from_pretrained(ckpt, dtype=torch.float32, attn_implementation="eager",
                                      local_files_only=True, output_loading_info=True, **kw)
    notes = []
    for key, allowed in (("missing_keys", allow_missing), ("unexpected_keys", allow_unexpected)):
        pats = [re.compile(p) for p in allowed]
        keys = sorted(info.get(key) or [])
        bad = [k for k in keys if not any(p.search(k) for p in pats)]
        if bad:
            raise SystemExit(f"{cls.__name__}.from_pretrained({ckpt}): {key} {bad}")
        notes += [f"{key[:-5]} key {k} (allowed)" for k in keys]
    for key in ("mismatched_keys", "error_msgs"):
        if info.get(key):
            raise SystemExit(f"{cls.__name__}.from_pretrained({ckpt}): {key} {info[key]}")
    return model.float().eval(), notes


def write_json(path, obj, compact=True):
    import json
    os.makedirs(os.path.dirname(os.path.abspath(path)) or ".", exist_ok=True)
    tmp = path + ".tmp"
    with open(tmp, "w") as f:
        if compact:
            json.dump(obj, f, separators=(",", ":"))
        else:
            json.dump(obj, f)
        f.write("\n")
    os.replace(tmp, path)


def features_tensor(out):
    """get_image_features()'s result as one tensor: transformers 5 returns a model output whose pooler_output
    holds the projected features (a tensor, or a list of per-image [tokens, hidden] tensors, stacked here)."""
    if isinstance(out, torch.Tensor):
        return out
    feats = getattr(out, "pooler_output", out)
    if isinstance(feats, (list, tuple)):
        feats = torch.stack(list(feats))
    return feats


def load_state_dict_into(model, sd):
    """model.load_state_dict(sd) where the only keys sd may lack are tied to a key it has (checked by storage after
    model.tie_weights()); no unexpected keys. For state dicts made here (e.g. de-quantized weights). Returns notes."""
    missing, unexpected = model.load_state_dict(sd, strict=False)
    if unexpected:
        raise SystemExit(f"unexpected keys {unexpected}")
    model.tie_weights()
    state = model.state_dict()
    ptr = {state[k].data_ptr(): k for k in sd if k in state}
    notes = []
    for k in missing:
        src = ptr.get(state[k].data_ptr())
        if src is None:
            raise SystemExit(f"missing key {k} (not tied to a loaded one)")
        notes.append(f"{k} tied to {src} (not in the state dict)")
    return notes
