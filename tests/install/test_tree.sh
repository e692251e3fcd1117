#!/bin/bash
# test_tree.sh: `meson install --destdir` into a temporary root puts the
# programs, config, secrets template, unit, completion, man pages and example
# jobs where docs/install.md says; a second install keeps an edited config;
# the installed punchcardd, started with the installed config, uses the
# installed punch-train.
set -u
build=${PUNCH_BUILD_ROOT:?} src=${PUNCH_SOURCE_ROOT:?}
root=$(mktemp -d "${TMPDIR:-/tmp}/punch-install-tree.$$.XXXXXX") || exit 1
daemon_pid=
cleanup() {
  [ -n "$daemon_pid" ] && kill "$daemon_pid" 2>/dev/null && wait "$daemon_pid" 2>/dev/null
  rm -rf "$root"
}
trap cleanup EXIT
fail=0
check() { if "$@"; then :; else echo "FAIL: $*"; fail=1; fi; }

meson install -C "$build" --no-rebuild --quiet --destdir "$root/stage" >"$root/install.log" 2>&1 ||
  { cat "$root/install.log"; echo "FAIL: meson install"; exit 1; }
intro() { meson introspect "$build" --buildoptions | python3 -c "
import json, sys
print(next(o['value'] for o in json.load(sys.stdin) if o['name'] == '$1'))"; }
prefix=$(intro prefix)
abs() { case $1 in /*) echo "$1" ;; *) echo "$prefix/$1" ;; esac; }
bindir=$root/stage$(abs "$(intro bindir)")
etc=$root/stage$(abs "$(intro sysconfdir)")/punchcard
share=$root/stage$(abs "$(intro datadir)")
unitdir=$(intro systemdunitdir); [ -n "$unitdir" ] || unitdir=$prefix/lib/systemd/system

for f in "$bindir/punchcardd" "$bindir/punch" "$bindir/punch-train"; do check test -x "$f"; done
for f in "$etc/punchcardd.conf" "$etc/secrets.example.json" \
         "$root/stage$unitdir/punchcardd.service" \
         "$share/bash-completion/completions/punch" "$share/zsh/vendor-completions/_punch" \
         "$share/man/man1/punch.1" "$share/man/man1/punch-train.1" \
         "$share/man/man5/punchcard-job.5" "$share/man/man8/punchcardd.8" \
         "$share/doc/punchcard/examples/fmnist-mlp.json"; do
  check test -s "$f"
done
# The installed config names absolute installed paths, the rest is the source's.
check grep -qx "secrets = $(abs "$(intro sysconfdir)")/punchcard/secrets.json" "$etc/punchcardd.conf"
check grep -qx "data-dir = $(abs "$(intro localstatedir)")/lib/punchcard" "$etc/punchcardd.conf"
check cmp -s <(grep -v '^data-dir =\|^secrets =' "$etc/punchcardd.conf") \
             <(grep -v '^data-dir =\|^secrets =' "$src/etc/punchcardd.conf")
check grep -q "^ExecStart=$(abs "$(intro bindir)")/punchcardd --config $(abs "$(intro sysconfdir)")/punchcard/punchcardd.conf\$" \
  "$root/stage$unitdir/punchcardd.service"

# An admin's edit survives a reinstall; a missing file is put back.
echo "listen = 127.0.0.1:9999" >> "$etc/punchcardd.conf"
rm "$etc/secrets.example.json"
meson install -C "$build" --no-rebuild --quiet --destdir "$root/stage" >"$root/install.log" 2>&1 ||
  { cat "$root/install.log"; echo "FAIL: second meson install"; exit 1; }
check grep -qx "listen = 127.0.0.1:9999" "$etc/punchcardd.conf"
check test -s "$etc/secrets.example.json"

# The installed daemon with the installed config (its paths redirected into
# the temporary root) picks the installed engine: it logs "engine PATH".
mkdir -p "$root/data"
printf '[{"secret": "install-tree-test-secret", "identity": "t"}]\n' > "$root/secrets.json"
chmod 600 "$root/secrets.json"
"$bindir/punchcardd" --config "$etc/punchcardd.conf" --listen 127.0.0.1:0 --allow-root-jobs \
  --data-dir "$root/data" --secrets "$root/secrets.json" 2>"$root/daemon.log" &
daemon_pid=$!
for _ in $(seq 300); do
  grep -q 'engine ' "$root/daemon.log" && break
  kill -0 "$daemon_pid" 2>/dev/null || break
  sleep 0.1
done
check grep -q "engine $(realpath "$bindir")/punch-train" "$root/daemon.log"
[ $fail -eq 0 ] || { echo "daemon log:"; cat "$root/daemon.log"; }
exit $fail
