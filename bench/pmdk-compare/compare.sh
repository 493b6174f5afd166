#!/usr/bin/env bash
# PMDK 1.12.1 librpmem+rpmemd vs rpmem, side by side: PMDK's pmembench (rpmem_persist) through
# each library (LD_LIBRARY_PATH), each with its own rpmemd, GPSPM unless APM=1, pools in
# /dev/shm with PMEM_IS_PMEM_FORCE=1, private sshd on loopback. Rounds alternate.
# usage: compare.sh run pmdk|rpmem PROVIDER PMEMBENCH-ARGS...   (pmembench's CSV on stdout)
#        compare.sh close pmdk|rpmem PROVIDER REPS                (median close and create, ms)
# Environment: PMDK_TREE (a PMDK 1.12.1 tree built with BUILD_RPMEM=y and pmembench: setup.sh),
# BUILD (rpmem's build directory), SSHD_DIR (scripts/private-sshd.sh start SSHD_DIR, running),
# SIZE (pool size, default 320M remote / 300M local), APM=1 (--persist-apm on both rpmemds;
# rpmem's runs under scripts/fake-eadr.sh, as it offers APM over tcp and sockets only on an eADR
# platform, PMDK's wherever asked), RPMEMD_X (more arguments for rpmem's rpmemd).
set -u
here=$(cd "$(dirname "$0")" && pwd)
P=${PMDK_TREE:-/tmp/pmdk-cmp/src}/src
R=$(cd "${BUILD:-$here/../../build}" && pwd)
S=${SSHD_DIR:-$S}
PORT=$(sed -n 's/^Port //p' "$S/sshd_config")
T=root@127.0.0.1:$PORT
rem=/dev/shm/cmp-remote; loc=/dev/shm/cmp-local
mkdir -p $rem $loc
export RPMEM_SSH=$S/ssh RPMEM_SSH_CONFIG=$S/ssh_config \
  RPMEM_SSH_IDENTITY=$S/client_key RPMEM_SSH_KNOWN_HOSTS=$S/known_hosts
export PMEM_IS_PMEM_FORCE=1
apm=${APM:+--persist-apm}
eadr=${APM:+$here/../../scripts/fake-eadr.sh }
# Runs a command with one library and its own rpmemd: with_lib pmdk|rpmem PROVIDER 'RPMEMD-ARGS' CMD...
with_lib() {
  local lib=$1 prov=$2 args=$3; shift 3
  if [ "$lib" = pmdk ]; then
    env LD_LIBRARY_PATH=$P/nondebug RPMEM_ENABLE_SOCKETS=1 RPMEM_ENABLE_VERBS=0 \
      RPMEM_CMD="PMEM_IS_PMEM_FORCE=1 ${RPMEMD_ENV:-} LD_LIBRARY_PATH=$P/nondebug $P/tools/rpmemd/rpmemd --poolset-dir=$rem --log-file=$rem/rpmemd.log $args" \
      "$@"
  else
    env LD_LIBRARY_PATH=$R/lib:$P/nondebug RPMEM_PROVIDER=$prov \
      RPMEM_CMD="PMEM_IS_PMEM_FORCE=1 ${RPMEMD_ENV:-} $eadr$R/bin/rpmemd --poolset-dir=$rem --log-file=$rem/rpmemd.log $args ${RPMEMD_X:-}" \
      "$@"
  fi
}
run() { # lib provider pmembench-args...
  local lib=$1 prov=$2; shift 2
  rm -f $rem/* $loc/*
  printf 'PMEMPOOLSET\n%s %s/r.part\n' "${SIZE:-320M}" $rem > $rem/r.set
  printf 'PMEMPOOLSET\n%s %s/l.part\nREPLICA %s r.set\n' "${SIZE:-300M}" $loc $T > $loc/bench.set
  with_lib "$lib" "$prov" "$apm" $P/benchmarks/pmembench "$@" -f $loc/bench.set
}
close() { # lib provider reps
  local lib=$1 prov=$2 reps=$3
  rm -f $rem/*
  printf 'PMEMPOOLSET\n40M %s/c.part\n' $rem > $rem/c.set
  with_lib "$lib" "$prov" "" ${CLOSE_WRAP:-} "${CLOSE_TIME:-/tmp/pmdk-cmp/close_time}" $T c.set $rem/c.part "$reps"
}
"$@"
