#!/usr/bin/env python3
"""Replays an hfx .pt2 archive's models/model.json node by node with real ATen ops, without
torch.export: a check for machines whose torch is older than 2.11 (any torch >= 1.13).

For every node the serialized argument names and kinds are bound against the op's real schema
(torch.ops.aten.<op>.<overload>._schema), so a wrong name, a missing required argument or a
keyword passed positionally fails here as it would in torch.export's deserializer. Ops that the
installed torch lacks (aten.rms_norm before 2.4, enable_gqa before 2.5) run through a reference
fallback and are reported. Weights come from data/weights/ via the payload config, inputs from
data/sample_inputs/model.pt. With --expect FILE.pt (a torch.save'd dict of output name → tensor) the
outputs are compared.

  python3 replay_json.py OUT/decode.pt2 [--expect golden.pt] [--atol 1e-5]
"""
import argparse
import io
import json
import math
import operator
import sys
import zipfile

import torch

DTYPES = {1: torch.uint8, 2: torch.int8, 4: torch.int32, 5: torch.int64, 6: torch.float16, 7: torch.float32, 12: torch.bool, 13: torch.bfloat16}
SYM_OPS = {"_operator.add": operator.add, "_operator.sub": operator.sub, "_operator.mul": operator.mul,
           "_operator.floordiv": operator.floordiv, "_operator.mod": operator.mod, "_operator.ge": operator.ge,
           "_operator.le": operator.le, "_operator.eq": operator.eq, "torch.sym_min": min, "torch.sym_max": max}


