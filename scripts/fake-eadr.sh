#!/bin/sh
# Runs COMMAND [ARGS...] as if the host flushed its CPU caches on power loss (eADR), for tests and
# benchmarks on machines that do not (this one included).
#
# libpmem's pmem_has_auto_flush() answers 1 when every NVDIMM region under /sys/bus/nd/devices has
# persistence_domain "cpu_cache". This script gives COMMAND a private mount namespace (unshare -m;
# mounts there never reach the host) whose /sys/bus/nd/devices is a tmpfs holding one such region,
# then execs it: rpmemd there offers APM over tcp and sockets (rpmemd(1), persist-apm), and libpmem
# there skips cache flushes, as on an eADR platform. The real libpmem reads the fake, nothing else
# changes. Needs root (CAP_SYS_ADMIN).
#
# Never on a replica that keeps data: it makes rpmemd treat writes sitting in the CPU caches as
# durable, and a power loss there loses them.
set -eu
if [ $# -eq 0 ]; then
  echo "usage: $0 COMMAND [ARGS...]" >&2
  exit 2
fi
exec unshare -m -- sh -c '
  set -e
  d=/sys/bus/nd/devices
  if [ -d "$d" ]; then
    mount -t tmpfs -o size=64k,mode=0755 rpmem-fake-eadr "$d"
  else # no libnvdimm bus: a /sys/bus of its own (the other buses hidden from COMMAND)
    mount -t tmpfs -o size=64k,mode=0755 rpmem-fake-eadr /sys/bus
    mkdir -p "$d"
  fi
  mkdir "$d/region-fake"
  ln -s region-fake "$d/region0"
  echo cpu_cache > "$d/region-fake/persistence_domain"
  exec "$@"' fake-eadr "$@"
