#!/usr/bin/env python3
# SPDX-License-Identifier: BSD-3-Clause
"""Every Catch test name (TEST_CASE's first argument, its string literals joined) is usable as a
ctest test name: catch_discover_tests splits names at ';' (a CMake list), which silently turns
one test into two that both fail. Usage: test_names.py SOURCE_DIR"""
import pathlib
import re
import sys

src = pathlib.Path(sys.argv[1])
bad = []
count = 0
for f in sorted((src / "tests").rglob("*.cpp")):
    text = f.read_text()
    for m in re.finditer(r'TEST_CASE\(\s*((?:"(?:[^"\\]|\\.)*"\s*)+)', text):
        name = "".join(re.findall(r'"((?:[^"\\]|\\.)*)"', m.group(1)))
        count += 1
        if ";" in name:
            line = text.count("\n", 0, m.start()) + 1
            bad.append(f"{f.relative_to(src)}:{line}: test name has ';': {name}")
for b in bad:
    print(b)
print(f"{count - len(bad)} of {count} test names are usable by ctest")
sys.exit(1 if bad else 0)
