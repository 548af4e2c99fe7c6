#!/usr/bin/env python3
"""scripts/check_layers.py [ROOT] — the include graph of hfx keeps its layers apart.

The layer order is read from ROOT/docs/design.md, from its one line of the form
    Layers, lowest first: `core < io < ... < verify`
so the document and the check cannot disagree. Every file under src/<layer>/ and include/hfx/<layer>/
belongs to <layer>; tools/ is above every layer. Each quoted #include is resolved (hfx/<layer>/...,
relative to the including file, or relative to src/) and the check fails when:
  - a file includes a layer above its own (a wrong-way include),
  - a file includes a header from a sub-folder of another layer (src/export/<backend>/x.h is private to
    src/export/),
  - files include each other in a cycle (within a layer as well: headers must form a DAG),
  - a folder under src/ or include/hfx/ is not a declared layer, or an "hfx/..." include names no file.
Includes that name no file in the tree and are not "hfx/..." are third-party or generated
(hfx_gen/, llama.cpp's jinja/) and are not checked. Prints one line per violation; exit 1 if any.
Python 3 standard library only (ctest runs it as layers.check; tests/layers/ proves it can fail).
"""
import os
import re
import sys

INCLUDE = re.compile(r'^\s*#\s*include\s+"([^"]+)"', re.M)
ORDER = re.compile(r'^Layers, lowest first: `([^`]+)`', re.M)
SOURCE_EXT = ('.h', '.hpp', '.cpp', '.cc')


def read_order(root):
    path = os.path.join(root, 'docs', 'design.md')
    try:
        text = open(path, encoding='utf-8').read()
    except OSError as e:
        sys.exit(f'[layers] expected the layer order in {path}, got {e.strerror}')
    m = ORDER.search(text)
    if not m:
        sys.exit(f'[layers] expected a line "Layers, lowest first: `core < io < ...`" in {path}, got none')
    order = [name.strip() for name in m.group(1).split('<')]
    if len(set(order)) != len(order) or not all(order):
        sys.exit(f'[layers] expected distinct layer names in {path}, got {m.group(1)!r}')
    return {name: rank for rank, name in enumerate(order)}


def layer_of(rel):
    """(layer, private_owner) of a path relative to ROOT; private_owner is set for src/<L>/<sub>/x.h."""
    parts = rel.split('/')
    if parts[0] == 'tools':
        return 'tools', None
    if parts[0] == 'src' and len(parts) > 2:
        return parts[1], (parts[1] if len(parts) > 3 else None)
    if parts[0] == 'include' and len(parts) > 3 and parts[1] == 'hfx':
        return parts[2], None
    return None, None


def source_files(root):
    for top in ('src', 'include', 'tools'):
        for d, dirs, files in os.walk(os.path.join(root, top)):
            dirs.sort()
            for f in sorted(files):
                if f.endswith(SOURCE_EXT):
                    yield os.path.relpath(os.path.join(d, f), root).replace(os.sep, '/')


def resolve(root, rel, target):
    """The included file relative to ROOT, or None when it is not in the tree."""
    here = os.path.dirname(rel)
    for cand in (os.path.join('include', target), os.path.join(here, target), os.path.join('src', target),
                 os.path.join('tools', target)):
        cand = os.path.normpath(cand).replace(os.sep, '/')
        if os.path.isfile(os.path.join(root, cand)):
            return cand
    return None


def find_cycle(graph):
    """One include cycle as a list of files, or None (iterative DFS, colours white/grey/black)."""
    colour, parent = {}, {}
    for start in sorted(graph):
        if colour.get(start):
            continue
        stack = [(start, iter(sorted(graph.get(start, ()))))]
        colour[start] = 1
        while stack:
            node, it = stack[-1]
            nxt = next(it, None)
            if nxt is None:
                colour[node] = 2
                stack.pop()
            elif colour.get(nxt) == 1:
                cycle = [nxt]
                for n, _ in reversed(stack):
                    cycle.append(n)
                    if n == nxt:
                        break
                return list(reversed(cycle))
            elif not colour.get(nxt):
                colour[nxt] = 1
                parent[nxt] = node
                stack.append((nxt, iter(sorted(graph.get(nxt, ())))))
    return None


def check(root):
    rank = read_order(root)
    rank['tools'] = len(rank)
    errors, graph = [], {}
    for rel in source_files(root):
        layer, _ = layer_of(rel)
        if layer is None:
            continue
        if layer not in rank:
            errors.append(f'{rel}: expected its folder to be a declared layer ({" < ".join(rank)}), '
                          f'got "{layer}"; add it to the order in docs/design.md')
            continue
        text = open(os.path.join(root, rel), encoding='utf-8', errors='replace').read()
        for target in INCLUDE.findall(text):
            dep = resolve(root, rel, target)
            if dep is None:
                if target.startswith('hfx/'):
                    errors.append(f'{rel}: expected "{target}" to name a header under include/, '
                                  'got no such file')
                continue
            graph.setdefault(rel, set()).add(dep)
            dep_layer, private = layer_of(dep)
            if dep_layer is None or dep_layer == layer:
                continue
            if dep_layer not in rank:
                continue  # reported once for the file itself
            if rank[dep_layer] > rank[layer]:
                errors.append(f'{rel}: wrong-way include of "{target}": layer {layer} may include only '
                              f'layers below it, got {dep_layer} (above it); move the shared part down or '
                              'invert the call')
            elif private is not None and not rel.startswith(f'src/{private}/'):
                errors.append(f'{rel}: expected headers of src/{private}/ sub-folders to stay private to '
                              f'src/{private}/, got an include of "{target}"; move it to a shared layer')
    cycle = find_cycle(graph)
    if cycle:
        errors.append('include cycle: ' + ' -> '.join(cycle))
    return errors


def main():
    default_root = os.path.join(os.path.dirname(__file__), '..')
    root = os.path.abspath(sys.argv[1] if len(sys.argv) > 1 else default_root)
    errors = check(root)
    for e in errors:
        print(f'[layers] {e}')
    if errors:
        print(f'[layers] {len(errors)} violation(s) of the layer order in docs/design.md')
        return 1
    print(f'[layers] include graph of {root} follows docs/design.md: no wrong-way include, no cycle')
    return 0


if __name__ == '__main__':
    sys.exit(main())
