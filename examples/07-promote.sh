#!/bin/sh
# SPDX-License-Identifier: BSD-3-Clause
#
# 07-promote: the master is lost; a replica becomes the master on its own host.
#
# Step 06 replicated a libpmemobj pool to a replica node. Here the master host "dies" (its
# part file is deleted), and on the replica node `rpmem promote` rewrites the replica's part
# headers so they no longer link to the lost master. Stock libpmemobj then opens the replica's
# pool set as an ordinary local pool, every transaction intact.
#
#   07-promote.sh WORKDIR [user@]host[:port] REPLICA_DIR
#
#   WORKDIR      local directory for the master part and its pool set (created)
#   host         the replica node, as in the REPLICA line (rpmemd runs there over ssh)
#   REPLICA_DIR  rpmemd's --poolset-dir on that node; it holds remote.set, e.g.
#                    PMEMPOOLSET
#                    80M /pools/remote.part
#
# Environment: what 06 needs to reach rpmemd (RPMEM_CMD, RPMEM_SSH, ...), and
#   BIN  directory of 06-pmemobj-replica and rpmem on both hosts (default: found in PATH)
#   SSH  how to run a command on the replica node (default: $RPMEM_SSH, else ssh)
set -eu

if [ $# -ne 3 ]; then
	echo "usage: $0 WORKDIR [user@]host[:port] REPLICA_DIR" >&2
	exit 2
fi
workdir=$1 target=$2 replica_dir=$3
bin=${BIN:+$BIN/}
ssh_cmd=${SSH:-${RPMEM_SSH:-ssh}}

# [user@]host[:port] -> ssh arguments (ssh takes the port as -p).
case $target in
*:*) host=${target%:*} port=${target##*:} ;;
*) host=$target port= ;;
esac
on_replica() {
	if [ -n "$port" ]; then
		$ssh_cmd -p "$port" "$host" "$@"
	else
		$ssh_cmd "$host" "$@"
	fi
}

step() { printf '\n== %s\n' "$*"; }

mkdir -p "$workdir"
cat >"$workdir/pool.set" <<SET
PMEMPOOLSET
64M $workdir/master.part
REPLICA $target remote.set
SET

step "1. libpmemobj creates the pool and replicates every transaction to $target"
"${bin}06-pmemobj-replica" create "$workdir/pool.set"

step "2. the master is lost"
rm -f "$workdir/master.part"
echo "removed $workdir/master.part"

step "3. on the replica node: libpmemobj refuses the replica as it is (it links to the lost master)"
if on_replica "${bin}06-pmemobj-replica verify $replica_dir/remote.set"; then
	echo "unexpected: the replica opened before promotion" >&2
	exit 1
fi

step "4. on the replica node: rpmem promote"
on_replica "${bin}rpmem promote $replica_dir/remote.set --output $replica_dir/promoted.set"

step "5. on the replica node: stock libpmemobj opens the promoted pool, data intact"
on_replica "${bin}06-pmemobj-replica verify $replica_dir/promoted.set"
