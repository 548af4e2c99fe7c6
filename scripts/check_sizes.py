#!/usr/bin/env python3
"""scripts/check_sizes.py [ROOT] — no file in src/, tools/ or python/src/ above 600 lines, no function above 80 (issue 12).

Every .cpp and .h under ROOT/src and ROOT/tools (the CLI) is read; a file longer than MAX_FILE lines fails. Functions are found
by braces: comments, string, character and raw-string literals are blanked first, then a `{` that closes
a line ending in `)`, `) const`, `override`, `noexcept` or a trailing return type, at namespace or class
scope, opens a function body; its length is counted from the line of its `{` to its closing `}`. A body
longer than MAX_FUNCTION lines fails, except the tables of data listed in TABLES (op and lowering
tables: one entry per op, each a few lines). Prints one line per violation; exit 1 if any. Standard
library only (ctest runs it as sizes.check; tests/sizes/check_sizes_test.py proves it can fail).
"""
import os
import re
import sys

MAX_FILE = 600
MAX_FUNCTION = 80
# Functions that are tables of data: (file relative to ROOT, function name).
# The folders held to the limits: the library and the CLI.
DIRS = ('src', 'tools', 'python/src')
TABLES = {
    ('src/export/dynamo/aten_table.cpp', 'aten_table'),
    ('src/ops/op_table.cpp', 'build_table'),
    ('src/verify/pte_kernels.cpp', 'kernel_table'),
    ('src/export/executorch/pte_lowering_table.cpp', 'lowering_table'),
    ('src/export/onnx/translations.cpp', 'build'),
    ('src/models/registry.cpp', 'all_architectures'),  # one line per architecture
}
SIG_END = re.compile(r'(\)|\bconst|\boverride|\bnoexcept|\bfinal|->\s*[\w:<>,\s*&]+)\s*$')
NAME = re.compile(r'([~\w]+)\s*\([^()]*(\([^()]*\)[^()]*)*\)?[^(]*$')


def blank_literals(text):
    """Comments and literals replaced by spaces (newlines kept, so line numbers stay)."""
    out, i, n = [], 0, len(text)
    while i < n:
        c = text[i]
        if text.startswith('//', i):
            j = text.find('\n', i)
            j = n if j < 0 else j
            out.append(' ' * (j - i))
            i = j
        elif text.startswith('/*', i):
            j = text.find('*/', i + 2)
            j = n if j < 0 else j + 2
            out.append(re.sub(r'[^\n]', ' ', text[i:j]))
            i = j
        elif c == 'R' and text.startswith('R"', i):
            m = re.match(r'R"([^(\s]*)\(', text[i:])
            if not m:
                out.append(c)
                i += 1
                continue
            end = ')' + m.group(1) + '"'
            j = text.find(end, i + m.end())
            j = n if j < 0 else j + len(end)
            out.append(re.sub(r'[^\n]', ' ', text[i:j]))
            i = j
        elif c in '"\'':
            j = i + 1
            while j < n and text[j] != c and text[j] != '\n':
                j += 2 if text[j] == '\\' else 1
            out.append(' ' * (min(j + 1, n) - i))
            i = j + 1
        else:
            out.append(c)
            i += 1
    return ''.join(out)


def functions(text):
    """(name, first line, line count) of every function body at namespace or class scope."""
    code = blank_literals(text)
    lines = code.split('\n')
    stack, found = [], []  # stack entries: (kind, start line, name)
    for ln, line in enumerate(lines):
        for pos, ch in enumerate(line):
            if ch == '{':
                before = (' '.join(lines[max(0, ln - 3):ln]) + ' ' + line[:pos]).rstrip()
                outer = all(k in ('ns', 'class') for k, _, _ in stack)
                if re.search(r'\bnamespace\b[^;{}]*$', before):
                    kind = 'ns'
                elif re.search(r'\b(class|struct|union|enum)\b[^;{}()]*$', before) and outer:
                    kind = 'class'
                elif outer and SIG_END.search(before) and not re.search(r'=\s*$', before):
                    kind = 'fn'
                else:
                    kind = 'block'
                name = ''
                if kind == 'fn':
                    m = NAME.search(before[:before.rfind(')') + 1] if ')' in before else before)
                    name = m.group(1) if m else '?'
                stack.append((kind, ln, name))
            elif ch == '}' and stack:
                kind, start, name = stack.pop()
                if kind == 'fn':
                    found.append((name, start + 1, ln - start + 1))
    return found


def check(root):
    problems = []
    for base, _, files in (w for d in DIRS if os.path.isdir(os.path.join(root, d))
                           for w in os.walk(os.path.join(root, d))):
        for f in sorted(files):
            if not f.endswith(('.cpp', '.h')):
                continue
            path = os.path.join(base, f)
            rel = os.path.relpath(path, root)
            text = open(path, encoding='utf-8').read()
            n = text.count('\n')
            if n > MAX_FILE:
                problems.append(f'[sizes] {rel}: expected at most {MAX_FILE} lines, got {n}; split the file')
            for name, line, count in functions(text):
                if count > MAX_FUNCTION and (rel, name) not in TABLES:
                    problems.append(f'[sizes] {rel}:{line}: expected function {name} within {MAX_FUNCTION} '
                                    f'lines, got {count}; split it (tables of data go in TABLES)')
    return problems


def main():
    root = sys.argv[1] if len(sys.argv) > 1 else os.path.join(os.path.dirname(os.path.abspath(__file__)), '..')
    problems = check(root)
    for p in problems:
        print(p)
    if problems:
        sys.exit(1)
    print(f'[sizes] every file in {" and ".join(DIRS)} of {root} within {MAX_FILE} lines, every function '
          f'within {MAX_FUNCTION} (tables of data excepted: {len(TABLES)})')


if __name__ == '__main__':
    main()
