#!/usr/bin/env python3
# SPDX-License-Identifier: BSD-3-Clause
"""Compiles every ```cpp block of README.md against the tree's headers, so a snippet cannot rot.

A block is a fragment: its #include lines go to the top, the rest becomes the body of a
function; `= ...;` (the reader fills it in) becomes `= {};`, and the names a snippet leaves
to the reader (record, n) are declared. Usage: readme_cpp.py SOURCE_DIR CXX
"""
import pathlib
import re
import subprocess
import sys
import tempfile

src, cxx = pathlib.Path(sys.argv[1]), sys.argv[2]
blocks = re.findall(r"```cpp\n(.*?)```", (src / "README.md").read_text(), re.S)
if not blocks:
    sys.exit("readme_cpp.py: README.md has no ```cpp block (moved? then move this test too)")
failed = 0
for i, block in enumerate(blocks, 1):
    lines = block.splitlines()
    includes = [l for l in lines if l.startswith("#include")]
    body = [l.replace("= ...;", "= {};") for l in lines if not l.startswith("#include")]
    program = "\n".join(["#include <cstring>", *includes,
                         "[[maybe_unused]] static void snippet()", "{",
                         "[[maybe_unused]] const char record[] = \"r\";",
                         "[[maybe_unused]] std::size_t n = sizeof record;",
                         *body, "}", ""])
    with tempfile.NamedTemporaryFile("w", suffix=".cpp") as f:
        f.write(program)
        f.flush()
        r = subprocess.run([cxx, "-std=c++20", "-fsyntax-only", "-Wall", "-Wextra", "-Werror",
                            "-I", str(src / "include"), f.name],
                           capture_output=True, text=True)
    if r.returncode != 0:
        failed += 1
        print(f"README.md ```cpp block {i} does not compile:\n{r.stderr}")
print(f"{len(blocks) - failed} of {len(blocks)} README C++ blocks compile")
sys.exit(1 if failed else 0)
