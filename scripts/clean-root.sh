#!/usr/bin/env bash
# The packages on a clean Debian 12, as a new user meets them: a `debootstrap --variant=minbase
# bookworm` root, the .debs CPack builds from BUILD_DIR (default build/, as scripts/test.sh
# leaves it) installed there with apt (every dependency from Debian's archive, nothing from the
# build tree), then, inside the root, from the packages only:
#   a private sshd on loopback (scripts/private-sshd.sh, copied in), rpmemd from the rpmemd
#   package started over SSH, Debian's own pmempool (pmdk-tools) creating a libpmemobj pool
#   whose pool set has a REPLICA line (libpmempool dlopens our librpmem.so.1), and
#   `rpmem verify --json` / `rpmem check --json` / `rpmem status --json` on it.
# The root is cached as a tarball in CACHE_DIR (default /var/cache/rpmem-ci) between runs.
# Needs root (chroot, mounts). Usage: scripts/clean-root.sh
set -euo pipefail
src=$(cd "$(dirname "$0")/.." && pwd)
build=$(cd "${BUILD_DIR:-$src/build}" && pwd)
cache=${CACHE_DIR:-/var/cache/rpmem-ci}
mirror=${DEBIAN_MIRROR:-http://deb.debian.org/debian}
say() { echo "clean-root: $*"; }

[ "$(id -u)" -eq 0 ] || { echo "clean-root: needs root (chroot, mounts)" >&2; exit 1; }
[ -f "$build/CPackConfig.cmake" ] || {
  echo "clean-root: $build/CPackConfig.cmake is missing: build first (scripts/build.sh)" >&2
  exit 1
}
command -v debootstrap >/dev/null || {
  echo "clean-root: debootstrap is missing: run scripts/install-deps.sh" >&2
  exit 1
}

work=$(mktemp -d /tmp/rpmem-clean-root.XXXXXX)
root=$work/root
cleanup() {
  chroot "$root" /bin/sh -c 'kill $(cat /tmp/sshd/sshd.pid) 2>/dev/null' 2>/dev/null || true
  for m in dev/pts dev proc; do umount -l "$root/$m" 2>/dev/null || true; done
  [ -n "${KEEP_WORK:-}" ] && echo "clean-root: kept $work" || rm -rf "$work"
}
trap cleanup EXIT

say "packages: cpack from $build"
cpack --config "$build/CPackConfig.cmake" -B "$work/debs" >"$work/cpack.log" 2>&1 || {
  tail -20 "$work/cpack.log" >&2
  echo "clean-root: cpack failed (log above)" >&2
  exit 1
}
debs=$(cd "$work/debs" && ls librpmem1_*.deb rpmemd_*.deb rpmem-tools_*.deb)

mkdir -p "$root" "$cache"
tarball=$cache/bookworm-minbase.tar
if [ -f "$tarball" ]; then
  say "root: from the cache ($tarball)"
  tar -C "$root" -xf "$tarball"
else
  say "root: debootstrap --variant=minbase bookworm from $mirror"
  debootstrap --variant=minbase bookworm "$root" "$mirror" >"$work/debootstrap.log" 2>&1 || {
    tail -20 "$work/debootstrap.log" >&2
    echo "clean-root: debootstrap failed (log above): is $mirror reachable?" >&2
    exit 1
  }
  tar -C "$root" -cf "$tarball.tmp" . && mv "$tarball.tmp" "$tarball"
fi
mount -t proc proc "$root/proc"
mount --bind /dev "$root/dev"
mount --bind /dev/pts "$root/dev/pts"
cp /etc/resolv.conf "$root/etc/resolv.conf" 2>/dev/null || true
mkdir -p "$root/debs" "$root/opt/rpmem-check"
cp "$work/debs"/*.deb "$root/debs/"
cp "$src/scripts/private-sshd.sh" "$root/opt/rpmem-check/"

say "apt install $(echo "$debs" | tr '\n' ' ')pmdk-tools openssh-server openssh-client"
in_root() { chroot "$root" /usr/bin/env -i PATH=/usr/sbin:/usr/bin:/sbin:/bin HOME=/root \
  DEBIAN_FRONTEND=noninteractive "$@"; }
in_root apt-get update -qq >"$work/apt.log" 2>&1 &&
  in_root sh -c "cd /debs && apt-get install -y -qq --no-install-recommends \
    $(echo "$debs" | sed 's|^|./|' | tr '\n' ' ') pmdk-tools openssh-server openssh-client" \
    >>"$work/apt.log" 2>&1 || {
  tail -30 "$work/apt.log" >&2
  echo "clean-root: apt could not install the packages (log above)" >&2
  exit 1
}

say "replicating a stock libpmemobj pool inside the root"
# A free loopback port, found here (the root has no python3 for private-sshd.sh's own search).
port=$(python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])')
in_root RPMEM_SSHD_PORT="$port" /bin/bash -euo pipefail -c '
eval "$(/opt/rpmem-check/private-sshd.sh start /tmp/sshd)"
export RPMEM_SSH_CONFIG RPMEM_SSH_KNOWN_HOSTS RPMEM_SSH_IDENTITY RPMEM_SSH=$RPMEM_SSH_WRAPPER
node_home=/tmp/sshd/home                       # rpmemd serves $HOME of the SSH session
mkdir -p "$node_home/pools" /srv/app
printf "PMEMPOOLSET\n80M %s/pools/remote.part\n" "$node_home" > "$node_home/remote.set"
printf "PMEMPOOLSET\n64M /srv/app/local.part\nREPLICA %s remote.set\n" \
  "$RPMEM_DEMO_TARGET" > /srv/app/pool.set
echo "librpmem: $(dpkg-query -W -f="\${Version}" librpmem1), rpmemd: $(command -v rpmemd), \
pmempool: $(dpkg-query -W -f="\${Version}" pmdk-tools) (Debian)"
pmempool create --layout=clean-root obj /srv/app/pool.set
test -s "$node_home/pools/remote.part"
pmempool info "$node_home/pools/remote.part" | grep -E "^(Poolset UUID|Signature)"
verify=$(rpmem verify --json /srv/app/pool.set)
echo "rpmem verify --json: $verify"
case $verify in *"\"in_sync\":true"*) ;; *) echo "not in sync" >&2; exit 1 ;; esac
check=$(rpmem check --json /srv/app/pool.set)
echo "rpmem check --json: $check"
case $check in *"\"consistent\":true"*) ;; *) echo "not consistent" >&2; exit 1 ;; esac
rpmem status --json --dir /nonexistent >/dev/null
/opt/rpmem-check/private-sshd.sh stop /tmp/sshd
'
say "ok: the packages install on a clean Debian 12 root and replicate a stock pmemobj pool"
