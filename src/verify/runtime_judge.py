"""hfx verify's runtime judge: runs hfx's artifacts in the released runtimes and writes what they computed.

Embedded in libhfx (src/verify/runtime_judge.cpp writes it to a temp file) and run by the interpreter of the
project's Python environment (HFX_PYTHON, or the .venv beside the hfx binary). It judges nothing itself:
every comparison, and every tolerance, stays in hfx's C++ (one source of truth); this only runs calls.

  runtime_judge.py --calls DIR --out DIR [--pte FILE ...] [--pt2 FILE ...]

.pte: for each call fixture DIR/<stem>.<method>.<tag>.call (src/verify/call_fixture.h) of the program, in name
order (a static-cache forward's calls depend on the ones before), the method is run by ExecuTorch's Python
runtime (executorch.extension.pybindings.portable_lib: portable kernels and the XNNPACK delegate) on the
fixture's inputs; OUT/<same name> gets its outputs (output.0, output.1, ...), or OUT/<same name>.error the
runtime's error.
.pt2: torch.export.load, then ep.module() on every saved call DIR/<stem>.forward.<tag>.call (inputs by name: a
leaf by its keyword, a list of (key, value) pairs from past_key_values.N.key / .value), OUT/<same name> getting
the outputs (flat the same way) or .error; then one call per bounded axis one past its bound (range
constraints), OUT/<stem>.forward.probe<K>.call(.error).
Prints one JSON line: the runtimes' versions and, per file, "ok" or the first error line.
"""
import argparse
import glob
import json
import os
import struct
import subprocess
import sys
import traceback

import numpy as np

CODES = {1: np.float32, 2: np.int64, 3: np.int32, 4: np.bool_, 5: np.uint8}
CODE_OF = {np.dtype(v): k for k, v in CODES.items()}


def read_fixture(path):
    b = open(path, "rb").read()
    at = [0]

    def take(n):
        if n > len(b) - at[0]:
            raise ValueError(f"{path}: truncated at byte {at[0]}")
        at[0] += n
        return b[at[0] - n:at[0]]

    def u32():
        return struct.unpack("<I", take(4))[0]

    def text():
        return take(u32()).decode()

    def tensor():
        name = text()
        code = take(1)[0]
        shape = [struct.unpack("<q", take(8))[0] for _ in range(u32())]
        data = take(struct.unpack("<Q", take(8))[0])
        return name, np.frombuffer(data, dtype=CODES[code]).reshape(shape).copy()

    if take(8) != b"HFXCALL1":
        raise ValueError(f"{path}: expected the HFXCALL1 magic")
    method = text()
    expect_error = take(1)[0] == 1
    n_in, n_out = u32(), u32()
    inputs = [tensor() for _ in range(n_in)]
    outputs = [tensor() for _ in range(n_out)]
    return method, expect_error, inputs, outputs


def write_fixture(path, method, expect_error, inputs, outputs):
    parts = [b"HFXCALL1", struct.pack("<I", len(method.encode())), method.encode(), bytes([1 if expect_error else 0]),
             struct.pack("<II", len(inputs), len(outputs))]
    for name, a in list(inputs) + list(outputs):
        a = np.ascontiguousarray(a)
        if a.dtype not in CODE_OF:
            a = a.astype(np.float32)
        parts += [struct.pack("<I", len(name.encode())), name.encode(), bytes([CODE_OF[a.dtype]]),
                  struct.pack("<I", a.ndim), struct.pack(f"<{a.ndim}q", *a.shape), struct.pack("<Q", a.nbytes),
                  a.tobytes()]
    tmp = path + ".tmp"
    with open(tmp, "wb") as f:
        f.write(b"".join(parts))
    os.replace(tmp, path)


def first_line(e):
    return (f"{type(e).__name__}: {e}".strip().splitlines() or [type(e).__name__])[0][:400]


def as_torch(a):
    """A tensor with the strides ExecuTorch's bridge checks: it aborts the process on any other. An empty
    tensor (a past of length 0) gets the strides of its shape with every 0 counted as 1, where torch and
    numpy would write 0."""
    import torch

    if a.size:
        return torch.tensor(a)
    strides, step = [], 1
    for d in reversed(a.shape):
        strides.insert(0, step)
        step *= max(d, 1)
    return torch.empty_strided(a.shape, strides, dtype=torch.from_numpy(a).dtype)


def run_pte(path, calls, out, results):
    import torch
    from executorch.extension.pybindings import portable_lib

    stem = os.path.splitext(os.path.basename(path))[0]
    module = portable_lib._load_for_executorch(path)
    names = sorted(glob.glob(os.path.join(calls, f"{stem}.*.call")))
    for f in names:
        method, expect_error, inputs, _ = read_fixture(f)
        target = os.path.join(out, os.path.basename(f))
        open(os.path.join(out, stem + ".running"), "w").write(os.path.basename(f))
        try:
            outs = module.run_method(method, [as_torch(a) for _, a in inputs])
            write_fixture(target, method, expect_error, [],
                          [(f"output.{i}", o.detach().numpy()) for i, o in enumerate(outs)])
        except Exception as e:  # the runtime refused the call: hfx decides whether it should have
            open(target + ".error", "w").write(first_line(e))
    os.remove(os.path.join(out, stem + ".running"))
    results[os.path.basename(path)] = f"ok: {len(names)} calls"


