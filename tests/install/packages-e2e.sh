#!/bin/bash
# packages-e2e.sh [DEBDIR]: the Debian packages on a fresh Debian 12 root
# (debootstrap minbase, cached like ../shared/tools/fresh-machine does, in a
# chroot of its own). Installs them with `apt-get install ./*.deb`, checks the
# user, data directory and files, runs punchcardd the way punchcardd.service
# does (its ExecStart, as its User, without systemd), submits a job with the
# installed punch and fetches the result; then an "upgrade" with a job running
# (stop the daemon as KillMode=process does, reinstall the packages, start
# it again: the job is re-adopted and succeeds); then purges the packages and
# checks what remains. Builds the packages with scripts/package unless DEBDIR
# holds them. Root and network; about 3 minutes with the base cached. Not in
# the default suite: run it by hand (docs/install.md).
set -u
[ "$(id -u)" -eq 0 ] || { echo "SKIP: needs root (chroot, bind mounts)"; exit 77; }
command -v debootstrap >/dev/null || { echo "SKIP: debootstrap not installed"; exit 77; }
src=$(cd "$(dirname "$0")/../.." && pwd)
cache=${FRESH_CACHE:-/var/tmp/fresh-machine}
base=$cache/bookworm-minbase.tar
work=$(mktemp -d /var/tmp/punchcard-pkg-e2e.$$.XXXXXX) || exit 1
root=$work/root
daemon_pid=
cleanup() {
  [ -n "$daemon_pid" ] && kill "$daemon_pid" 2>/dev/null && wait "$daemon_pid" 2>/dev/null
  # Supervisors and ranks left by a failed run, by the pids their chroot shows.
  for p in /proc/[0-9]*; do
    [ "$(readlink "$p/root" 2>/dev/null)" = "$root" ] && kill -9 "${p#/proc/}" 2>/dev/null
  done
  for m in dev/shm dev/pts dev sys proc; do
    mountpoint -q "$root/$m" 2>/dev/null && umount "$root/$m"
  done
  # Never through a bind of the host's /dev or /sys that did not come off.
  for m in dev/shm dev/pts dev sys proc; do
    mountpoint -q "$root/$m" 2>/dev/null && return
  done
  rm -rf --one-file-system "$work"
}
trap cleanup EXIT
fail=0
check() { if "$@"; then :; else echo "FAIL: $*"; fail=1; fi; }
step() { printf '==> %s (%ds)\n' "$*" "$SECONDS"; }
in_root() { chroot "$root" /usr/bin/env -i HOME=/root PATH=/usr/sbin:/usr/bin:/sbin:/bin \
              DEBIAN_FRONTEND=noninteractive LC_ALL=C.UTF-8 /bin/bash -c "$1"; }

debs=${1:-}
if [ -z "$debs" ]; then
  step "scripts/package"
  debs=$work/debs
  "$src/scripts/package" "$debs" >"$work/package.log" 2>&1 || { tail -20 "$work/package.log"; exit 1; }
fi
ls "$debs"/punchcardd_*.deb "$debs"/punch_*.deb "$debs"/punchcard-engine_*.deb >/dev/null || exit 1

if [ ! -s "$base" ]; then
  step "debootstrap --variant=minbase bookworm (once)"
  mkdir -p "$cache"
  mirror=$(awk '/^URIs:/{print $2; exit}' /etc/apt/sources.list.d/debian.sources 2>/dev/null)
  [ -n "$mirror" ] || mirror=http://deb.debian.org/debian
  debootstrap --variant=minbase bookworm "$work/base" "$mirror" >"$work/debootstrap.log" 2>&1 ||
    { tail "$work/debootstrap.log"; exit 1; }
  tar -C "$work/base" -cf "$base.$$" . && mv "$base.$$" "$base" && rm -rf "$work/base"
fi
step "fresh root in $root"
mkdir -p "$root" && tar -C "$root" -xf "$base" || exit 1
cp /etc/resolv.conf "$root/etc/resolv.conf"
for m in proc sys dev dev/pts dev/shm; do mount --bind "/$m" "$root/$m" || exit 1; done
mkdir -p "$root/tmp/debs"
cp "$debs"/punchcardd_*.deb "$debs"/punch_*.deb "$debs"/punchcard-engine_*.deb "$root/tmp/debs/"

step "apt-get install ./*.deb"
in_root 'apt-get update -q >/dev/null && cd /tmp/debs && apt-get install -y -q ./*.deb' \
  >"$work/apt.log" 2>&1 || { tail -30 "$work/apt.log"; exit 1; }
check in_root 'getent passwd punchcard | grep -q ":/var/lib/punchcard:"'
check in_root '[ "$(stat -c %U:%G:%a /var/lib/punchcard)" = punchcard:punchcard:750 ]'
check in_root 'test -s /etc/punchcard/punchcardd.conf -a -s /lib/systemd/system/punchcardd.service'
check in_root 'grep -qx "data-dir = /var/lib/punchcard" /etc/punchcard/punchcardd.conf'
check in_root 'test -L /etc/systemd/system/multi-user.target.wants/punchcardd.service'
check in_root 'man -w punch punchcardd punch-train punchcard-job >/dev/null 2>&1 || test -s /usr/share/man/man8/punchcardd.8.gz'
in_root 'dpkg -L punchcardd punch punchcard-engine' | sort -u >"$work/files"

