#!/usr/bin/env bash
# ROUNDS alternating rounds of every row for PMDK (sockets), rpmem sockets, rpmem tcp; lines
# "row lib provider value" appended to OUT (summary.py OUT prints the medians and ratios).
set -u
C=$(cd "$(dirname "$0")" && pwd)/compare.sh
out=${OUT:-results.txt}
col() { tail -1 | cut -d';' -f"$1"; }
libs=("pmdk sockets" "rpmem sockets" "rpmem tcp")
for round in $(seq 1 ${ROUNDS:-3}); do
  # rotate the order each round
  order=("${libs[@]:$((round % 3))}" "${libs[@]:0:$((round % 3))}")
  for l in "${order[@]}"; do
    set -- $l
    echo "p64_us $l $(($($C run $1 $2 rpmem_persist -d 64 -n 2000 -t 1 2>/dev/null | col 11)/1000))" >> $out
    echo "p4k_us $l $(($($C run $1 $2 rpmem_persist -d 4096 -n 2000 -t 1 2>/dev/null | col 11)/1000))" >> $out
    echo "p64k_t1_ops $l $($C run $1 $2 rpmem_persist -d 65536 -n 1000 -t 1 2>/dev/null | col 2)" >> $out
    echo "p64k_t4_ops $l $($C run $1 $2 rpmem_persist -d 65536 -n 500 -t 4 2>/dev/null | col 2)" >> $out
    echo "p1m_us $l $(($($C run $1 $2 rpmem_persist -d 1048576 -n 200 -t 1 2>/dev/null | col 11)/1000))" >> $out
    echo "p1m_t4_ops $l $($C run $1 $2 rpmem_persist -d 1048576 -n 60 -t 4 2>/dev/null | col 2)" >> $out
    echo "tx_t1_ops $l $(SIZE=100M $C run $1 $2 obj_tx_alloc -d 256 -n 2000 -t 1 2>/dev/null | col 2)" >> $out
    echo "tx_t4_ops $l $(SIZE=100M $C run $1 $2 obj_tx_alloc -d 256 -n 1000 -t 4 2>/dev/null | col 2)" >> $out
    echo "close_ms $l $($C close $1 $2 5 2>/dev/null | awk '{print $2}')" >> $out
    echo "apm_p64_us $l $(($(APM=1 $C run $1 $2 rpmem_persist -d 64 -n 2000 -t 1 2>/dev/null | col 11)/1000))" >> $out
    echo "apm_p4k_us $l $(($(APM=1 $C run $1 $2 rpmem_persist -d 4096 -n 2000 -t 1 2>/dev/null | col 11)/1000))" >> $out
    echo "apm_p1m_us $l $(($(APM=1 $C run $1 $2 rpmem_persist -d 1048576 -n 200 -t 1 2>/dev/null | col 11)/1000))" >> $out
  done
  echo "round $round done $(date +%T) $(cut -d' ' -f1-3 /proc/loadavg)" >> $out
done