def flatten(prefix, v, flat):
    if isinstance(v, dict):
        for k, x in v.items():
            flatten(f"{prefix}.{k}" if prefix else k, x, flat)
    elif isinstance(v, (list, tuple)):
        pair = len(v) == 2 and prefix.count(".") == 1  # one layer's (key, value)
        for i, x in enumerate(v):
            flatten(f"{prefix}.{('key', 'value')[i] if pair else i}", x, flat)
    elif v is not None:
        flat.append((prefix, v.detach().numpy() if hasattr(v, "detach") else np.asarray(v)))


def kwargs_of(spec, feeds):
    """The program's keyword arguments from flat named tensors: a leaf by its keyword (past_conv.0 is the
    keyword past_conv_0), a list of (key, value) pairs from past_key_values.N.key / .value."""
    import re

    import torch

    by_keyword = {re.sub(r"[^0-9A-Za-z_]", "_", k): k for k in feeds}

    def leaf(name):
        return torch.tensor(feeds[name if name in feeds else by_keyword[name]])

    kw = {}
    for name, child in zip(spec.context, spec.children()):
        if child.is_leaf():
            kw[name] = leaf(name)
        else:
            kw[name] = [tuple(leaf(f"{name}.{i}.{kv}") for kv in ("key", "value")) if not c.is_leaf()
                        else leaf(f"{name}.{i}") for i, c in enumerate(child.children())]
    return kw


def probes_of(ep, kw):
    """One call per bounded symbol of the first call's inputs: every axis of that size one past its upper
    bound together (a consistent call, so the refusal is the range's, not a mismatch's)."""
    import torch

    bounds = {str(s): int(r.upper) for s, r in ep.range_constraints.items() if r.upper is not None
              and str(r.upper) not in ("int_oo", "oo", "inf")}
    flat, tree = torch.utils._pytree.tree_flatten(kw)
    users = [n for n in ep.graph.nodes if n.op == "placeholder"][-len(flat):]
    probes = []
    for sym, upper in sorted(bounds.items()):
        bad, where = list(flat), []
        for i, (t, node) in enumerate(zip(flat, users)):
            shape = list(t.shape)
            for axis, size in enumerate(node.meta["val"].shape):
                if str(size) == sym:
                    shape[axis] = upper + 1
                    where.append(f"{node.name}[{axis}]")
            if shape != list(t.shape):
                bad[i] = torch.zeros(shape, dtype=t.dtype)
        if where:
            probes.append((f"{sym} = {upper + 1} (bound {upper}: {', '.join(where[:3])})",
                           torch.utils._pytree.tree_unflatten(bad, tree)))
    return probes


def run_pt2(path, calls, out, results):
    """Every saved call of the program (the generation loop's real calls, several shapes), then one call per
    bounded symbol one past its bound, which the program must refuse."""
    import torch

    stem = os.path.splitext(os.path.basename(path))[0]
    try:
        ep = torch.export.load(path)
        module = ep.module()
        spec = ep.call_spec.in_spec.children()[1]
        names = sorted(glob.glob(os.path.join(calls, f"{stem}.*.call")))
        first = None
        for f in names:
            method, _, inputs, _ = read_fixture(f)
            kw = kwargs_of(spec, dict(inputs))
            first = first or kw
            target = os.path.join(out, os.path.basename(f))
            try:
                with torch.no_grad():
                    outputs = module(**kw)
                outs = []
                flatten("", outputs, outs)
                write_fixture(target, method, False, [], outs)
            except Exception as e:
                open(target + ".error", "w").write(first_line(e))
        for k, (what, kw) in enumerate(probes_of(ep, first) if first else []):
            target = os.path.join(out, f"{stem}.forward.probe{k}.call")
            try:
                with torch.no_grad():
                    module(**kw)
                write_fixture(target, what, True, [], [])  # ran: the contract did not hold
            except Exception as e:
                open(target + ".error", "w").write(f"{what}: {first_line(e)}")
        results[os.path.basename(path)] = f"ok: {len(names)} calls"
    except Exception as e:
        open(os.path.join(out, f"{stem}.forward.000.call.error"), "w").write(first_line(e))
        results[os.path.basename(path)] = first_line(e)
        traceback.print_exc(file=sys.stderr)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--calls", required=True)
    ap.add_argument("--out", required=True)
    ap.add_argument("--pte", action="append", default=[])
    ap.add_argument("--pt2", action="append", default=[])
    ap.add_argument("--child", action="store_true", help="replay the one --pte here (run by the parent)")
    a = ap.parse_args()
    versions, results = {}, {}
    import torch

    versions["torch"] = torch.__version__
    if a.pte:
        from executorch import version as et_version

        versions["executorch"] = et_version.__version__
    if a.child:  # one .pte in this process: a runtime abort ends only this file's replay
        run_pte(a.pte[0], a.calls, a.out, results)
        print(json.dumps(results))
        return
    for p in a.pte:
        stem = os.path.splitext(os.path.basename(p))[0]
        r = subprocess.run([sys.executable, __file__, "--calls", a.calls, "--out", a.out, "--pte", p, "--child"],
                           capture_output=True, text=True)
        if r.returncode == 0:
            results.update(json.loads(r.stdout.strip().splitlines()[-1]))
            continue
        marker = os.path.join(a.out, stem + ".running")
        at = open(marker).read() if os.path.exists(marker) else "loading the program"
        tail = [line for line in r.stderr.splitlines() if line.strip()][-1:] or [""]
        results[os.path.basename(p)] = f"the runtime process ended with exit code {r.returncode} at {at}: {tail[0][:300]}"
        sys.stderr.write(r.stderr)
    for p in a.pt2:
        run_pt2(p, a.calls, a.out, results)
    print(json.dumps({"versions": versions, "results": results}))


if __name__ == "__main__":
    main()
