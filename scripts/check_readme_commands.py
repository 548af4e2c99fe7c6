"""scripts/check_readme_commands.py DOC.md [DOC.md ...] HFX — every command line of the docs' ```sh blocks runs as
written (issue 44's doc tests), and README.md's list of supported architectures is the registry's.

Each document's lines run in order, in one fresh temp folder of its own (a quick start's `create-tiny` makes
what its `export` reads), with `hfx` replaced by the binary given. The folder holds the files a reader brings:
`cat.png` (an RGB image) and `speech.wav` (a second of 16 kHz speech-band tone), and a Hugging Face cache
(HF_HUB_CACHE, HF_HUB_OFFLINE=1) serving the model ids the documents name (HUB_MODELS) as tiny checkpoints
of their architecture. Not run, and listed as such: another model id (needs the network), the set-up, test and fuzzing commands themselves (`bash scripts/...`:
they are what runs this check, or CI tiers of their own), and measurements (`bash bench/...`, `cmake --build`,
a bench binary: tests do not time things). Synopses with placeholders belong in ```text blocks. Exit 1 when a
line fails, when a line names a placeholder in capitals, or when no line ran. `--selftest` runs it on a
document whose command fails, which must exit 1 (the negative control). Python 3 standard library only (ctest
runs it as docs.commands over README.md and docs/*.md).
"""
import math
import os
import re
import struct
import subprocess
import sys
import tempfile
import wave
import zlib

PLACEHOLDER = re.compile(r"\b[A-Z][A-Z0-9]*(?:_[A-Z0-9]+)+\b")
HUB_ID = re.compile(r"^(?:HF_\w+=\S+ )?hfx \w+ ([\w-]+/[A-Za-z][\w.-]*)(?:@[\w.-]+)?\s")
# The model ids the documents name, served from a Hugging Face cache made here (HF_HUB_OFFLINE=1: no network):
# each is a tiny checkpoint of the id's architecture, so a line naming it runs as written.
HUB_MODELS = {"Qwen/Qwen2.5-0.5B-Instruct": "qwen2", "HuggingFaceTB/SmolLM2-135M": "llama"}
FAKE_COMMIT = "0123456789abcdef0123456789abcdef01234567"
MEASUREMENT = re.compile(r"^(?:bash bench/|cmake --build|(?:\w+=\S+ )*build/bench/)")


def hub_cache(work: str, hfx: str) -> str:
    """An HF cache (huggingface_hub's layout: refs/main -> snapshots/<commit>/) holding HUB_MODELS."""
    cache = os.path.join(work, ".hub")
    for model_id, arch in HUB_MODELS.items():
        repo = os.path.join(cache, "models--" + model_id.replace("/", "--"))
        os.makedirs(os.path.join(repo, "refs"), exist_ok=True)
        subprocess.run([hfx, "--quiet", "create-tiny", arch, "-o", os.path.join(repo, "snapshots", FAKE_COMMIT)],
                       check=True, capture_output=True)
        with open(os.path.join(repo, "refs", "main"), "w") as f:
            f.write(FAKE_COMMIT)
    return cache


def reader_files(work: str) -> None:
    """cat.png and speech.wav: what the documents' commands take as the reader's own files."""
    w = h = 30
    raw = b"".join(b"\x00" + bytes((x * 7 + y * 3 + c * 50) % 256 for x in range(w) for c in range(3))
                   for y in range(h))

    def chunk(tag, data):
        return struct.pack(">I", len(data)) + tag + data + struct.pack(">I", zlib.crc32(tag + data) & 0xFFFFFFFF)
    with open(os.path.join(work, "cat.png"), "wb") as f:
        f.write(b"\x89PNG\r\n\x1a\n" + chunk(b"IHDR", struct.pack(">IIBBBBB", w, h, 8, 2, 0, 0, 0))
                + chunk(b"IDAT", zlib.compress(raw)) + chunk(b"IEND", b""))
    with wave.open(os.path.join(work, "speech.wav"), "wb") as f:
        f.setnchannels(1)
        f.setsampwidth(2)
        f.setframerate(16000)
        f.writeframes(b"".join(struct.pack("<h", int(8000 * math.sin(2 * math.pi * 440 * i / 16000)))
                               for i in range(16000)))


def commands(text: str) -> list:
    out, inside = [], False
    for line in text.splitlines():
        if line.startswith("```"):
            inside = line.strip() == "```sh" if not inside else False
            continue
        if inside and line.strip() and not line.lstrip().startswith("#"):
            out.append(line.strip())
    return out


