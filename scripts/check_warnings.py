#!/usr/bin/env python3
"""scripts/check_warnings.py [BUILD_DIR [PATH_SUBSTRING...]] — every translation unit of hfx, compiled by clang with -Werror.

The g++ build trees compile with -Wall -Wextra -Werror (HFX_WERROR, on in the presets CI uses); this is the
second compiler: clang++ (HFX_CLANG, default clang++-16) parses every translation unit of BUILD_DIR's
compile_commands.json (default build/) — libhfx, the CLI, the tests, the benchmarks, the examples; third-party
sources under deps/ excepted — with the same defines and include paths, -fsyntax-only, -Wall -Wextra
-Wno-unused-parameter -Werror. GCC's precompiled header is not clang's: its text header is included instead.
Prints each failing unit with clang's first lines, then one line "[warnings] N units, M failed"; exits 1 if
any failed. HFX_JOBS units at a time (default 2). PATH_SUBSTRINGs, if given, limit it to the units whose
source path contains one of them (a quick re-check of the files you changed).
"""
import concurrent.futures
import json
import os
import pathlib
import shlex
import shutil
import subprocess
import sys
import tempfile

ROOT = pathlib.Path(__file__).resolve().parent.parent
FLAGS = ["-fsyntax-only", "-Wall", "-Wextra", "-Wno-unused-parameter", "-Werror"]


def clang_command(entry, clang, pch_dir):
    """The entry's defines, include paths and standard, for clang; the PCH's text header in its place."""
    args = shlex.split(entry["command"]) if "command" in entry else entry["arguments"]
    out = [clang]
    it = iter(args[1:])
    for a in it:
        if a in ("-o", "-MF", "-MT", "-MQ"):
            next(it, None)
        elif a == "-include":
            header = next(it)
            if header.endswith("cmake_pch.hxx"):  # GCC's .gch sits beside it: include a copy of the text
                copy = pch_dir / (str(abs(hash(header))) + ".hxx")
                if not copy.exists():
                    shutil.copyfile(header, copy)
                header = str(copy)
            out += ["-include", header]
        elif a.startswith(("-D", "-I", "-std=")) or a in ("-isystem",):
            out.append(a)
            if a == "-isystem":
                out.append(next(it))
        elif a == "-x" or a.startswith("-x"):
            if a == "-x":
                next(it)
        elif a.startswith("-W") or a.startswith("-f") or a.startswith("-O") or a.startswith("-m") or a == "-c":
            continue
        elif a.startswith("-"):
            continue
    return out + FLAGS + [entry["file"]]


def main():
    build = pathlib.Path(sys.argv[1] if len(sys.argv) > 1 else ROOT / "build")
    db = build / "compile_commands.json"
    if not db.exists():
        sys.exit(f"[warnings] error: expected {db}, got none; build first (scripts/build.sh release)")
    clang = os.environ.get("HFX_CLANG", "clang++-16")
    if not shutil.which(clang):
        sys.exit(f"[warnings] error: expected {clang} on PATH, got none; run scripts/setup.sh (installs clang-16)")
    only = sys.argv[2:]  # optional substrings of source paths: check just those units (a quick local re-check)
    entries = []
    for e in json.load(open(db)):
        f = e["file"]
        if "/deps/" in f or f.endswith(".hxx.cxx") or "/_deps/" in f:
            continue
        if not (f.startswith(str(ROOT)) or f.startswith(str(build))):
            continue
        if only and not any(o in f for o in only):
            continue
        entries.append(e)
    jobs = int(os.environ.get("HFX_JOBS", "2"))
    failed = []
    with tempfile.TemporaryDirectory() as tmp, concurrent.futures.ThreadPoolExecutor(jobs) as pool:
        def run(e):
            cmd = clang_command(e, clang, pathlib.Path(tmp))
            p = subprocess.run(cmd, cwd=e["directory"], capture_output=True, text=True)
            return e["file"], p.returncode, p.stderr
        for f, rc, err in pool.map(run, entries):
            if rc != 0:
                failed.append(f)
                print(f"[warnings] {os.path.relpath(f, ROOT)}:")
                print("\n".join("  " + line for line in err.splitlines()[:12]))
    print(f"[warnings] {len(entries)} units, {len(failed)} failed ({clang}, -Wall -Wextra -Werror)")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
