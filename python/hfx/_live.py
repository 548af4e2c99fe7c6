"""A live ``transformers`` model as hfx reads it: the files ``save_pretrained`` would write, without its weights.

The weights stay where the model holds them: the state dict transformers' ``save_pretrained`` would write
(tied weights removed, renamed back to the checkpoint's names by transformers' own functions) is handed to the
native module, which views each tensor in place through DLPack. Only the small side files (config.json,
generation_config.json, the tokenizer's files when one is given) are written, into a temporary folder.
"""
from __future__ import annotations

import copy
import json
import os
from typing import Any

from .errors import ArgumentError


def is_live_model(model: Any) -> bool:
    """Whether `model` is a transformers PreTrainedModel (without importing transformers when it is not)."""
    mod = type(model).__module__
    if not mod.startswith("transformers"):
        return any(c.__module__.startswith("transformers") and c.__name__ == "PreTrainedModel"
                   for c in type(model).__mro__)
    from transformers import PreTrainedModel

    return isinstance(model, PreTrainedModel)


def live_parts(model: Any, side_dir: str, tokenizer: Any = None) -> tuple[dict, dict]:
    """Writes the side files of `model` into `side_dir` and returns (config.json as a dict, name → tensor)."""
    from transformers.core_model_loading import revert_weight_conversion
    from transformers.modeling_utils import remove_tied_weights_from_state_dict

    # save_pretrained records the dtype and class in the config; a copy keeps the user's model as it was.
    config = copy.deepcopy(model.config)
    config.dtype = str(model.dtype).split(".")[1]
    config.architectures = [type(model).__name__]
    config.save_pretrained(side_dir)
    if model.can_generate():
        model.generation_config.save_pretrained(side_dir)
    if tokenizer is not None:
        tokenizer.save_pretrained(side_dir)
    # save_pretrained's steps, in its order: the keys the model never saves (marian's sinusoidal tables), tied
    # weights, then the renaming back to the checkpoint's layout.
    state = model.state_dict()
    for key in getattr(model, "_keys_to_ignore_on_save", None) or ():
        state.pop(key, None)
    state = remove_tied_weights_from_state_dict(state, model)
    state = revert_weight_conversion(model, state)
    tensors = {}
    for name, t in state.items():
        if t.device.type != "cpu":
            raise ArgumentError(
                f"[python] expected the model's weights on the CPU, got '{name}' on {t.device}; call model.to('cpu') "
                "first (hfx reads the weights in place)")
        t = t.detach()
        tensors[name] = t if t.is_contiguous() else t.contiguous()
    with open(os.path.join(side_dir, "config.json"), encoding="utf-8") as f:
        return json.load(f), tensors
