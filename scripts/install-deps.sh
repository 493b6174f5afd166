#!/usr/bin/env bash
# Installs every build, test and demo dependency from Debian's archive.
# Idempotent: packages already present are skipped, so a second run is fast.
set -euo pipefail

packages=(
  build-essential cmake pkg-config ninja-build
  libfabric-dev libfabric-bin
  libpmem-dev libpmem2-dev libpmemobj-dev libpmempool-dev pmdk-tools
  libssh-dev catch2 libfmt-dev libcli11-dev libxxhash-dev
  openssh-server openssh-client
  clang libclang-rt-14-dev clang-format gnuplot-nox
  iproute2 procps psmisc util-linux bsdutils file binutils
  python3 python3-prometheus-client python3-yaml lintian
  gdb debootstrap tmux bash-completion
  prometheus prometheus-node-exporter
)

missing=()
for p in "${packages[@]}"; do
  if ! dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q 'install ok installed'; then
    missing+=("$p")
  fi
done

if ((${#missing[@]})); then
  echo "install-deps: installing ${missing[*]}"
  export DEBIAN_FRONTEND=noninteractive
  SUDO=
  [ "$(id -u)" -eq 0 ] || SUDO=sudo
  $SUDO apt-get update -qq
  $SUDO apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
  # prometheus and prometheus-node-exporter are here for their programs (promtool; the tests
  # start their own exporter on loopback), not for their services, which Debian starts on
  # every interface: those this run installed are stopped and disabled again.
  for service in prometheus prometheus-node-exporter; do
    if [[ " ${missing[*]} " == *" $service "* ]] && [ -d /run/systemd/system ]; then
      $SUDO systemctl disable --now "$service" >/dev/null 2>&1 || true
    fi
  done
else
  echo "install-deps: all ${#packages[@]} packages present"
fi

# sshd refuses to start without its privilege-separation directory.
[ -d /run/sshd ] || { SUDO=; [ "$(id -u)" -eq 0 ] || SUDO=sudo; $SUDO mkdir -p /run/sshd; }
