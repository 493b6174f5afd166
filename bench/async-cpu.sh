#!/bin/bash
# Where the CPU goes in librpmem's asynchronous mode under stock libpmemobj (issue 17): for 1
# and 4 writer threads, the transactions per second and the whole machine's CPU use sampled
# every 250 ms while the benchmark runs (/proc/stat: user+nice+system+irq+softirq over all
# cores). The benchmark runs its local-only transactions first, then the asynchronous ones:
# the samples show both phases (setup between them is near idle). With RPMEM_LOG_LEVEL=3 the
# writer's close summary says how far the lag went and how long a persist waited for its
# bound. Uses the build in build/. Usage: bench/async-cpu.sh [OPS]
cd "$(dirname "$0")/.."
ops=${1:-4000000}
sampler() {
  local prev cur
  read -r -a prev < <(awk '/^cpu /{print $2+$3+$4+$7+$8, $2+$3+$4+$5+$6+$7+$8}' /proc/stat)
  while sleep 0.25; do
    read -r -a cur < <(awk '/^cpu /{print $2+$3+$4+$7+$8, $2+$3+$4+$5+$6+$7+$8}' /proc/stat)
    printf '%d%% ' $((100 * (cur[0] - prev[0]) / (cur[1] - prev[1] + 1)))
    prev=("${cur[@]}")
  done
}
for threads in 1 4; do
  echo "== $threads writer thread(s), $ops transactions"
  sampler > /tmp/async-cpu.$$ &
  s=$!
  RPMEM_LOG_LEVEL=3 RPMEM_REPLICATION=async SKIP_BUILD=1 scripts/bench.sh -s pmemobj \
    --pmemobj-threads "$threads" --pmemobj-ops "$ops" 2>&1 |
    grep -E "pmemobj-tx|asynchronous replication" | sed -E 's/ +/ /g'
  kill "$s"
  echo "CPU busy every 250 ms: $(cat /tmp/async-cpu.$$)"
  rm -f /tmp/async-cpu.$$
done
