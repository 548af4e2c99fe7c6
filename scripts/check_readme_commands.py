"""scripts/check_readme_commands.py [--tier fuzz|bench] DOC.md [DOC.md ...] HFX — every command line of the
docs' ```sh blocks runs as written (issue 44's doc tests), and README.md's list of supported architectures is
the registry's.

Each document's `hfx` lines run in order, in one fresh temp folder of its own (a quick start's `create-tiny`
makes what its `export` reads), with `hfx` replaced by the binary given. The folder holds the files a reader
brings: `cat.png` (an RGB image) and `speech.wav` (a second of 16 kHz speech-band tone), and a Hugging Face
cache (HF_HUB_CACHE, HF_HUB_OFFLINE=1) serving the model ids the documents name (HUB_MODELS) as tiny
checkpoints of their architecture. Other lines:
  - `bash scripts/...` (the set-up and the demo, the main job): run in the repository, the demo with HFX_BIN
    (the binary given) and its output in the temp folder;
  - .ci/run's own line (set-up and tests): CI runs it as written, so it is compared, not run (a line naming
    scripts/test.sh that is not .ci/run's fails);
  - `bash scripts/fuzz.sh ...`: `--tier fuzz` runs them, each target's time and runs capped (HFX_FUZZ_MAX_SECONDS,
    _MAX_RUNS); scripts/test.sh does after its fuzz tier, which builds what they need;
  - measurements (`bash bench/...`, `.venv/bin/python bench/...`, `cmake --build`, a bench binary): `--tier bench` runs them as written, the
    slow tier HFX_CI_DOC_BENCH=1 of scripts/test.sh (tests do not time things; this checks they still run);
  - another model id: listed, not run (needs the network).
Synopses with placeholders belong in ```text blocks. Exit 1 when a line fails, when a line names a placeholder in
capitals, or when no line ran. `--selftest` runs it on a document whose command fails, which must exit 1 (the
negative control). Python 3 standard library only (ctest runs it as docs.commands over README.md and docs/*.md).
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
ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
MEASUREMENT = re.compile(r"^(?:bash bench/|\.venv/bin/python bench/|cmake --build|(?:\w+=\S+ )*build/bench/)")


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


def ci_line() -> str:
    """The command .ci/run runs: CI runs a document's line equal to it as written."""
    lines = [x.strip() for x in open(os.path.join(ROOT, ".ci", "run"), encoding="utf-8")]
    return next((x for x in reversed(lines) if x and not x.startswith("#")), "")


def kind(line: str) -> str:
    """run: here, in the document's folder; script: here, in the repository (the demo); ci: .ci/run's own line;
    fuzz / bench: their tiers (`--tier`); hub: a model id this check does not serve."""
    if line == ci_line():
        return "ci"
    if line.startswith("bash scripts/fuzz.sh"):
        return "fuzz"
    if MEASUREMENT.search(line):
        return "bench"
    if line.startswith("bash scripts/"):
        return "script"
    hub = HUB_ID.search(line)
    return "hub" if hub and hub.group(1) not in HUB_MODELS else "run"


NOT_HERE = {"ci": "CI runs this line as written: it is .ci/run's",
            "fuzz": "the fuzz tier runs it (scripts/test.sh: check_readme_commands.py --tier fuzz, capped by "
                    "HFX_FUZZ_MAX_SECONDS/_MAX_RUNS)",
            "bench": "a measurement: the bench tier runs it (HFX_CI_DOC_BENCH=1 bash scripts/test.sh)",
            "hub": "a model id on the Hub: needs the network"}
TIER_ENV = {"fuzz": {"HFX_FUZZ_MAX_SECONDS": "1", "HFX_FUZZ_MAX_RUNS": "2000"}, "bench": {}}


