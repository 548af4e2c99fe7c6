"""Goldens for Whisper from the real transformers (WhisperForConditionalGeneration, float32, eager attention,
CPU, eval; from_pretrained through hfg_common.load) on an `hfx create-tiny whisper` checkpoint. Run with the
project's venv through tools/hf_goldens/make_whisper_goldens.sh.

The input_features are a formula both sides compute (no 240k numbers in the repository):
    features[b, m, t] = 0.5 * sin(0.37 * (m * FRAMES + t) + 1.3 * b)   (float32)
Written (numbers only):
  encoder: last_hidden_state rows at frames 0, 50, 100, ... (all d_model columns) per batch row, plus the
           sum and the sum of |x| over the whole tensor;
  decoder: teacher-forced logits over `decoder_input_ids` (the Whisper prompt + 4 tokens): every position's
           logits at the vocabulary ids in `logit_ids`, and the full last-position row;
  greedy:  model.generate(input_features, language="en", task="transcribe", max_new_tokens=N) per row (the
           real Whisper generation: forced prompt, suppress_tokens, begin_suppress_tokens);
  timestamps: the same with return_timestamps=True (no <|notimestamps|> in the prompt,
           WhisperTimeStampLogitsProcessor; generate() returns the prompt and the finished segments' tokens);
  detected: generate() with no language (detect_language picks the prompt's language token).
  (Each of those three: 5.x's window loop, re-decoding from the last timestamp pair; the first call's prompt,
  the joined sequence and the segments are written.)
  single_call: greedy with force_unique_generate_call=True: the one call's prompt, tokens and EOS.
  longform: generate() on LONG_FRAMES (> 3000) frames of the same formula (transformers' sequential long-form
           transcription: 30-second windows, each advanced to its last timestamp), return_timestamps=True,
           return_segments=True: the sequence and every segment's start, end and tokens;
  longform_features: WhisperFeatureExtractor(truncation=False, padding="longest") on LONG_SAMPLES samples of
           wave(i) = 0.3 sin(2 pi 440 i / 16000) (1 + 0.5 sin(2 pi 0.7 i / 16000)) + 0.05 sin(0.001 i^1.5 / 16000)
           (float32): the frame count, every mel at the frames in `cols`, the sum and the sum of |x|.
"""
import argparse
import hashlib
import json
import math
import os
import sys

import numpy as np

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import hfg_common as C  # noqa: E402  (offline set-up, loader)

import torch  # noqa: E402
from transformers import GenerationConfig, WhisperConfig, WhisperForConditionalGeneration  # noqa: E402


def features(batch, mels, frames):
    m = np.arange(mels, dtype=np.float64)[:, None]
    t = np.arange(frames, dtype=np.float64)[None, :]
    return np.stack([(0.5 * np.sin(0.37 * (m * frames + t) + 1.3 * b)).astype(np.float32) for b in range(batch)])


LONG_FRAMES = 7300
LONG_SAMPLES = 16000 * 45 + 123


def long_wave(n):
    i = np.arange(n, dtype=np.float64)
    w = 0.3 * np.sin(2 * np.pi * 440 * i / 16000) * (1 + 0.5 * np.sin(2 * np.pi * 0.7 * i / 16000))
    return (w + 0.05 * np.sin(0.001 * i ** 1.5 / 16000)).astype(np.float32)


