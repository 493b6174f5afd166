#!/usr/bin/env python3
"""Split sanitizer reports into known third-party leaks and everything else.

Usage: known_leaks.py SIGNATURES REPORT...
Prints, for each report, "known <report>" or "new <report>". A report is known only if it is
a LeakSanitizer report and nothing else, and every leak in it has exactly two frames: the
sanitizer's allocator interceptor and a site listed in SIGNATURES for the library file that is
installed now (matched by SHA-256, so another build of the library never matches).
"""
import hashlib
import os
import re
import sys

FRAME = re.compile(r"^\s*#(\d+) 0x[0-9a-f]+ +(?:in (\S+) .*|\((\S+)\+(0x[0-9a-f]+)\))$")


def load_signatures(path):
    sites = set()
    for line in open(path, encoding="utf-8"):
        line = line.strip()
        if not line or line.startswith("#"):
            continue
        digest, module, offset = line.split()[:3]
        sites.add((digest, module, int(offset, 16)))
    return sites


_digests = {}


def digest_of(path, cache=_digests):
    if path not in cache:
        try:
            with open(path, "rb") as f:
                cache[path] = hashlib.sha256(f.read()).hexdigest()
        except OSError:
            cache[path] = None
    return cache[path]


def known(report, sites):
    text = open(report, encoding="utf-8", errors="replace").read()
    if "ERROR: LeakSanitizer: detected memory leaks" not in text:
        return False
    if re.search(r"ERROR: AddressSanitizer|runtime error:|ThreadSanitizer", text):
        return False
    blocks = re.split(r"^(?:Direct|Indirect) leak of .*\n", text, flags=re.M)[1:]
    if not blocks:
        return False
    for block in blocks:
        frames = []
        for line in block.splitlines():
            if not line.strip():
                break
            m = FRAME.match(line)
            if not m:
                return False
            frames.append(m)
        if len(frames) != 2 or not (frames[0].group(2) or "").endswith("calloc"):
            return False
        path, offset = frames[1].group(3), frames[1].group(4)
        if not path:
            return False
        digest = digest_of(os.path.realpath(path))
        if (digest, os.path.basename(path), int(offset, 16)) not in sites:
            return False
    return True


def main():
    sites = load_signatures(sys.argv[1])
    for report in sys.argv[2:]:
        print(("known " if known(report, sites) else "new ") + report)


if __name__ == "__main__":
    main()
