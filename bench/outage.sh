#!/usr/bin/env bash
# A replica's outage under stock libpmemobj (issue 28; docs/lab/performance-records.md,
# "A replica's outage"):
# tests/support/pmemobj_log.c, THREADS threads committing transactions through our librpmem to
# one replica on a private sshd on loopback (pools in /dev/shm, PMEM_IS_PMEM_FORCE=1).
#
#   bench/outage.sh reconnect [KILLS]    rpmemd SIGKILLed KILLS times (default 10), 2 s apart:
#                                        each reconnect's time as librpmem logs it ("reconnected
#                                        after N ms": detect, new SSH session, pool reopened,
#                                        fabric connected), and the longest transaction
#   bench/outage.sh catchup [SECONDS]    rpmemd killed and logins refused for SECONDS (default
#                                        30) with RPMEM_RECONNECT_TIMEOUT=1000: the replica is
#                                        lost, the writers go on; then back: the bytes to go, the
#                                        bytes moved and the catch-up's time as logged, and the
#                                        transactions per second before, during and after,
#                                        and the median transaction before the outage and
#                                        during the catch-up (bench/tx_sampler.py)
#
# REPLICATION=async runs the writer with RPMEM_REPLICATION=async (its calls not held by the
# outage; the catch-up's last round holds its sending thread instead).
# REPLICA_DIR=D puts the replica's pool under D instead of /dev/shm (for example a tmpfs
# mounted with huge=always, whose 2 MiB pages fault in as a DAX file system's do).
# RESIDENT=N runs rpmemd with --resident=N (sessions handed to a spare that loaded libfabric
# ahead; rpmemd(1)); the process killed is then the session's (rpmemd-session).
# Uses the build in ${BUILD_DIR:-build} as it is (scripts/build.sh first). Prints one line per
# figure; the writer's log is kept in $OUT (default /tmp/rpmem-outage.log).
set -euo pipefail
cd "$(dirname "$0")/.."
mode=${1:-reconnect}
build=$(cd "${BUILD_DIR:-build}" && pwd)
threads=${THREADS:-4}
out=${OUT:-/tmp/rpmem-outage.log}
work=$(mktemp -d /tmp/rpmem-outage.XXXXXX)
replica=$(mktemp -d "${REPLICA_DIR:-/dev/shm}/rpmem-outage.XXXXXX")
writer_pid=
cleanup() {
  pkill -f "^rpmemd-(resident|spare|session) --poolset-dir=$replica" 2>/dev/null || true
  [ -z "$writer_pid" ] || kill -9 "$writer_pid" 2>/dev/null || true
  [ ! -f "$work/sshd/authorized_keys.off" ] || mv "$work/sshd/authorized_keys.off" "$work/sshd/authorized_keys"
  scripts/private-sshd.sh stop "$work/sshd" >/dev/null 2>&1 || true
  rm -rf "$work" "$replica"
}
trap cleanup EXIT
printf 'PMEMPOOLSET\n96M %s/log.part\n' "$replica" > "$replica/log.set"
eval "$(scripts/private-sshd.sh start "$work/sshd")"
printf 'PMEMPOOLSET\n64M %s/local.part\nREPLICA %s log.set\n' "$work" "$RPMEM_DEMO_TARGET" > "$work/pool.set"
export RPMEM_CMD="PMEM_IS_PMEM_FORCE=1 $build/bin/rpmemd --poolset-dir=$replica --log-file=$work/rpmemd.log${RESIDENT:+ --resident=$RESIDENT --status-dir=$work/sessions}"
export LD_LIBRARY_PATH=$build/lib PMEM_IS_PMEM_FORCE=1 RPMEM_PROVIDER=${RPMEM_PROVIDER:-tcp}
export RPMEM_LOG_LEVEL=1 RPMEM_TIMEOUT=${RPMEM_TIMEOUT:-2000}
[ "$mode" = catchup ] && export RPMEM_RECONNECT_TIMEOUT=1000
[ -z "${REPLICATION:-}" ] || export RPMEM_REPLICATION=$REPLICATION

# Committed transactions so far, all threads (the history file: 16 u64 counters first).
committed() {
  python3 -c 'import struct,sys; d=open(sys.argv[1],"rb").read(128); print(sum(struct.unpack("16Q",d)))' "$work/history"
}
longest_ms() {
  python3 -c 'import struct,sys; d=open(sys.argv[1],"rb").read(256); print("%.1f" % (max(struct.unpack("16Q",d[128:]))/1e6))' "$work/history"
}
rpmemd_pid() {
  if [ -n "${RESIDENT:-}" ] && pgrep -f "^rpmemd-session --poolset-dir=$replica" >/dev/null; then
    pgrep -f "^rpmemd-session --poolset-dir=$replica" | head -1
  else
    pgrep -f "rpmemd --poolset-dir=$replica" | head -1
  fi
}

mkfifo "$work/stdin"
"$build/bin/rpmem_pmemobj_log" run "$work/pool.set" "$work/history" "$threads" < "$work/stdin" > "$work/writer.out" 2> "$out" &
writer_pid=$!
exec 3> "$work/stdin"
for _ in $(seq 600); do grep -q ready "$work/writer.out" 2>/dev/null && break; sleep 0.1; done
sleep 2
rate() { # transactions per second over $1 seconds
  local a b; a=$(committed); sleep "$1"; b=$(committed); echo $(( (b - a) / $1 ))
}
case "$mode" in
reconnect)
  kills=${2:-10}
  for _ in $(seq "$kills"); do kill -9 "$(rpmemd_pid)"; sleep 2; done
  grep -o 'reconnected after [0-9]* ms' "$out" | awk '{print $3}' | sort -n |
    awk '{v[NR]=$1} END {if (NR) printf "reconnects %d: median %d ms, min %d, max %d\n", NR, v[int((NR+1)/2)], v[1], v[NR]}'
  echo "longest transaction $(longest_ms) ms (threads $threads, provider $RPMEM_PROVIDER)"
  ;;
catchup)
  seconds=${2:-30}
  echo "transactions/s before: $(rate 5)"
  python3 bench/tx_sampler.py baseline "$work/history" "$threads" 2
  mv "$work/sshd/authorized_keys" "$work/sshd/authorized_keys.off"
  kill -9 "$(rpmemd_pid)"
  sleep 2
  echo "transactions/s with the replica lost: $(rate $((seconds - 2)))"
  python3 bench/tx_sampler.py catchup "$work/history" "$threads" "$out" > "$work/catchup.txt" &
  sampler=$!
  mv "$work/sshd/authorized_keys.off" "$work/sshd/authorized_keys"
  echo "transactions/s while it is brought back: $(rate 2)"
  for _ in $(seq 600); do grep -q 'caught up' "$out" && break; sleep 0.1; done
  wait "$sampler" && cat "$work/catchup.txt"
  grep -o 'replica catching_up ([0-9]* bytes to go)' "$out" | tail -1
  grep -o 'caught up: [0-9]* bytes moved in [0-9]* round(s), [0-9]* ms, the [a-z]* held for the last [0-9.]* ms ([0-9]* bytes of blocks changed[^)]*)' "$out" | tail -1
  echo "transactions/s after: $(rate 5)"
  ;;
*) echo "$0: reconnect or catchup" >&2; exit 2 ;;
esac
exec 3>&-
wait "$writer_pid" && echo "the writer closed its pool and exited 0" || echo "the writer FAILED (see $out)"
writer_pid=
