"""tests/integration/generate_matrix.py HFX ENGINE [ARCH ...] — every `hfx generate` option × every supported
architecture's tiny checkpoint × one engine (eager: the checkpoint; ort: its ONNX export), issue 44's acceptance
test: each combination either runs (exit 0) or is refused (exit 1 or 2) with a message that names the model's
structure ("decoder-only", "encoder-only", "encoder-decoder", "vision-language", "speech"). No other outcome: a
crash, an "[internal]" error, or a refusal that does not name the structure fails the combination.

The architectures are `hfx create-tiny --help`'s list (the model registry); the structure of each is what
`hfx inspect --json` says. A vision-language model gets an image and its processor's image marker in --prompt
(--chat places the marker itself); a speech model gets --audio instead of --prompt. Prints one line per architecture (R runs, refusals by structure, failures)
and every failure with its command and message; exit 1 when a combination fails or nothing ran.
`--selftest` runs it with a fake hfx whose refusal names no structure, which must exit 1 (negative control).
Python 3 standard library only (ctest runs it as generate.matrix_eager / generate.matrix_ort).
"""
import json
import os
import re
import shutil
import struct
import subprocess
import sys
import tempfile
import zlib
from concurrent.futures import ThreadPoolExecutor

# The image marker of each vision-language type's processor (what --prompt must hold once per image).
MARKERS = {"llava": "<image>", "gemma3": "<start_of_image>", "idefics3": "<image>", "smolvlm": "<image>",
           "qwen2_vl": "<|vision_start|><|image_pad|><|vision_end|>"}
TOOLS = '[{"type": "function", "function": {"name": "get_weather", "parameters": {"type": "object"}}}]'

# (name, arguments replacing the base prompt, arguments added to it, stdin)
OPTIONS = [
    ("plain", None, [], None),
    ("greedy", None, ["--greedy"], None),
    ("temperature", None, ["--temperature", "0.7", "--seed", "1"], None),
    ("top-k", None, ["--top-k", "5", "--seed", "1"], None),
    ("top-p", None, ["--top-p", "0.9", "--seed", "1"], None),
    ("repetition-penalty", None, ["--repetition-penalty", "1.3"], None),
    ("stop", None, ["--stop", "e"], None),
    ("ignore-eos", None, ["--ignore-eos"], None),
    ("no-special-tokens", None, ["--no-special-tokens"], None),
    ("json", None, ["--json"], None),
    ("json-stream", None, ["--json", "--stream"], None),
    ("threads", None, ["--threads", "1"], None),
    ("max-new-tokens-0", None, [], None),
    ("quantize-int8", None, ["--quantize", "int8"], None),
    ("quantize-int4", None, ["--quantize", "int4", "--group-size", "32", "--symmetric"], None),
    ("quantize-int4-act-int8", None, ["--quantize", "int4", "--activations", "int8"], None),
    ("quantize-embedding", None, ["--quantize", "int8", "--quantize-embedding"], None),
    ("batch", ["--prompt", "{p}", "--prompt", "{p} again"], [], None),
    ("chat", ["--chat", "hi"], [], None),
    ("chat-system", ["--chat", "hi", "--system", "Be brief."], [], None),
    ("chat-json", ["--chat", "hi", "--json"], [], None),
    ("chat-interactive", ["--chat", "-i"], [], "hi\nmore\n"),
    ("chat-tools", ["--chat", "hi", "--tools", "{tools}"], [], None),
    ("image", None, ["--image", "{image}"], None),
]


def wav(path):
    """A second of a 16 kHz tone: what a speech model's --audio reads."""
    import math
    import wave
    with wave.open(path, "wb") as f:
        f.setnchannels(1)
        f.setsampwidth(2)
        f.setframerate(16000)
        f.writeframes(b"".join(struct.pack("<h", int(8000 * math.sin(2 * math.pi * 440 * i / 16000)))
                               for i in range(16000)))


def png(path, w=30, h=30):
    raw = b"".join(b"\x00" + bytes((x * 7 + y * 3 + c * 50) % 256 for x in range(w) for c in range(3))
                   for y in range(h))

    def chunk(tag, data):
        return struct.pack(">I", len(data)) + tag + data + struct.pack(">I", zlib.crc32(tag + data) & 0xFFFFFFFF)
    with open(path, "wb") as f:
        f.write(b"\x89PNG\r\n\x1a\n" + chunk(b"IHDR", struct.pack(">IIBBBBB", w, h, 8, 2, 0, 0, 0))
                + chunk(b"IDAT", zlib.compress(raw)) + chunk(b"IEND", b""))


def run(cmd, stdin=None):
    return subprocess.run(cmd, input=stdin, capture_output=True, text=True, errors="replace")


def architectures(hfx):
    out = run([hfx, "create-tiny", "--help"]).stdout
    m = re.search(r"model_type: ([^\n]+)", out)
    return [a.strip() for a in m.group(1).split(",")] if m else []


def names(structure, arch):
    """The words a refusal may use for this model's structure."""
    words = {structure}
    if arch == "whisper":
        words.add("speech")
    return words


