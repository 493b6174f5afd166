#!/usr/bin/python3
# Copies rpmemd's stdout to the client unchanged except the minor protocol version of its
# hello (the first frame), set to 1: the client then sees an rpmemd of protocol 1.1, which
# does not know checksum requests. Used as `rpmemd ... | old_hello.py` in RPMEM_CMD.
import os

head = b""
while len(head) < 16:
    chunk = os.read(0, 16 - len(head))
    if not chunk:
        break
    head += chunk
if len(head) == 16:
    head = head[:14] + bytes([1, 0]) + head[16:]  # body: major u16 at 12, minor u16 at 14
os.write(1, head)
while True:
    chunk = os.read(0, 65536)
    if not chunk:
        break
    os.write(1, chunk)