def r(x):
    return float(f"{x:.9g}")


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("ckpt")
    ap.add_argument("-o", "--out", required=True)
    ap.add_argument("--source", default="")
    ap.add_argument("--max-new-tokens", type=int, default=24)
    a = ap.parse_args()
    C.setup()
    config = WhisperConfig.from_pretrained(a.ckpt)
    model, notes = C.load(a.ckpt, WhisperForConditionalGeneration, config)
    gen = GenerationConfig.from_pretrained(a.ckpt)
    frames = 2 * config.max_source_positions
    feats = features(2, config.num_mel_bins, frames)
    x = torch.from_numpy(feats)
    sot = gen.decoder_start_token_id
    prompt = [sot, gen.lang_to_id["<|en|>"], gen.task_to_id["transcribe"], gen.no_timestamps_token_id]
    body = [300, 301, 415, 7]
    dec = torch.tensor([prompt + body, prompt + body[::-1]], dtype=torch.long)
    logit_ids = sorted(set([0, 1, 5, 100, 255, 256, 300, config.vocab_size - 1] + list(range(sot - 3, sot + 16))))
    with torch.no_grad():
        enc = model.model.encoder(x).last_hidden_state
        logits = model(input_features=x, decoder_input_ids=dec).logits
        runs = {}
        for name, extra in (("greedy", dict(language="en")), ("timestamps", dict(language="en", return_timestamps=True)),
                            ("detected", {})):
            runs[name] = [model.generate(x[b:b + 1], generation_config=gen, task="transcribe", return_segments=True,
                                         max_new_tokens=a.max_new_tokens, do_sample=False, num_beams=1, **extra)
                          for b in range(2)]
        # force_unique_generate_call: one call, its raw sequence (prompt, tokens, EOS) as Transformers.js gives
        single = [[int(t) for t in model.generate(x[b:b + 1], generation_config=gen, language="en", task="transcribe",
                                                  max_new_tokens=a.max_new_tokens, do_sample=False, num_beams=1,
                                                  force_unique_generate_call=True)[0].tolist()] for b in range(2)]
        xl = torch.from_numpy(features(1, config.num_mel_bins, LONG_FRAMES))
        lf = model.generate(xl, generation_config=gen, language="en", task="transcribe", return_timestamps=True,
                            return_segments=True, max_new_tokens=a.max_new_tokens, do_sample=False, num_beams=1)
        longform = {"frames": LONG_FRAMES, "max_new_tokens": a.max_new_tokens,
                    "sequence": [int(t) for t in lf["sequences"][0].tolist()],
                    "segments": [{"start": r(float(sg["start"])), "end": r(float(sg["end"])),
                                  "tokens": [int(t) for t in sg["tokens"].tolist()]} for sg in lf["segments"][0]]}
    from transformers import WhisperFeatureExtractor
    fe = WhisperFeatureExtractor.from_pretrained(a.ckpt)
    lfe = fe(long_wave(LONG_SAMPLES), sampling_rate=16000, truncation=False, padding="longest",
             return_tensors="np").input_features[0]
    cols = [0, 1, 1000, 2999, 3000, 4321, lfe.shape[1] - 1]
    longform_features = {"samples": LONG_SAMPLES, "frames": int(lfe.shape[1]), "cols": cols,
                         "values": [[r(float(lfe[m, t])) for m in range(lfe.shape[0])] for t in cols],
                         "sum": r(float(lfe.astype(np.float64).sum())),
                         "abs_sum": r(float(np.abs(lfe.astype(np.float64)).sum()))}
    # 5.x runs one window through the same loop as long-form audio: each call's sequence (its prompt and EOS
    # dropped) is cut into segments and the window is decoded again from its last timestamp until the seek
    # passes the end; generate() returns the segments' tokens joined. Each row keeps that sequence, the first
    # call's prompt (the language transformers forced or detected) and the segments.
    def record(outs, plen):
        return {"prompts": [[int(t) for t in o["segments"][0][0]["result"][:plen].tolist()] for o in outs],
                "sequences": [[int(t) for t in o["sequences"][0].tolist()] for o in outs],
                "segments": [[{"start": r(float(sg["start"])), "end": r(float(sg["end"])),
                               "tokens": [int(t) for t in sg["tokens"].tolist()]} for sg in o["segments"][0]]
                             for o in outs]}
    for name, plen in (("greedy", 4), ("timestamps", 3), ("detected", 4)):
        for b, o in enumerate(runs[name]):
            if not o["segments"][0]:
                raise SystemExit(f"{name} row {b}: generate() returned no segment (transformers {C.versions()})")
    greedy = record(runs["greedy"], 4)
    timestamps = record(runs["timestamps"], 3)
    detected = record(runs["detected"], 4)
    rows = list(range(0, config.max_source_positions, 50))
    golden = {
        "source": a.source,
        "weights_sha256": hashlib.sha256(open(os.path.join(a.ckpt, "model.safetensors"), "rb").read()).hexdigest(), "transformers": __import__("transformers").__version__, "torch": torch.__version__,
        "notes": notes, "features": "0.5*sin(0.37*(m*FRAMES+t)+1.3*b)", "frames": frames,
        "encoder": {"rows": rows,
                    "values": [[[r(v) for v in enc[b, t].tolist()] for t in rows] for b in range(2)],
                    "sum": [r(float(enc[b].double().sum())) for b in range(2)],
                    "abs_sum": [r(float(enc[b].double().abs().sum())) for b in range(2)]},
        "decoder": {"decoder_input_ids": dec.tolist(), "logit_ids": logit_ids,
                    "logits": [[[r(logits[b, s, i].item()) for i in logit_ids] for s in range(dec.shape[1])] for b in range(2)],
                    "last_row": [[r(v) for v in logits[b, -1].tolist()] for b in range(2)]},
        "greedy": {"prompt": prompt, "max_new_tokens": a.max_new_tokens, **greedy},
        "timestamps": {"prompt": prompt[:3], "max_new_tokens": a.max_new_tokens, **timestamps},
        "detected": {"max_new_tokens": a.max_new_tokens, **detected},
        "single_call": {"max_new_tokens": a.max_new_tokens, "sequences": single},
        "longform": longform,
        "longform_features": longform_features,
    }
    with open(a.out, "w") as f:
        json.dump(golden, f, separators=(",", ":"))
        f.write("\n")
    print(f"wrote {a.out}: greedy {greedy['sequences']}, timestamps {timestamps['sequences']}, "
          f"detected {detected['sequences']}", file=sys.stderr)


if __name__ == "__main__":
    main()