def prepare(hfx, engine, arch, work):
    """The model folder for `engine` and its structure; (None, why) when it cannot be made."""
    ckpt = os.path.join(work, arch)
    r = run([hfx, "--quiet", "create-tiny", arch, "-o", ckpt])
    if r.returncode != 0:
        return None, None, f"create-tiny failed: {r.stderr.strip()[-300:]}"
    r = run([hfx, "inspect", ckpt, "--json"])
    if r.returncode != 0:
        return None, None, f"inspect failed: {r.stderr.strip()[-300:]}"
    structure = json.loads(r.stdout)["structure"]
    if engine == "eager":
        return ckpt, structure, None
    out = ckpt + "-onnx"
    r = run([hfx, "--quiet", "export", ckpt, "--format", "onnx", "-o", out])
    if r.returncode != 0:
        return None, None, f"export failed: {r.stderr.strip()[-300:]}"
    return out, structure, None


def judge(hfx, engine, arch, folder, structure, work):
    """One line of outcomes for the architecture and the failures."""
    image = os.path.join(work, "image.png")
    audio = os.path.join(work, "speech.wav")
    tools = os.path.join(work, "tools.json")
    marker = MARKERS.get(arch, "")
    prompt = f"{marker}Hello" if marker else "Hello"
    runs, refused, failures = 0, 0, []
    for name, replace, extra, stdin in OPTIONS:
        base = replace if replace is not None else (["--audio", "{audio}"] if arch == "whisper" else
                                                    ["--prompt", "{p}"])
        if marker and name != "image":
            base = base + ["--image", "{image}"]
        args = [a.format(p=prompt, image=image, audio=audio, tools=tools) for a in base + extra]
        steps = "0" if name == "max-new-tokens-0" else "2"
        cmd = [hfx, "generate", folder, "--engine", engine, "--max-new-tokens", steps, *args]
        r = run(cmd, stdin)
        msg = (r.stderr or r.stdout).strip()
        if r.returncode == 0:
            runs += 1
        elif r.returncode in (1, 2) and "[internal]" not in msg and any(w in msg for w in names(structure, arch)):
            refused += 1
        else:
            failures.append(f"{arch} ({structure}, {engine}) {name}: exit {r.returncode}: {msg[-400:]}\n"
                            f"    {' '.join(cmd)}")
    return runs, refused, failures


def main(argv):
    if argv[1:2] == ["--selftest"]:
        return selftest(argv[2])
    if len(argv) < 3 or argv[2] not in ("eager", "ort"):
        print(__doc__, file=sys.stderr)
        return 2
    hfx, engine = argv[1], argv[2]
    archs = argv[3:] or architectures(hfx)
    work = tempfile.mkdtemp(prefix=f"hfx_generate_matrix_{engine}_")
    try:
        png(os.path.join(work, "image.png"))
        wav(os.path.join(work, "speech.wav"))
        with open(os.path.join(work, "tools.json"), "w") as f:
            f.write(TOOLS)

        def one(arch):
            folder, structure, why = prepare(hfx, engine, arch, work)
            if folder is None:
                return arch, None, 0, 0, [f"{arch} ({engine}): {why}"]
            r, s, f = judge(hfx, engine, arch, folder, structure, work)
            shutil.rmtree(folder, ignore_errors=True)
            return arch, structure, r, s, f

        with ThreadPoolExecutor(max_workers=max(1, min(4, os.cpu_count() or 1))) as pool:
            results = list(pool.map(one, archs))
    finally:
        shutil.rmtree(work, ignore_errors=True)
    total_runs = total_refused = 0
    failures = []
    for arch, structure, r, s, f in results:
        total_runs += r
        total_refused += s
        failures += f
        print(f"[generate-matrix] {engine} {arch:<22} {structure or '?':<16} runs {r:>2}, refused naming the "
              f"structure {s:>2}, failed {len(f)}")
    print(f"[generate-matrix] {engine}: {len(archs)} architectures x {len(OPTIONS)} options: {total_runs} run, "
          f"{total_refused} refused naming the structure, {len(failures)} failed")
    for f in failures:
        print("  FAIL " + f)
    return 1 if failures or total_runs == 0 else 0


def selftest(hfx):
    """A fake hfx whose generate refuses with no structure named: the matrix must fail."""
    work = tempfile.mkdtemp(prefix="hfx_generate_matrix_selftest_")
    try:
        fake = os.path.join(work, "hfx")
        with open(fake, "w") as f:
            f.write(f'#!/bin/sh\nif [ "$1" = generate ]; then echo "hfx: [generate] no" >&2; exit 1; fi\n'
                    f'exec "{hfx}" "$@"\n')
        os.chmod(fake, 0o755)
        rc = main(["generate_matrix.py", fake, "eager", "llama"])
    finally:
        shutil.rmtree(work, ignore_errors=True)
    print(f"[generate-matrix] selftest: a refusal naming no structure {'fails' if rc == 1 else 'PASSES (bad)'}")
    return 0 if rc == 1 else 1


if __name__ == "__main__":
    sys.exit(main(sys.argv))
