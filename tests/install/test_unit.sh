#!/bin/bash
# test_unit.sh: the built punchcardd.service passes `systemd-analyze verify`
# (its ExecStart pointed at the built daemon, since the installed path need
# not exist here) and keeps the settings the design depends on.
set -u
build=${PUNCH_BUILD_ROOT:?}
command -v systemd-analyze >/dev/null || { echo "SKIP: systemd-analyze not installed (systemd)"; exit 77; }
unit=$build/etc/punchcardd.service
tmp=$(mktemp -d "${TMPDIR:-/tmp}/punch-install-unit.$$.XXXXXX") || exit 1
trap 'rm -rf "$tmp"' EXIT
fail=0

sed "s|^ExecStart=[^ ]*/punchcardd |ExecStart=$build/daemon/punchcardd |" "$unit" > "$tmp/punchcardd.service"
grep -q "^ExecStart=$build/daemon/punchcardd --config /" "$tmp/punchcardd.service" ||
  { echo "FAIL: ExecStart is not 'DIR/punchcardd --config FILE'"; fail=1; }
if ! out=$(systemd-analyze verify --man=no "$tmp/punchcardd.service" 2>&1) || [ -n "$out" ]; then
  echo "FAIL: systemd-analyze verify:"; echo "$out"; fail=1
fi
for line in 'Type=exec' 'User=punchcard' 'KillMode=process' 'ExecReload=/bin/kill -HUP $MAINPID' \
            'NoNewPrivileges=yes' 'ProtectSystem=strict' 'ProtectHome=yes' 'PrivateTmp=yes' \
            'RestrictAddressFamilies=AF_UNIX AF_INET AF_INET6 AF_NETLINK'; do
  grep -qxF "$line" "$unit" || { echo "FAIL: the unit lacks '$line'"; fail=1; }
done
grep -q '^ConditionPathExists=/.*/secrets.json$' "$unit" || { echo "FAIL: no ConditionPathExists on the secrets"; fail=1; }
grep -q '^ReadWritePaths=/.*/lib/punchcard$' "$unit" || { echo "FAIL: no ReadWritePaths for the data dir"; fail=1; }
exit $fail
