#!/usr/bin/env python3
"""scripts/gen_docs.py HFX [--check] — the parts of docs/ that are generated from the code.

Each generated block of a doc sits between `<!-- generated: COMMAND -->` and `<!-- end generated -->`; its
content is COMMAND's output (COMMAND starts with `hfx`, run with the binary HFX as argv[0] "hfx"), in a ```text
fence (a `--format markdown` command's output as it is). Today: docs/design.md's pass list of each backend,
docs/cli-reference.md, every command's --help (every subcommand `hfx --help` lists must have its block there),
and README.md's table of supported architectures × export backends (`hfx architectures --format markdown`). Without
--check the blocks are rewritten in place; with --check (ctest docs.generated) nothing is written and the
exit status is 1 naming each block whose text differs from what the code prints now — the doc says what the
code does, or the test fails. `--selftest HFX` runs --check on a doc whose block is stale, which must fail
(the negative control). Python 3 standard library only.
"""
import pathlib
import re
import shlex
import subprocess
import sys
import tempfile

ROOT = pathlib.Path(__file__).resolve().parent.parent
DOCS = ["docs/design.md", "docs/cli-reference.md", "README.md"]
BLOCK = re.compile(r"(<!-- generated: (?P<cmd>[^>]*?) -->\n)(?P<body>.*?)(<!-- end generated -->)", re.S)


def render(hfx: str, cmd: str) -> str:
    argv = shlex.split(cmd)
    if not argv or argv[0] != "hfx":
        sys.exit(f"[docs] error: expected a generated block's command to start with hfx, got '{cmd}'")
    p = subprocess.run(["hfx", *argv[1:]], executable=hfx, capture_output=True, text=True)
    if p.returncode != 0:
        sys.exit(f"[docs] error: '{cmd}' exited {p.returncode}: {p.stderr.strip()}")
    if "--format markdown" in cmd:  # markdown the doc shows as it is (README.md's architecture table)
        return p.stdout.rstrip("\n") + "\n"
    return "```text\n" + p.stdout.rstrip("\n") + "\n```\n"


def process(path: pathlib.Path, hfx: str, check: bool) -> list:
    text = path.read_text()
    stale = []

    def sub(m):
        want = render(hfx, m.group("cmd"))
        if m.group("body") != want:
            stale.append(f"{path.name}: '{m.group('cmd')}'")
        return m.group(1) + want + m.group(4)

    new = BLOCK.sub(sub, text)
    if not BLOCK.search(text):
        stale.append(f"{path.name}: no generated block")
    if not check and new != text:
        path.write_text(new)
    return stale


def missing_commands(hfx: str) -> list:
    """The subcommands `hfx --help` lists that docs/cli-reference.md has no generated block for."""
    out = subprocess.run(["hfx", "--help"], executable=hfx, capture_output=True, text=True).stdout
    listed = re.findall(r"^  ([a-z][a-z-]*) {2,}", out.split("Subcommands:", 1)[-1], re.M)
    ref = (ROOT / "docs/cli-reference.md").read_text()
    return [c for c in listed if f"<!-- generated: hfx {c} --help -->" not in ref]


def main(argv):
    if len(argv) >= 2 and argv[0] == "--selftest":
        with tempfile.TemporaryDirectory() as d:
            doc = pathlib.Path(d) / "stale.md"
            doc.write_text("<!-- generated: hfx registries --stages -->\n```text\nstale\n```\n<!-- end generated -->\n")
            stale = process(doc, argv[1], check=True)
        if stale:
            print(f"[docs] selftest: the stale block was found ({stale[0]})")
            return 0
        print("[docs] selftest FAILED: a stale block passed --check")
        return 1
    if not argv or argv[0].startswith("-"):
        sys.exit("[docs] error: expected HFX [--check], got none; e.g. scripts/gen_docs.py build/hfx --check")
    hfx, check = argv[0], "--check" in argv[1:]
    stale = []
    for rel in DOCS:
        stale += process(ROOT / rel, hfx, check)
    # Every command of the binary has its --help block in the reference (a new command must be added there).
    stale += [f"cli-reference.md: no block for command '{c}'" for c in missing_commands(hfx)]
    for s in stale:
        print(f"[docs] {'stale' if check else 'rewrote'}: {s}" + (" (run scripts/gen_docs.py HFX)" if check else ""))
    if check and stale:
        return 1
    print(f"[docs] {len(DOCS)} docs {'checked' if check else 'written'}")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
