#!/usr/bin/env bash
# Opening a pool with and without a resident rpmemd (issue 28; docs/lab/performance-records.md,
# "A resident rpmemd"): `rpmem-bench -s open` against a private sshd on loopback, ROUNDS rounds
# (default 3) alternating rpmemd without and with --resident=60, REPS opens per round (default
# 10). Prints the create and open rows of each round. Uses the build in ${BUILD_DIR:-build} as it is.
set -euo pipefail
cd "$(dirname "$0")/.."
build=$(cd "${BUILD_DIR:-build}" && pwd)
work=$(mktemp -d /tmp/rpmem-open-rounds.XXXXXX)
replica=$(mktemp -d /dev/shm/rpmem-open-rounds.XXXXXX)
cleanup() {
  pkill -f "^rpmemd-(resident|spare|session) --poolset-dir=$replica" 2>/dev/null || true
  scripts/private-sshd.sh stop "$work/sshd" >/dev/null 2>&1 || true
  rm -rf "$work" "$replica"
}
trap cleanup EXIT
printf 'PMEMPOOLSET\n300M %s/p.part\n' "$replica" > "$replica/p.set"
eval "$(scripts/private-sshd.sh start "$work/sshd")"
for round in $(seq "${ROUNDS:-3}"); do
  for resident in "" "--resident=60 --status-dir=$work/sessions"; do
    echo "== round $round: rpmemd ${resident:-without --resident}"
    export RPMEM_CMD="$build/bin/rpmemd --poolset-dir=$replica --log-file=$work/rpmemd.log $resident"
    "$build/bin/rpmem-bench" -s open --open-reps "${REPS:-10}" "$RPMEM_DEMO_TARGET" p.set |
      grep -E ' (create|open)(\.| )'
    rm -f "$replica/p.part"
  done
done
