#!/usr/bin/env python3
"""tests/layers/check_layers_test.py — scripts/check_layers.py fails on what it must refuse.

Each case writes a small fixture tree (docs/design.md with a layer order, src/, include/hfx/) into a temp
folder and runs the checker on it as ctest runs it on the repository: a clean tree passes; a wrong-way
include, an include cycle, a private sub-folder header used from another layer, an undeclared layer
folder and a missing order line each fail with exit 1 and a message naming the file. Standard library only.
"""
import os
import subprocess
import sys
import tempfile
import unittest

CHECKER = os.path.join(os.path.dirname(os.path.abspath(__file__)), '..', '..', 'scripts', 'check_layers.py')
ORDER = 'Layers, lowest first: `core < ir < ops < export < verify`\n'


def write_tree(root, files, order=ORDER):
    if order is not None:
        os.makedirs(os.path.join(root, 'docs'))
        with open(os.path.join(root, 'docs', 'design.md'), 'w') as f:
            f.write('# Design\n\n' + order)
    for path, text in files.items():
        full = os.path.join(root, path)
        os.makedirs(os.path.dirname(full), exist_ok=True)
        with open(full, 'w') as f:
            f.write(text)


CLEAN = {
    'include/hfx/core/error.h': '#pragma once\n',
    'include/hfx/ir/graph.h': '#pragma once\n#include "hfx/core/error.h"\n',
    'src/ir/graph.cpp': '#include "hfx/ir/graph.h"\n#include <vector>\n',
    'include/hfx/ops/op_schema.h': '#pragma once\n#include "hfx/ir/graph.h"\n',
    'src/export/dynamo/zip.h': '#pragma once\n',
    'src/export/dynamo/pt2.cpp': '#include "export/dynamo/zip.h"\n#include "hfx/ops/op_schema.h"\n',
    'src/export/exporter.cpp': '#include "export/dynamo/zip.h"\n#include "hfx_gen/program_generated.h"\n',
    'src/verify/verify.cpp': '#include "hfx/ops/op_schema.h"\n',
    'tools/main.cpp': '#include "hfx/ops/op_schema.h"\n#include "CLI/CLI.hpp"\n',
}


class CheckLayers(unittest.TestCase):
    def run_on(self, files, order=ORDER):
        with tempfile.TemporaryDirectory() as root:
            write_tree(root, files, order)
            p = subprocess.run([sys.executable, CHECKER, root], capture_output=True, text=True)
            return p.returncode, p.stdout + p.stderr

    def test_clean_tree_passes(self):
        rc, out = self.run_on(CLEAN)
        self.assertEqual(rc, 0, out)
        self.assertIn('no wrong-way include, no cycle', out)

    def test_wrong_way_include_fails(self):
        # The ir ↔ ops cycle this check was written against: the graph including the op table.
        rc, out = self.run_on(dict(CLEAN, **{'src/ir/graph.cpp': '#include "hfx/ops/op_schema.h"\n'}))
        self.assertEqual(rc, 1, out)
        self.assertIn('src/ir/graph.cpp: wrong-way include of "hfx/ops/op_schema.h"', out)
        self.assertIn('layer ir may include only layers below it, got ops', out)
        self.assertIn('[layers] 1 violation(s)', out)

    def test_wrong_way_include_from_a_private_header_fails(self):
        rc, out = self.run_on(dict(CLEAN, **{
            'src/ops/detail.h': '#pragma once\n#include "hfx/verify/report.h"\n',
            'include/hfx/verify/report.h': '#pragma once\n'}))
        self.assertEqual(rc, 1, out)
        self.assertIn('src/ops/detail.h: wrong-way include', out)

    def test_include_cycle_within_a_layer_fails(self):
        rc, out = self.run_on(dict(CLEAN, **{'src/ops/a.h': '#pragma once\n#include "ops/b.h"\n',
                                             'src/ops/b.h': '#pragma once\n#include "ops/a.h"\n'}))
        self.assertEqual(rc, 1, out)
        self.assertIn('include cycle: src/ops/a.h -> src/ops/b.h -> src/ops/a.h', out)

    def test_private_subfolder_header_from_another_layer_fails(self):
        # verify reading the Dynamo exporter's private zip.h.
        rc, out = self.run_on(dict(CLEAN, **{'src/verify/verify.cpp': '#include "export/dynamo/zip.h"\n'}))
        self.assertEqual(rc, 1, out)
        self.assertIn('expected headers of src/export/ sub-folders to stay private to src/export/', out)

    def test_undeclared_layer_fails(self):
        rc, out = self.run_on(dict(CLEAN, **{'src/artifact/manifest.cpp': '#include "hfx/core/error.h"\n'}))
        self.assertEqual(rc, 1, out)
        self.assertIn('got "artifact"; add it to the order in docs/design.md', out)

    def test_unknown_hfx_header_fails(self):
        rc, out = self.run_on(dict(CLEAN, **{'src/ops/x.cpp': '#include "hfx/ops/missing.h"\n'}))
        self.assertEqual(rc, 1, out)
        self.assertIn('expected "hfx/ops/missing.h" to name a header under include/', out)

    def test_missing_order_line_fails(self):
        rc, out = self.run_on(CLEAN, order='no order here\n')
        self.assertEqual(rc, 1, out)
        self.assertIn('expected a line "Layers, lowest first:', out)


if __name__ == '__main__':
    unittest.main(verbosity=2)
