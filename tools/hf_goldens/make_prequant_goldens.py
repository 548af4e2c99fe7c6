"""Goldens of a pre-quantized (GPTQ or AWQ) `hfx create-tiny ... --quantize gptq|awq` checkpoint from the real
transformers (project venv): the packed codes are de-quantized here, by the published formulas of AutoGPTQ and
AutoAWQ (written out below, not hfx's code), into a float state dict, which the real transformers model runs.

  .venv/bin/python tools/hf_goldens/make_prequant_goldens.py DIR OUT.json

De-quantization, per linear layer P with K input and N output features, group g (K when group_size is -1):
  GPTQ (AutoGPTQ's QuantLinear, bits b, checkpoint_format "gptq" = v1):
    weight[k, n] = (qweight[k // (32/b), n] >> (b * (k % (32/b)))) & (2^b - 1)
    zeros[i, n]  = ((qzeros[i, n // (32/b)] >> (b * (n % (32/b)))) & (2^b - 1)) + 1      (v2: no + 1)
    W[n, k] = scales[g_idx[k], n] * (weight[k, n] - zeros[g_idx[k], n])
  AWQ (AutoAWQ GEMM, 4 bits): columns packed along N in the order AWQ_ORDER = [0, 2, 4, 6, 1, 3, 5, 7]
    (pack: qweight[:, c] |= intweight[:, 8c + AWQ_ORDER[i]] << 4i), so unpacking shifts by 4 * i and
    reorders with AWQ_REVERSE_ORDER = [0, 4, 1, 5, 2, 6, 3, 7]; qzeros the same; no + 1:
    W[n, k] = scales[k // g, n] * (iweight[k, n] - izeros[k // g, n])
The quantization_config is removed from the config before the model is built (the float model runs).
Writes "cases": per prompt, input_ids, the logits of every position and 32 greedy tokens by full
recomputation. float32, eager attention, CPU.
"""
import json
import os
import sys

import numpy as np

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import hfg_common as C  # noqa: E402  (offline set-up, loader)

import torch  # noqa: E402
import transformers  # noqa: E402
from safetensors.torch import load_file  # noqa: E402
from transformers import AutoConfig  # noqa: E402

AWQ_REVERSE_ORDER = [0, 4, 1, 5, 2, 6, 3, 7]


def unpack_rows(q, bits):
    """int32 [R, C] -> uint [R * 32/bits, C]: the fields of each word along the rows (GPTQ qweight)."""
    per = 32 // bits
    u = q.astype(np.uint32)
    out = np.zeros((q.shape[0] * per, q.shape[1]), dtype=np.int64)
    for i in range(per):
        out[i::per, :] = (u >> (bits * i)) & ((1 << bits) - 1)
    return out


def unpack_cols(q, bits):
    """int32 [R, C] -> uint [R, C * 32/bits]: the fields of each word along the columns (GPTQ qzeros)."""
    per = 32 // bits
    u = q.astype(np.uint32)
    out = np.zeros((q.shape[0], q.shape[1] * per), dtype=np.int64)
    for i in range(per):
        out[:, i::per] = (u >> (bits * i)) & ((1 << bits) - 1)
    return out


def unpack_awq(q):
    """AutoAWQ's unpack_awq + reverse_awq_order: int32 [R, C] -> [R, 8C]."""
    u = q.astype(np.uint32)
    fields = np.stack([(u >> (4 * i)) & 0xF for i in range(8)], axis=-1)  # [R, C, 8], nibble i
    fields = fields[:, :, AWQ_REVERSE_ORDER]  # output j of each column sits in nibble AWQ_REVERSE_ORDER[j]
    return fields.reshape(q.shape[0], q.shape[1] * 8).astype(np.int64)


def dequantize(raw, qc):
    sd = {}
    method, bits = qc["quant_method"], qc["bits"]
    prefixes = [k[: -len(".qweight")] for k in raw if k.endswith(".qweight")]
    for name, arr in raw.items():
        leaf = name.rsplit(".", 1)[-1]
        if leaf in ("qweight", "qzeros", "scales", "g_idx") and name.rsplit(".", 1)[0] in prefixes:
            continue
        sd[name] = torch.from_numpy(np.array(arr, dtype=np.float32) if arr.dtype != np.float32 else arr.copy())
    for p in prefixes:
        qweight, qzeros = raw[p + ".qweight"], raw[p + ".qzeros"]
        scales = raw[p + ".scales"].astype(np.float32)
        if method == "gptq":
            w = unpack_rows(qweight, bits)  # [K, N]
            z = unpack_cols(qzeros, bits) + (0 if qc.get("checkpoint_format", "gptq") == "gptq_v2" else 1)
            K = w.shape[0]
            g_idx = raw[p + ".g_idx"].astype(np.int64) if p + ".g_idx" in raw else np.arange(K) // qc["group_size"]
        else:
            w = unpack_awq(qweight)
            z = unpack_awq(qzeros)
            K = w.shape[0]
            g = qc["group_size"] if qc["group_size"] > 0 else K
            g_idx = np.arange(K) // g
        W = scales[g_idx, :] * (w - z[g_idx, :]).astype(np.float32)  # [K, N]
        sd[p + ".weight"] = torch.from_numpy(np.ascontiguousarray(W.T))
    return sd


def greedy(model, ids, n=32):
    gen = list(ids)
    with torch.no_grad():
        for _ in range(n):
            gen.append(int(model(input_ids=torch.tensor([gen])).logits[0, -1].argmax()))
    return gen[len(ids):]


def main():
    d, out = sys.argv[1], sys.argv[2]
    C.setup()
    cfg_json = json.load(open(os.path.join(d, "config.json")))
    qc = cfg_json.pop("quantization_config")
    config = AutoConfig.for_model(**cfg_json)
    cls = getattr(transformers, cfg_json["architectures"][0])
    torch.manual_seed(0)
    model = cls._from_config(config, attn_implementation="eager", dtype=torch.float32)
    raw = {k: (v.float() if v.dtype == torch.bfloat16 else v).numpy()
           for k, v in load_file(os.path.join(d, "model.safetensors")).items()}
    notes = C.load_state_dict_into(model, dequantize(raw, qc))
    model = model.float().eval()
    cases = []
    for ids in ([1, 17, 42, 99, 7, 250, 3, 64], [1, 5, 300, 301, 302, 11]):
        with torch.no_grad():
            logits = model(input_ids=torch.tensor([ids])).logits[0]
        cases.append({"input_ids": ids, "logits": [[float(x) for x in row] for row in logits],
                      "greedy": greedy(model, ids)})
    json.dump({"oracle": f"transformers {transformers.__version__}, torch {torch.__version__}", **C.versions(),
               "quantization_config": qc, "load_notes": notes, "cases": cases}, open(out, "w"))
    print(f"wrote {out}: {len(cases)} cases")


if __name__ == "__main__":
    main()