def check(readme: str, hfx: str) -> int:
    lines = commands(open(readme, encoding="utf-8").read())
    ran, listed, failed = 0, [], []
    with tempfile.TemporaryDirectory(prefix="hfx_readme_") as work:
        reader_files(work)
        env = dict(os.environ, HF_HUB_CACHE=hub_cache(work, hfx), HF_HUB_OFFLINE="1")
        for line in lines:
            if line.startswith("bash scripts/"):
                listed.append(f"{line}  (the set-up, test and fuzzing commands themselves)")
                continue
            if MEASUREMENT.search(line):
                listed.append(f"{line}  (a measurement: bench/, not run by tests)")
                continue
            hub = HUB_ID.search(line)
            if hub and hub.group(1) not in HUB_MODELS:
                listed.append(f"{line}  (a model id on the Hub: needs the network)")
                continue
            if PLACEHOLDER.search(re.sub(r"^(?:\w+=\S+ )+", "", line.split("  #")[0])):
                failed.append(f"{line}: expected a command that runs as written, got a placeholder (put a "
                              "synopsis in a ```text block)")
                continue
            if not re.match(r"^(?:\w+=\S+ )*hfx ", line):
                failed.append(f"{line}: expected an `hfx` command or a set-up command, got another program")
                continue
            cmd = re.sub(r"(^(?:\w+=\S+ )*|&& )hfx ", lambda m: f"{m.group(1)}{hfx} --quiet ", line.split("  #")[0])
            r = subprocess.run(["bash", "-c", cmd], cwd=work, env=env, capture_output=True, text=True, timeout=600)
            ran += 1
            if r.returncode != 0:
                failed.append(f"{line}: exit {r.returncode}: {(r.stderr or r.stdout).strip()[-300:]}")
    print(f"[docs] {readme}: {ran} command lines ran as written, {len(failed)} failed, {len(listed)} not run:")
    for x in listed:
        print(f"  not run: {x}")
    for x in failed:
        print(f"  FAILED: {x}")
    check.ran += ran
    return 1 if failed else 0


check.ran = 0


def check_all(docs: list, hfx: str) -> int:
    """Every document with a ```sh block; README.md's architecture list too."""
    rc = 0
    for doc in docs:
        if not commands(open(doc, encoding="utf-8").read()):
            continue
        rc = max(rc, check(doc, hfx))
        if os.path.basename(doc) == "README.md":
            rc = max(rc, check_architectures(doc, hfx))
    if check.ran == 0:
        print("[docs] expected command lines to run, got none")
        return 1
    print(f"[docs] {check.ran} command lines ran as written over {len(docs)} documents")
    return rc


def check_architectures(readme: str, hfx: str) -> int:
    """README's "Supported architectures" names every model_type of the registry (`hfx create-tiny --help`) and
    states their number."""
    text = open(readme, encoding="utf-8").read()
    m = re.search(r"^## Supported architectures\n(.*?)(?=^## )", text, re.S | re.M)
    if not m:
        print(f"[readme] expected a '## Supported architectures' section in {readme}, got none")
        return 1
    help_text = subprocess.run([hfx, "create-tiny", "--help"], capture_output=True, text=True).stdout
    h = re.search(r"model_type: ([^\n]+)", help_text)
    registry = [a.strip() for a in h.group(1).split(",")] if h else []
    section = m.group(1)
    missing = [a for a in registry if not re.search(rf"(?<![\w-]){re.escape(a)}(?![\w-])", section)]
    count = re.search(r"(\d+) model types", section)
    bad = []
    if not registry:
        bad.append("no model_type list in `hfx create-tiny --help`")
    if missing:
        bad.append(f"model types the registry has and README does not name: {missing}")
    if not count or int(count.group(1)) != len(registry):
        bad.append(f"README states {count.group(1) if count else 'no'} model types, the registry has {len(registry)}")
    for b in bad:
        print(f"[readme] FAILED: {b}")
    print(f"[readme] supported architectures: {len(registry)} in the registry, {len(missing)} missing from README")
    return 1 if bad else 0


def selftest(hfx: str) -> int:
    with tempfile.NamedTemporaryFile("w", suffix=".md", delete=False) as f:
        f.write("```sh\nhfx export no-such-folder --format onnx -o out\n```\n")
    try:
        rc = check(f.name, hfx)
    finally:
        os.unlink(f.name)
    if rc == 0:
        print("[readme] selftest: expected a failing command to fail the check, got a pass")
        return 1
    print("[readme] selftest: a failing command fails the check")
    return 0


if __name__ == "__main__":
    if len(sys.argv) < 3:
        sys.exit("usage: check_readme_commands.py DOC.md [DOC.md ...] HFX | --selftest HFX")
    binary = os.path.abspath(sys.argv[-1])
    if not os.access(binary, os.X_OK):
        sys.exit(f"[readme] expected the hfx binary at {binary}, got none: build it (scripts/build.sh release)")
    if sys.argv[1] == "--selftest":
        sys.exit(selftest(binary))
    sys.exit(check_all(sys.argv[1:-1], binary))
