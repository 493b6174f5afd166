#!/usr/bin/env python3
# How long rpmem_pmemobj_log's transactions take, for bench/outage.sh catchup: the writer
# records, for each thread's last 8192 transactions, when each began and how long it took
# (its history file, after the counters: tests/support/pmemobj_log.c, struct history).
#   tx_sampler.py baseline HISTORY THREADS SECONDS
#       the median of the transactions that began in the next SECONDS
#   tx_sampler.py catchup HISTORY THREADS LOG
#       waits until LOG says the replica is caught up (at most 60 s), then prints the median
#       of the transactions that began between LOG's "catching_up" line and its "caught up"
#       line, as this program saw them come (it reads LOG every ~0.5 ms)
import struct
import sys
import time

HEADER = 544  # struct history up to phase: 16 + 16 counters, threads, root_off, 16 + 1, 16, 1


def transactions(path, threads):
    """(begin seconds, took seconds) of every transaction the rings hold."""
    with open(path, "rb") as f:
        data = f.read()
    (ring,) = struct.unpack_from("Q", data, HEADER)
    if ring == 0:
        sys.exit("tx_sampler.py: the history has no transaction ring (an older pmemobj_log?)")
    begins = HEADER + 8
    tooks = begins + 16 * ring * 8
    out = []
    for t in range(threads):
        b = struct.unpack_from(f"{ring}Q", data, begins + t * ring * 8)
        d = struct.unpack_from(f"{ring}Q", data, tooks + t * ring * 8)
        out.extend((bb / 1e9, dd / 1e9) for bb, dd in zip(b, d) if bb)
    return out


def median_in(txs, begin, end):
    """The median time (s) of the transactions that began in [begin, end], and their count."""
    took = sorted(d for b, d in txs if begin <= b <= end)
    if not took:
        return None, 0
    return took[len(took) // 2], len(took)


def main():
    mode, history, threads = sys.argv[1], sys.argv[2], int(sys.argv[3])
    if mode == "baseline":
        secs = float(sys.argv[4])
        start = time.monotonic()
        time.sleep(secs)
        took, n = median_in(transactions(history, threads), start, start + secs)
        if took is None:
            print("median transaction before the outage: none began")
            return
        print(f"median transaction before the outage: {took * 1e6:.0f} us "
              f"({n} transactions over {secs:.0f} s, {threads} threads)")
        return
    log = sys.argv[4]
    marks = {}
    offset = 0
    start = time.monotonic()
    while True:
        now = time.monotonic()
        with open(log, "rb") as f:
            f.seek(offset)
            text = f.read().decode(errors="replace")
        offset += len(text.encode())
        if "catching_up" in text and "begin" not in marks:
            marks["begin"] = now
        if "caught up:" in text and "end" not in marks:
            marks["end"] = now
        # Read the rings at once: asynchronous writers commit ~85,000 transactions/s per
        # thread, so a ring of 8192 holds the last ~0.1 s only.
        if "end" in marks or now - start > 60:
            break
        time.sleep(0.0005)
    if "begin" not in marks or "end" not in marks:
        print("median transaction during catch-up: no catch-up seen in the log")
        return
    window = marks["end"] - marks["begin"]
    took, n = median_in(transactions(history, threads), marks["begin"], marks["end"])
    if took is None:
        # Both lines came in one read: this program did not run while the catch-up did (the
        # writers and the catch-up had both cores).
        print(f"median transaction during catch-up: not measured (no transaction began in "
              f"the {window * 1000:.1f} ms between the lines as seen)")
        return
    print(f"median transaction during catch-up: {took * 1e6:.0f} us ({n} transactions began "
          f"in the {window * 1000:.0f} ms between the log's lines as seen)")


main()