def run_line(line: str, where: str, cwd: str, env: dict, hfx: str) -> str:
    """Runs one line; returns "" or why it failed."""
    if where == "run" and not re.match(r"^(?:\w+=\S+ )*hfx ", line):
        return "expected an `hfx` command or a set-up command, got another program"
    if where == "script" and "scripts/test.sh" in line:
        return f"expected the test command as .ci/run runs it ({ci_line()!r}), got another"
    cmd = line.split("  #")[0]
    if where == "run":
        cmd = re.sub(r"(^(?:\w+=\S+ )*|&& )hfx ", lambda m: f"{m.group(1)}{hfx} --quiet ", cmd)
    r = subprocess.run(["bash", "-c", cmd], cwd=cwd, env=env, capture_output=True, text=True, timeout=3600)
    return "" if r.returncode == 0 else f"exit {r.returncode}: {(r.stderr or r.stdout).strip()[-300:]}"


def check(readme: str, hfx: str, tier: str = "") -> int:
    """Runs the document's lines of the default set (tier "") or of one tier (fuzz, bench), in order."""
    lines = commands(open(readme, encoding="utf-8").read())
    ran, listed, failed = 0, [], []
    with tempfile.TemporaryDirectory(prefix="hfx_readme_") as work:
        reader_files(work)
        env = dict(os.environ, HF_HUB_CACHE=hub_cache(work, hfx), HF_HUB_OFFLINE="1")
        for line in lines:
            where = kind(line)
            if tier:
                if where != tier:
                    continue
                extra = dict(TIER_ENV[tier])
                if tier == "bench":  # the release tree's bench binaries; the results not over bench/results.json
                    extra.update(HFX_BENCH_BUILD=os.path.dirname(hfx), HFX_BENCH_RESULTS=os.path.join(work, "r.json"))
                why = run_line(line, where, ROOT, dict(env, **extra), hfx)
            elif where in NOT_HERE:
                listed.append(f"{line}  ({NOT_HERE[where]})")
                continue
            elif PLACEHOLDER.search(re.sub(r"^(?:\w+=\S+ )+", "", line.split("  #")[0])):
                failed.append(f"{line}: expected a command that runs as written, got a placeholder (put a "
                              "synopsis in a ```text block)")
                continue
            elif where == "script":  # the demo: the binary under test, its output in this folder
                why = run_line(line, where, ROOT, dict(env, HFX_BIN=hfx, HFX_DEMO_OUT=os.path.join(work, "demo")),
                               hfx)
            else:
                why = run_line(line, where, work, env, hfx)
            ran += 1
            if why:
                failed.append(f"{line}: {why}")
    print(f"[docs] {readme}{' (' + tier + ' tier)' if tier else ''}: {ran} command lines ran as written, "
          f"{len(failed)} failed, {len(listed)} not run here:")
    for x in listed:
        print(f"  not run here: {x}")
    for x in failed:
        print(f"  FAILED: {x}")
    check.ran += ran
    return 1 if failed else 0


check.ran = 0


def check_all(docs: list, hfx: str, tier: str = "") -> int:
    """Every document with a ```sh block; README.md's architecture list too (default set)."""
    rc = 0
    for doc in docs:
        if not commands(open(doc, encoding="utf-8").read()):
            continue
        rc = max(rc, check(doc, hfx, tier))
        if os.path.basename(doc) == "README.md" and not tier:
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
        sys.exit("usage: check_readme_commands.py [--tier fuzz|bench] DOC.md [DOC.md ...] HFX | --selftest HFX")
    binary = os.path.abspath(sys.argv[-1])
    if not os.access(binary, os.X_OK):
        sys.exit(f"[readme] expected the hfx binary at {binary}, got none: build it (scripts/build.sh release)")
    if sys.argv[1] == "--selftest":
        sys.exit(selftest(binary))
    if sys.argv[1] == "--tier":
        if len(sys.argv) < 5 or sys.argv[2] not in TIER_ENV:
            sys.exit(f"[docs] expected --tier {{{','.join(TIER_ENV)}}} DOC.md... HFX, got {sys.argv[1:]}")
        sys.exit(check_all(sys.argv[3:-1], binary, sys.argv[2]))
    sys.exit(check_all(sys.argv[1:-1], binary))
