#!/usr/bin/env python3
# SPDX-License-Identifier: BSD-3-Clause
"""An rpmemd of an older control protocol minor, for the compatibility tests.

Usage: old_rpmemd.py MINOR [VAR=value ...] RPMEMD [ARGS ...]

Runs the real rpmemd (through env(1), so the VAR=value words the test fixture puts before it
work) with its control channel passing through this process, and makes it look like an rpmemd
of protocol 1.MINOR: its hello announces MINOR, and a client message of a type that version did
not know ends the session as such an rpmemd would (it reads the type as a broken peer), after a
line on stderr naming the type. Types known per minor: docs/protocol.md, Versioning.
"""
import os
import struct
import subprocess
import sys
import threading

HEADER = 12
# The highest message type each minor knows (1.2 added checksum/checksum_resp, 12 and 13;
# 1.3 added create_done, 14).
LAST_TYPE = {0: 11, 1: 11, 2: 13}


def read_exact(fd, n):
    data = b""
    while len(data) < n:
        chunk = os.read(fd, n - len(data))
        if not chunk:
            return None
        data += chunk
    return data


def write_all(fd, data):
    while data:
        data = data[os.write(fd, data):]


def main():
    minor = int(sys.argv[1])
    last_type = LAST_TYPE[minor]
    child = subprocess.Popen(["env"] + sys.argv[2:], stdin=subprocess.PIPE,
                             stdout=subprocess.PIPE)

    def daemon_to_client():
        out = child.stdout.fileno()
        first = read_exact(out, HEADER + 4)  # the hello's header, major and minor
        if first is None:
            return
        first = first[:HEADER + 2] + struct.pack("<H", minor)
        write_all(1, first)
        while True:
            chunk = os.read(out, 65536)
            if not chunk:
                return
            write_all(1, chunk)

    pump = threading.Thread(target=daemon_to_client)
    pump.start()
    to_daemon = child.stdin.fileno()
    while True:
        header = read_exact(0, HEADER)
        if header is None:
            break
        mtype, = struct.unpack_from("<H", header, 4)
        length, = struct.unpack_from("<I", header, 8)
        if mtype > last_type:
            sys.stderr.write(f"old_rpmemd.py: message type {mtype} is unknown to "
                             f"protocol 1.{minor}: ending the session\n")
            sys.stderr.flush()
            child.kill()
            os._exit(255)
        body = read_exact(0, max(length - HEADER, 0)) or b""
        write_all(to_daemon, header + body)
    child.stdin.close()
    pump.join()
    sys.exit(child.wait())


if __name__ == "__main__":
    main()
