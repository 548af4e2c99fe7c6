"""scripts/check_readme_commands.py README HFX — every `hfx` command line of README.md's ```sh blocks runs as
written (issue 44's doc tests, README part), and its list of supported architectures is the registry's.

The lines run in order, in one fresh temp folder (a quick start's `create-tiny` makes what its `export` reads),
with `hfx` replaced by the binary given. A line that names something the reader supplies is not run and is
listed as such: a placeholder in capitals (`WHISPER_CKPT_OR_OUT`, `cat.png`-like files the folder lacks are
refused by hfx and so fail) or a model id on the Hub (needs the network). The set-up commands themselves
(`bash scripts/...`) are what runs this check, so they are listed, not run. Exit 1 when a line fails or when no
line ran. `--selftest` runs it on a README whose command fails, which must exit 1 (the negative control).
Python 3 standard library only (ctest runs it as docs.readme_commands).
"""
import os
import re
import subprocess
import sys
import tempfile

PLACEHOLDER = re.compile(r"\b[A-Z][A-Z0-9]*(?:_[A-Z0-9]+)+\b")
HUB_ID = re.compile(r"^hfx \w+ [A-Za-z][\w.-]*-(?:Instruct|Chat|\d+[BbMm])\b")


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
        for line in lines:
            if line.startswith("bash scripts/"):
                listed.append(f"{line}  (the set-up and test commands themselves)")
                continue
            if PLACEHOLDER.search(line) or HUB_ID.search(line):
                listed.append(f"{line}  (names what the reader supplies)")
                continue
            if not line.startswith("hfx "):
                failed.append(f"{line}: expected an `hfx` command or a set-up command, got another program")
                continue
            cmd = re.sub(r"(^|&& )hfx ", lambda m: f"{m.group(1)}{hfx} --quiet ", line)
            r = subprocess.run(["bash", "-c", cmd], cwd=work, capture_output=True, text=True, timeout=600)
            ran += 1
            if r.returncode != 0:
                failed.append(f"{line}: exit {r.returncode}: {(r.stderr or r.stdout).strip()[-300:]}")
    print(f"[readme] {ran} command lines ran as written, {len(failed)} failed, {len(listed)} not run:")
    for x in listed:
        print(f"  not run: {x}")
    for x in failed:
        print(f"  FAILED: {x}")
    if ran == 0:
        print(f"[readme] expected command lines to run in {readme}, got none")
        return 1
    return 1 if failed else 0


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
    if len(sys.argv) != 3:
        sys.exit("usage: check_readme_commands.py README.md HFX | --selftest HFX")
    binary = os.path.abspath(sys.argv[2])
    if not os.access(binary, os.X_OK):
        sys.exit(f"[readme] expected the hfx binary at {binary}, got none: build it (scripts/build.sh release)")
    if sys.argv[1] == "--selftest":
        sys.exit(selftest(binary))
    sys.exit(max(check(sys.argv[1], binary), check_architectures(sys.argv[1], binary)))
