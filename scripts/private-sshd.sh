#!/usr/bin/env bash
# Starts (or stops) a private sshd on loopback with its own host and client keys, so rpmem can be
# tried on one machine without touching ~/.ssh or a system sshd.
#   scripts/private-sshd.sh start DIR [ADDRESS]   prints shell exports for the client
#   scripts/private-sshd.sh stop DIR
# The exports point librpmem at DIR's keys: RPMEM_SSH_IDENTITY, RPMEM_SSH_KNOWN_HOSTS,
# RPMEM_SSH_CONFIG, RPMEM_DEMO_TARGET (user@ADDRESS:PORT), and RPMEM_SSH_WRAPPER (an ssh that
# uses DIR's config: set RPMEM_SSH to it for programs that run ssh themselves, like pmempool).
# RPMEM_SSHD_PORT=N uses port N instead of looking for a free one.
set -euo pipefail

cmd=${1:?usage: $0 start|stop DIR [ADDRESS]}
dir=${2:?usage: $0 start|stop DIR [ADDRESS]}
addr=${3:-127.0.0.1}

stop() {
  if [ -f "$dir/sshd.pid" ]; then
    kill "$(cat "$dir/sshd.pid")" 2>/dev/null || true
    rm -f "$dir/sshd.pid"
  fi
}

free_port() {
  python3 - "$addr" <<'PY' 2>/dev/null || echo $(( 20000 + RANDOM % 20000 ))
import socket, sys
s = socket.socket(); s.bind((sys.argv[1], 0)); print(s.getsockname()[1]); s.close()
PY
}

case "$cmd" in
stop) stop; exit 0 ;;
start) ;;
*) echo "$0: unknown command '$cmd' (start or stop)" >&2; exit 2 ;;
esac

sshd_bin=$(command -v sshd || echo /usr/sbin/sshd)
[ -x "$sshd_bin" ] || { echo "$0: sshd not found: run scripts/install-deps.sh" >&2; exit 1; }
mkdir -p "$dir" /run/sshd
dir=$(cd "$dir" && pwd)
stop
[ -f "$dir/host_key" ] || ssh-keygen -q -t ed25519 -N '' -f "$dir/host_key" -C rpmem-host
[ -f "$dir/client_key" ] || ssh-keygen -q -t ed25519 -N '' -f "$dir/client_key" -C rpmem-client
cp "$dir/client_key.pub" "$dir/authorized_keys"
chmod 600 "$dir/authorized_keys" "$dir/host_key" "$dir/client_key"
port=${RPMEM_SSHD_PORT:-$(free_port)} # RPMEM_SSHD_PORT: a port the caller knows is free
user=$(id -un)
cat > "$dir/sshd_config" <<CFG
ListenAddress $addr
Port $port
HostKey $dir/host_key
AuthorizedKeysFile $dir/authorized_keys
PidFile $dir/sshd.pid
PermitRootLogin prohibit-password
PasswordAuthentication no
KbdInteractiveAuthentication no
UsePAM no
StrictModes no
PrintMotd no
AcceptEnv RPMEM_* PMEM_*
# An empty HOME: the login shell skips the machine's ~/.bashrc (root's runs pyenv init here,
# ~0.6 s per login), and rpmemd reads no ~/.rpmemd.conf of the machine's.
SetEnv HOME=$dir/home
CFG
mkdir -p "$dir/home"
echo "[$addr]:$port $(cut -d' ' -f1,2 "$dir/host_key.pub")" > "$dir/known_hosts"
cat > "$dir/ssh_config" <<CFG
Host rpmem-replica
  HostName $addr
  Port $port
  User $user
  IdentityFile $dir/client_key
  UserKnownHostsFile $dir/known_hosts
Host *
  IdentityFile $dir/client_key
  UserKnownHostsFile $dir/known_hosts
  BatchMode yes
CFG
# An ssh-compatible program for RPMEM_SSH (libpmempool runs it itself for `rpmemd --remove`).
printf '#!/bin/sh\nexec ssh -F %s "$@"\n' "$dir/ssh_config" > "$dir/ssh"
chmod +x "$dir/ssh"
"$sshd_bin" -f "$dir/sshd_config" -E "$dir/sshd.log"
for _ in $(seq 100); do
  (exec 3<>"/dev/tcp/$addr/$port") 2>/dev/null && break
  sleep 0.05
done
(exec 3<>"/dev/tcp/$addr/$port") 2>/dev/null || { echo "$0: sshd did not start: see $dir/sshd.log" >&2; cat "$dir/sshd.log" >&2; exit 1; }
cat <<ENV
export RPMEM_SSH_IDENTITY=$dir/client_key
export RPMEM_SSH_KNOWN_HOSTS=$dir/known_hosts
export RPMEM_SSH_CONFIG=$dir/ssh_config
export RPMEM_DEMO_TARGET=$user@$addr:$port
export RPMEM_SSH_WRAPPER=$dir/ssh
ENV