step "secrets, config, and the unit's ExecStart as its User"
in_root 'punch keygen --identity e2e 2>/dev/null >/root/keygen &&
         printf "[%s]\n" "$(sed -n 2p /root/keygen)" >/etc/punchcard/secrets.json &&
         chown punchcard:punchcard /etc/punchcard/secrets.json && chmod 600 /etc/punchcard/secrets.json &&
         sed -i "s/^listen = .*/listen = 127.0.0.1:0/; s/^max-running = .*/max-running = 0/" /etc/punchcard/punchcardd.conf' ||
  { echo "FAIL: keygen"; exit 1; }
secret=$(sed -n 1p "$root/root/keygen")
exec_start=$(sed -n 's/^ExecStart=//p' "$root/lib/systemd/system/punchcardd.service")
user=$(sed -n 's/^User=//p' "$root/lib/systemd/system/punchcardd.service")
start_daemon() {
  : >"$root/tmp/punchcardd.log"
  chroot "$root" /usr/bin/env -i PATH=/usr/sbin:/usr/bin:/sbin:/bin \
    setpriv --reuid="$user" --regid="$user" --init-groups $exec_start 2>>"$root/tmp/punchcardd.log" &
  daemon_pid=$!
  port=
  for _ in $(seq 300); do
    port=$(sed -n 's/.*listening on .*(port \([0-9]*\)).*/\1/p' "$root/tmp/punchcardd.log")
    [ -n "$port" ] && break
    kill -0 "$daemon_pid" 2>/dev/null || break
    sleep 0.1
  done
  [ -n "$port" ] || { echo "FAIL: punchcardd did not start:"; cat "$root/tmp/punchcardd.log"; exit 1; }
}
stop_daemon() { kill "$daemon_pid"; wait "$daemon_pid"; daemon_pid=; }
punch() { in_root "PUNCH_URL=http://127.0.0.1:$port PUNCH_SECRET=$secret punch $1"; }
start_daemon
check grep -q "engine /usr/bin/punch-train" "$root/tmp/punchcardd.log"
check in_root '[ "$(stat -c %U /var/lib/punchcard/punchcard.db)" = punchcard ]'

cat >"$root/tmp/quick.json" <<'JOB'
{"name": "e2e-quick", "model": {"input": [8], "layers": [{"type": "dense", "units": 4, "activation": "softmax"}]},
 "data": {"format": "synthetic", "synthetic_train": 256, "synthetic_test": 64, "num_classes": 4},
 "training": {"epochs": 2, "batch_size": 32, "seed": 1}}
JOB
cat >"$root/tmp/long.json" <<'JOB'
{"name": "e2e-long", "model": {"input": [256], "layers": [{"type": "dense", "units": 1024, "activation": "relu"},
                                                        {"type": "dense", "units": 10, "activation": "softmax"}]},
 "data": {"format": "synthetic", "synthetic_train": 20000, "synthetic_test": 1000, "num_classes": 10},
 "training": {"epochs": 40, "batch_size": 32, "seed": 1}}
JOB
# e2e-long lasts some 15 s: it must outlive the daemon's stop and the
# reinstall (6 epochs, 2 s, was seen to end before the daemon stopped).
step "punch submit --wait, punch fetch"
id=$(punch "submit -q /tmp/quick.json") || { echo "FAIL: submit"; cat "$root/tmp/punchcardd.log"; exit 1; }
punch "wait -q $id" || { echo "FAIL: job $id did not succeed"; punch "logs $id"; fail=1; }
check punch "fetch $id -o /tmp/result"
check test -s "$root/tmp/result/weights.safetensors" -a -s "$root/tmp/result/history.json"
check in_root "[ \"\$(stat -c %U /var/lib/punchcard/runs/$id)\" = punchcard ]"

step "upgrade with a job running"
job_state() { punch "state $1 --json" | python3 -c 'import json, sys; print(json.load(sys.stdin)["state"])'; }
long=$(punch "submit -q /tmp/long.json") || { echo "FAIL: submit long"; exit 1; }
for _ in $(seq 600); do
  [ "$(job_state "$long")" = running ] && break
  sleep 0.1
done
check test "$(job_state "$long")" = running
stop_daemon
# The job's supervisor and ranks outlive the daemon (KillMode=process).
in_chroot() { local p; for p in /proc/[0-9]*; do [ "$(readlink "$p/root" 2>/dev/null)" = "$root" ] && return 0; done; return 1; }
check in_chroot
in_root 'cd /tmp/debs && apt-get install -y -q --reinstall ./*.deb' >>"$work/apt.log" 2>&1 ||
  { echo "FAIL: reinstall"; fail=1; }
check in_root '[ "$(stat -c %U:%a /var/lib/punchcard)" = punchcard:750 ]'
check grep -qx "listen = 127.0.0.1:0" "$root/etc/punchcard/punchcardd.conf"
start_daemon
punch "wait -q $long" || { echo "FAIL: job $long was not re-adopted to success"; punch "state $long"; fail=1; }
# The new daemon (its log starts empty) recorded the end: it adopted the job.
check grep -q "job $long (e2e): succeeded" "$root/tmp/punchcardd.log"
stop_daemon

step "apt-get purge"
in_root 'apt-get purge -y -q punchcardd punch punchcard-engine' >>"$work/apt.log" 2>&1 ||
  { echo "FAIL: purge"; fail=1; }
while read -r f; do
  [ -f "$root$f" ] && { echo "FAIL: $f remains after purge"; fail=1; }
done <"$work/files"
check test ! -e "$root/var/lib/punchcard"
# What stays, as policy says: the system user, and the secrets file the admin
# wrote (the package never owned it).
check test "$(ls -A "$root/etc/punchcard")" = secrets.json
check in_root 'getent passwd punchcard >/dev/null'
step "done: $([ $fail -eq 0 ] && echo passed || echo FAILED)"
exit $fail
