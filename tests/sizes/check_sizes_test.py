#!/usr/bin/env python3
"""tests/sizes/check_sizes_test.py — scripts/check_sizes.py fails on what it must refuse.

Fixture trees in a temp folder: short functions pass; a function of 81 lines, a file of 601 lines, and a
long method inside a class each fail with exit 1 and a message naming the file (and function); braces in
strings, comments and raw strings do not confuse it; a listed table of data may be long. Standard
library only.
"""
import os
import subprocess
import sys
import tempfile
import unittest

CHECKER = os.path.join(os.path.dirname(os.path.abspath(__file__)), '..', '..', 'scripts', 'check_sizes.py')


def run(files):
    with tempfile.TemporaryDirectory() as root:
        for path, text in files.items():
            full = os.path.join(root, path)
            os.makedirs(os.path.dirname(full), exist_ok=True)
            with open(full, 'w') as f:
                f.write(text)
        p = subprocess.run([sys.executable, CHECKER, root], capture_output=True, text=True)
        return p.returncode, p.stdout + p.stderr


def body(n):
    return ''.join(f'  x += {i};\n' for i in range(n - 3))  # + the signature line, a return and the brace


class CheckSizes(unittest.TestCase):
    def test_short_functions_pass(self):
        rc, out = run({'src/a/a.cpp': 'namespace n {\nint f(int x) {\n' + body(80) + '  return x;\n}\n}\n'})
        self.assertEqual(rc, 0, out)

    def test_long_function_fails(self):
        rc, out = run({'src/a/a.cpp': 'namespace n {\nint f(int x) {\n' + body(81) + '  return x;\n}\n}\n'})
        self.assertEqual(rc, 1, out)
        self.assertIn('src/a/a.cpp:2: expected function f within 80 lines, got 81', out)

    def test_long_method_in_class_fails(self):
        text = 'struct S {\n  void go(int x) const {\n' + body(90) + '  }\n};\n'
        rc, out = run({'src/a/s.h': text})
        self.assertEqual(rc, 1, out)
        self.assertIn('function go', out)

    def test_long_file_fails(self):
        rc, out = run({'src/a/b.cpp': '// line\n' * 601})
        self.assertEqual(rc, 1, out)
        self.assertIn('src/a/b.cpp: expected at most 600 lines, got 601', out)

    def test_braces_in_literals_and_comments_do_not_count(self):
        text = ('int f() {\n  const char* s = "}}}";  // }\n  /* } */\n  auto r = R"(}{)";\n  char c = \'}\';\n'
                + body(60) + '  return 0;\n}\n' + 'int g() {\n' + body(85) + '  return 1;\n}\n')
        rc, out = run({'src/a/c.cpp': text})
        self.assertEqual(rc, 1, out)
        self.assertIn('function g within 80 lines', out)
        self.assertNotIn('function f ', out)

    def test_listed_table_may_be_long(self):
        text = 'namespace hfx {\nstd::vector<int> build_table() {\n' + body(200) + '  return {};\n}\n}\n'
        rc, out = run({'src/ops/op_table.cpp': text})
        self.assertEqual(rc, 0, out)


if __name__ == '__main__':
    unittest.main()