def fallback(name, args, kwargs):
    if name == "aten.rms_norm.default":
        x, shape, w, eps = (list(args) + [None, None])[:4]
        eps = kwargs.get("eps", eps)
        y = x * torch.rsqrt(x.pow(2).mean(-1, keepdim=True) + eps)
        return y * w if w is not None else y
    if name == "aten.scaled_dot_product_attention.default":
        q, k, v = args[:3]
        mask = args[3] if len(args) > 3 else kwargs.get("attn_mask")
        causal = args[5] if len(args) > 5 else kwargs.get("is_causal", False)
        scale = kwargs.get("scale") or 1.0 / math.sqrt(q.shape[-1])
        if kwargs.get("enable_gqa"):
            rep = q.shape[1] // k.shape[1]
            k, v = k.repeat_interleave(rep, 1), v.repeat_interleave(rep, 1)
        s = q @ k.transpose(-1, -2) * scale
        if causal:
            S, T = s.shape[-2], s.shape[-1]
            s = s.masked_fill(~torch.ones(S, T, dtype=torch.bool).tril(), float("-inf"))
        if mask is not None:
            s = s + mask if mask.dtype != torch.bool else s.masked_fill(~mask, float("-inf"))
        return torch.softmax(s, -1) @ v
    raise KeyError(name)


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("archive")
    ap.add_argument("--expect")
    ap.add_argument("--atol", type=float, default=1e-5)
    a = ap.parse_args()
    z = zipfile.ZipFile(a.archive)
    root = z.namelist()[0].split("/")[0]
    rd = lambda n: z.read(f"{root}/{n}")
    ep = json.loads(rd("models/model.json"))
    g = ep["graph_module"]["graph"]
    env, fallbacks, problems = {}, set(), []

    def payload(dirname, meta):
        raw = bytearray(rd(dirname + meta["path_name"]))
        tm = meta["tensor_meta"]
        dt = DTYPES[tm["dtype"]]
        shape = [s["as_int"] for s in tm["sizes"]]
        return torch.frombuffer(raw, dtype=dt).reshape(shape) if raw else torch.zeros(shape, dtype=dt)

    wcfg = json.loads(rd("data/weights/model_weights_config.json"))["config"]
    ccfg = json.loads(rd("data/constants/model_constants_config.json"))["config"]
    args0, kwargs0 = torch.load(io.BytesIO(rd("data/sample_inputs/model.pt")), weights_only=True)
    flat = []
    for k, v in kwargs0.items():
        flat.extend([v] if isinstance(v, torch.Tensor) else [t for layer in v for t in layer])
    user = iter(flat)
    for spec, inp in zip(ep["graph_module"]["signature"]["input_specs"], g["inputs"]):
        name = inp["as_tensor"]["name"]
        if "parameter" in spec:
            env[name] = payload("data/weights/", wcfg[spec["parameter"]["parameter_name"]])
        elif "tensor_constant" in spec:
            env[name] = payload("data/constants/", ccfg[spec["tensor_constant"]["tensor_constant_name"]])
        else:
            env[name] = next(user)

    def val(arg):
        (k, v), = arg.items()
        if k == "as_tensor": return env[v["name"]]
        if k == "as_tensors": return [env[t["name"]] for t in v]
        if k in ("as_sym_int", "as_sym_bool"): return env[v["as_name"]] if "as_name" in v else next(iter(v.values()))
        if k in ("as_sym_ints",): return [env[x["as_name"]] if "as_name" in x else x["as_int"] for x in v]
        if k == "as_none": return None
        if k == "as_scalar_type": return DTYPES[v]
        if k == "as_float": return float(v) if not isinstance(v, str) else float(v.replace("Infinity", "inf"))
        if k == "as_optional_tensors": return [env[x["as_tensor"]["name"]] if "as_tensor" in x else None for x in v]
        return v  # as_int, as_ints, as_bool, as_string, as_floats, ...

    for n in g["nodes"]:
        t = n["target"]
        vals = [(i["name"], val(i["arg"]), i.get("kind", 1)) for i in n["inputs"]]
        if t in SYM_OPS:
            r = SYM_OPS[t](*[v for _, v, _ in vals])
        else:
            assert t.startswith("torch.ops."), t
            _, _, ns, op, ov = t.split(".")
            name = f"{ns}.{op}.{ov}"
            args = [v for _, v, k in vals if k == 1]
            kwargs = {nm: v for nm, v, k in vals if k == 2}
            packet = getattr(getattr(torch.ops, ns), op, None)
            overload = getattr(packet, ov, None) if packet is not None else None
            if overload is not None:
                sch = overload._schema
                names = [x.name for x in sch.arguments]
                pos = [i["name"] for i in n["inputs"] if i.get("kind", 1) == 1]
                if pos != names[: len(pos)]:
                    problems.append(f"{t}: positional names {pos} vs schema {names}")
                for x in sch.arguments:
                    if x.kwarg_only and x.name in pos:
                        problems.append(f"{t}: '{x.name}' is keyword-only but written positionally")
                unknown = set(i["name"] for i in n["inputs"]) - set(names)
                missing = [x.name for x in sch.arguments if not x.kwarg_only and not x.has_default_value()
                           and x.name not in [i["name"] for i in n["inputs"]]]
                try:
                    if unknown:
                        raise TypeError(f"unknown args {unknown}")
                    r = overload(*args, **kwargs)
                except Exception as e:  # noqa: BLE001
                    if name in ("aten.rms_norm.default", "aten.scaled_dot_product_attention.default"):
                        fallbacks.add(f"{name} ({type(e).__name__})")
                        r = fallback(name, args, kwargs)
                    else:
                        raise RuntimeError(f"{t} failed: {e}; args {[type(x).__name__ for x in args]} kwargs {list(kwargs)}") from e
                if missing:
                    problems.append(f"{t}: missing required {missing}")
            else:
                fallbacks.add(name)
                r = fallback(name, args, kwargs)
        outs = n["outputs"]
        if not outs:
            continue
        (k, v), = outs[0].items()
        key = v["name"] if k == "as_tensor" else v["as_name"]
        env[key] = r
        if k == "as_tensor":
            meta = g["tensor_values"][key]
            if DTYPES[meta["dtype"]] != r.dtype:
                problems.append(f"{t} -> {key}: dtype {r.dtype}, program says {DTYPES[meta['dtype']]}")
            if len(meta["sizes"]) != r.dim():
                problems.append(f"{t} -> {key}: rank {r.dim()}, program says {len(meta['sizes'])}")
            else:
                for d, s in zip(r.shape, meta["sizes"]):
                    if "as_int" in s and s["as_int"] != d:
                        problems.append(f"{t} -> {key}: shape {tuple(r.shape)} vs program {meta['sizes']}")
                        break
    outs = {o["as_tensor"]["name"]: env[o["as_tensor"]["name"]] for o in g["outputs"]}
    print(f"{a.archive}: {len(g['nodes'])} nodes replayed with torch {torch.__version__}")
    for f in sorted(fallbacks):
        print(f"  reference fallback: {f}")
    for p in problems[:30]:
        print(f"  PROBLEM: {p}")
    worst = 0.0
    if a.expect:
        exp = torch.load(a.expect)
        for k, v in exp.items():
            d = (outs[k].float() - v.float()).abs().max().item()
            worst = max(worst, d)
            print(f"  {k}: max |diff| {d:.3e}")
    for k, v in outs.items():
        print(f"  out {k}: {tuple(v.shape)} {v.dtype} mean {v.float().mean().item():+.6f}")
    ok = not problems and worst <= a.atol
    print("OK" if ok else "FAIL")
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
