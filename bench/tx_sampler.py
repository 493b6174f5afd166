#!/usr/bin/env python3
# The time a transaction takes, estimated from how fast rpmem_pmemobj_log's committed counters
# grow (its history file: 16 u64 counters first), for bench/outage.sh catchup:
#   tx_sampler.py baseline HISTORY THREADS SECONDS
#       samples for SECONDS now and prints the calls-weighted median per transaction
#   tx_sampler.py catchup HISTORY THREADS LOG
#       samples until LOG says the replica is caught up (at most 60 s), then prints the same
#       for the time between LOG's "catching_up" line and its "caught up" line
# The counters are read every ~0.5 ms and binned per millisecond: a bin in which a thread
# committed n transactions counts n transactions of THREADS ms / n each; a stretch of bins
# with none (the calls held) counts one transaction per thread lasting the stretch. An
# estimate from throughput, not a timing of each call.
import struct
import sys
import time


def committed(path):
    with open(path, "rb") as f:
        return sum(struct.unpack("16Q", f.read(128)))


def sample(path, until):
    """(seconds, committed) pairs every ~0.5 ms while until(now) is false."""
    out = []
    while True:
        now = time.monotonic()
        out.append((now, committed(path)))
        if until(now):
            return out
        time.sleep(0.0005)


def per_transaction_ms(samples, threads, begin, end):
    """The calls-weighted median transaction time (ms) within [begin, end], and the count."""
    bins = {}
    for t, c in samples:
        if begin <= t <= end:
            b = int((t - begin) * 1000)
            bins.setdefault(b, [c, c])
            bins[b][1] = c
    if not bins:
        return None, 0
    keys = sorted(bins)
    weighted = []  # (ms per transaction, transactions)
    idle = 0
    prev_end = bins[keys[0]][0]
    for b in keys:
        first, last = bins[b]
        n = last - prev_end
        prev_end = last
        if n <= 0:
            idle += 1
            continue
        if idle:
            weighted.append((float(idle), threads))
            idle = 0
        weighted.append((threads / n, n))
    if idle:
        weighted.append((float(idle), threads))
    total = sum(w for _, w in weighted)
    weighted.sort()
    acc = 0
    for ms, w in weighted:
        acc += w
        if acc * 2 >= total:
            return ms, total
    return weighted[-1][0], total


def main():
    mode, history, threads = sys.argv[1], sys.argv[2], int(sys.argv[3])
    if mode == "baseline":
        start = time.monotonic()
        secs = float(sys.argv[4])
        s = sample(history, lambda now: now - start >= secs)
        ms, n = per_transaction_ms(s, threads, start, start + secs)
        print(f"median transaction before the outage: {ms * 1000:.0f} us "
              f"({n} transactions over {secs:.0f} s, {threads} threads)")
        return
    log = sys.argv[4]
    marks = {}
    offset = 0
    start = time.monotonic()

    def until(now):
        nonlocal offset
        with open(log, "rb") as f:
            f.seek(offset)
            text = f.read().decode(errors="replace")
        offset += len(text.encode())
        if "catching_up" in text and "begin" not in marks:
            marks["begin"] = now
        if "caught up:" in text and "end" not in marks:
            marks["end"] = now
        return ("end" in marks and now - marks["end"] > 0.2) or now - start > 60

    s = sample(history, until)
    if "begin" not in marks or "end" not in marks:
        print("median transaction during catch-up: no catch-up seen in the log")
        return
    window = marks["end"] - marks["begin"]
    if window < 0.005:
        # Both lines came in one read: the sampler did not run while the catch-up did (the
        # writers and the catch-up had both cores).
        print(f"median transaction during catch-up: not measured (the sampler saw its start "
              f"and end {window * 1000:.1f} ms apart)")
        return
    ms, n = per_transaction_ms(s, threads, marks["begin"], marks["end"])
    print(f"median transaction during catch-up: {ms * 1000:.0f} us ({n} transactions over "
          f"{(marks['end'] - marks['begin']) * 1000:.0f} ms as the log showed it)")


main()
