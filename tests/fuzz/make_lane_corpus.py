#!/usr/bin/env python3
# Writes the seed corpus of lane_fuzz (tests/fuzz/corpus/lane/): a 5-byte prefix (region size u16,
# nlanes u8, inline_max u16) and one lane message (docs/protocol.md, "Lane messages"): valid
# persist batches (RDMA-written and inline entries), deep persists, and the malformed cases the
# daemon must refuse. Run from anywhere: python3 tests/fuzz/make_lane_corpus.py
import os
import struct

out = os.path.join(os.path.dirname(os.path.abspath(__file__)), "corpus", "lane")
INLINE = 1 << 63


def pre(size=4096, nlanes=4, inline_max=1024):
    return struct.pack("<HBH", size, nlanes, inline_max)


def hdr(kind, lane, off, length, cookie=0x1122334455667788, magic=0x4C52):
    return struct.pack("<HHIQQQ", magic, kind, lane, off, length, cookie)


def ent(off, length, data=None):
    if data is None:
        return struct.pack("<QQ", off, length)
    pad = (-len(data)) % 8
    return struct.pack("<QQ", off, length | INLINE) + data + bytes(pad)


seeds = {
    "persist_one.bin": pre() + hdr(1, 0, 0, 1) + ent(64, 128),
    "persist_whole.bin": pre() + hdr(1, 3, 0, 1) + ent(0, 4096),
    "persist_empty_range.bin": pre() + hdr(1, 1, 0, 1) + ent(4096, 0),
    "persist_no_entries.bin": pre() + hdr(1, 0, 0, 0),
    "persist_inline.bin": pre() + hdr(1, 1, 0, 1) + ent(100, 16, bytes(range(16))),
    "persist_inline_unaligned.bin": pre() + hdr(1, 0, 0, 1) + ent(4093, 3, b"abc"),
    "persist_batch.bin": pre()
    + hdr(1, 2, 0, 4)
    + ent(0, 8)
    + ent(17, 5, b"hello")
    + ent(4000, 96)
    + ent(20, 8, b"overlap!"),
    "deep_persist.bin": pre() + hdr(2, 2, 1000, 3000),
    "bad_lane.bin": pre() + hdr(1, 4, 0, 1) + ent(0, 8),
    "bad_offset.bin": pre() + hdr(1, 0, 0, 1) + ent(4097, 1),
    "bad_overflow.bin": pre() + hdr(1, 0, 0, 1) + ent(0xFFFFFFFFFFFFFFF0, 0x20),
    "bad_deep_overflow.bin": pre() + hdr(2, 0, 0xFFFFFFFFFFFFFFF0, 0x20),
    "bad_inline_short.bin": pre() + hdr(1, 0, 0, 1) + ent(0, 16)[:8] + struct.pack("<Q", 16 | INLINE) + bytes(8),
    "bad_count_high.bin": pre() + hdr(1, 0, 0, 3) + ent(0, 8) + ent(8, 8),
    "bad_count_low.bin": pre() + hdr(1, 0, 0, 1) + ent(0, 8) + ent(8, 8),
    "bad_count_huge.bin": pre() + hdr(1, 0, 0, 0x1000000000000001) + ent(0, 1),
    "bad_too_big.bin": pre(inline_max=16) + hdr(1, 0, 0, 1) + ent(0, 32, bytes(32)),
    "bad_magic.bin": pre() + hdr(1, 0, 0, 1, magic=0x4C53) + ent(0, 8),
    "bad_kind.bin": pre() + hdr(5, 0, 0, 8),
    "bad_short_header.bin": pre() + hdr(1, 0, 0, 1)[:20],
    "bad_deep_payload.bin": pre() + hdr(2, 0, 0, 8) + b"xxxxxxxx",
    # The fixed-size messages: a connection request's private data (secret + endpoint index)
    # and a response (lane, errno, cookie).
    "conn_data.bin": pre() + bytes(range(32)) + struct.pack("<I", 3),
    "response.bin": pre() + struct.pack("<IIQ", 2, 5, 0x1122334455667788),
}
os.makedirs(out, exist_ok=True)
for name, data in seeds.items():
    with open(os.path.join(out, name), "wb") as f:
        f.write(data)
print(f"wrote {len(seeds)} seeds to {out}")
