#!/usr/bin/env python3
# SPDX-License-Identifier: BSD-3-Clause
"""Runs README.md's "Trying it by hand" shell block, so the walk-through cannot rot.

The block runs as written with bash -euo pipefail from the source tree, with three rewrites:
its `scripts/build.sh` line is left out (the suite runs on a tree that is built already:
rebuilding here would race the tests), `build/` becomes the build tree being tested, and its
/tmp/rpmem-sshd and /tmp/replica directories move into a fresh temporary directory (tests may
run side by side). Exit 77 (skipped) in sanitizer runs. Usage: readme_sh.py SOURCE_DIR BINARY_DIR
"""
import os
import pathlib
import re
import subprocess
import sys
import tempfile

src, build = pathlib.Path(sys.argv[1]), pathlib.Path(sys.argv[2])
# In a sanitizer build the block's rpmemd would run without the suite's sanitizer options
# (RPMEM_CMD is the README's): reported as skipped there (77), run by scripts/test.sh.
if "ASAN_OPTIONS" in os.environ or "TSAN_OPTIONS" in os.environ:
    print("readme_sh.py: skipped in a sanitizer run (the normal suite runs it)")
    sys.exit(77)
text = (src / "README.md").read_text()
m = re.search(r"## Trying it by hand\n+```sh\n(.*?)```", text, re.S)
if not m:
    sys.exit("readme_sh.py: README.md has no ```sh block under '## Trying it by hand' "
             "(moved? then move this test too)")
lines = [l for l in m.group(1).splitlines() if l.strip() != "scripts/build.sh"]
if len(lines) == len(m.group(1).splitlines()):
    sys.exit("readme_sh.py: the block no longer starts with scripts/build.sh: check the rewrites")
with tempfile.TemporaryDirectory(prefix="rpmem-readme-") as tmp:
    script = "\n".join(lines)
    script = re.sub(r"(?<![\w/])build/", str(build) + "/", script)
    script = script.replace("/tmp/rpmem-sshd", tmp + "/sshd").replace("/tmp/replica",
                                                                        tmp + "/replica")
    # Whatever happens, the private sshd the block started is stopped.
    full = (f"set -euo pipefail\ntrap '{src}/scripts/private-sshd.sh stop {tmp}/sshd "
            f">/dev/null 2>&1 || true' EXIT\n{script}\n")
    r = subprocess.run(["bash", "-c", full], cwd=src, capture_output=True, text=True,
                       timeout=300)
    print(r.stdout, end="")
    print(r.stderr, end="", file=sys.stderr)
    if r.returncode != 0:
        print(f"README.md's 'Trying it by hand' block failed (exit {r.returncode}); "
              f"as run:\n{full}", file=sys.stderr)
        sys.exit(1)
    if "verified  the replica holds every persisted byte" not in r.stdout:
        sys.exit("readme_sh.py: the block ran but rpmem-demo did not verify the replica")
print("README.md's 'Trying it by hand' block runs")
