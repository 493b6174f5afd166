#!/usr/bin/env python3
"""Tests known_leaks.py: only a report of nothing but the listed allocation site, in the
library build that is installed, counts as known; every variation of it is new."""
import os
import subprocess
import sys
import tempfile

here = os.path.dirname(os.path.abspath(__file__))
signatures = os.path.join(here, "known-leaks")
library = "/lib/x86_64-linux-gnu/libfabric.so.1"

HEAD = "=================================================================\n"
LEAK = """==rpmemd==19425==ERROR: LeakSanitizer: detected memory leaks

Direct leak of 1920 byte(s) in 4 object(s) allocated from:
    #0 0x7f85a30b83b7 in __interceptor_calloc ../../../../src/libsanitizer/asan/asan_malloc_linux.cpp:77
    #1 0x7f859f9ace25  (LIB+0x55e25)

"""
TAIL = "SUMMARY: AddressSanitizer: 1920 byte(s) leaked in 4 allocation(s).\n"
OTHER_LEAK = """Direct leak of 480 byte(s) in 1 object(s) allocated from:
    #0 0x7f85a30b83b7 in __interceptor_calloc ../../../../src/libsanitizer/asan/asan_malloc_linux.cpp:77
    #1 0x7f859f9ace25  (LIB+0x12345)

"""


def report(body, lib=library):
    return HEAD + body.replace("LIB", lib) + TAIL


def main():
    failures = []
    with tempfile.TemporaryDirectory() as d:
        # Another build of the library under the same name: same offset, other bytes.
        os.makedirs(os.path.join(d, "other"))
        other_lib = os.path.join(d, "other", "libfabric.so.1")
        with open(other_lib, "wb") as f:
            f.write(b"not the installed libfabric")
        cases = {
            "the listed site": (report(LEAK), "known"),
            "one byte further": (report(LEAK.replace("0x55e25", "0x55e26")), "new"),
            "a frame of rpmem's below it": (
                report(LEAK.replace("+0x55e25)\n", "+0x55e25)\n    #2 0x55d0 in rpmem::fabric::endpoint::endpoint() ep.cpp:40\n")),
                "new"),
            "another leak beside it": (report(LEAK + OTHER_LEAK), "new"),
            "an ASan error beside it": (
                report(LEAK) + "==rpmemd==19425==ERROR: AddressSanitizer: heap-use-after-free\n", "new"),
            "another build of the library": (report(LEAK, other_lib), "new"),
            "not a leak report": (HEAD + "src/x.cpp:3:5: runtime error: signed integer overflow\n", "new"),
        }
        paths = {}
        for i, (name, (text, _)) in enumerate(cases.items()):
            paths[name] = os.path.join(d, f"asan.rpmemd.{i}")
            with open(paths[name], "w") as f:
                f.write(text)
        out = subprocess.run(
            [sys.executable, os.path.join(here, "known_leaks.py"), signatures, *paths.values()],
            check=True, capture_output=True, text=True).stdout.split("\n")
        verdicts = dict(reversed(line.split(" ", 1)) for line in out if line)
        for name, (_, want) in cases.items():
            got = verdicts.get(paths[name])
            if got != want:
                failures.append(f"{name}: {got}, expected {want}")
    wrong = len(failures)
    if "the listed site: new, expected known" in failures:
        failures.append(f"{library} is not the build tests/sanitizers/known-leaks lists (Debian "
                        "updated libfabric1?): re-prove the site with objdump and list the "
                        "new build's SHA-256 and offset")
    for f in failures:
        print("FAILED:", f)
    print(f"{len(cases) - wrong} of {len(cases)} cases as expected")
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
