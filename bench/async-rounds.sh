#!/bin/bash
# 3 alternating rounds: synchronous then asynchronous librpmem under stock libpmemobj
# (docs/lab/performance-records.md, issue 17). Uses the build in build/ as it is.
cd "$(dirname "$0")/.."
for r in 1 2 3; do
  for mode in sync async; do
    ops=20000; [ $mode = async ] && ops=400000
    echo "== round $r $mode $(cut -d' ' -f1 /proc/loadavg)"
    RPMEM_REPLICATION=$mode SKIP_BUILD=1 scripts/bench.sh -s pmemobj --pmemobj-threads 1,4 --pmemobj-ops $ops 2>&1 | grep -E "pmemobj-tx"
  done
done
