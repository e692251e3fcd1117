#!/bin/bash
# run.sh — run one test on a cluster of hosts made of network namespaces
# (issue 14), then tear the cluster down whatever happened.
#
#   tests/cluster/run.sh [--hosts N] TEST [ARGS...]      (root; N defaults to 3)
#
# Each run makes its own hosts, named for its pid so concurrent runs never
# meet: namespaces pc<pid>-h1..hN and a switch pc<pid>-sw holding a bridge,
# one veth pair per host, host K at 10.(200+pid%50).(pid/50%250).K/24, and
# /etc/netns/pc<pid>-hK/hosts so that inside the hosts the names h1..hN
# resolve to those addresses (`ip netns exec` binds that file over
# /etc/hosts). Open MPI reaches a host through an rsh agent (written into
# the run's directory) that runs the command in the host's namespace and in
# a UTS namespace of its own named hK, so MPI_Get_processor_name tells the
# hosts apart as on a real cluster. Like ssh, the agent fails (255) for a
# host whose link is down: that is how a test takes a host off the network.
#
# TEST runs in h1 (its namespace, and a UTS namespace named h1), so what it
# starts (mpirun, punchcardd) runs there too, with this environment:
#   PUNCH_CLUSTER_HOSTS   "h1 h2 ..."        host names (resolvable inside)
#   PUNCH_CLUSTER_ADDRS   "10.a.b.1 ..."     their addresses, in that order
#   PUNCH_CLUSTER_NETNS   "pc<pid>-h1 ..."   their network namespaces
#   PUNCH_CLUSTER_SUBNET  10.a.b.0/24
#   PUNCH_CLUSTER_AGENT   the rsh agent:  AGENT HOST COMMAND...
#   PUNCH_CLUSTER_DIR     a directory for the run, removed at the end
#   OMPI_MCA_plm_rsh_agent, OMPI_MCA_rtc_hwloc_vmhole=none (orted segfaults
#   in hwloc on such hosts without it), OMPI_MCA_btl=self,vader,tcp and the
#   TCP and OOB interfaces restricted to the subnet.
#
# Exits with TEST's status; 77 (skipped) with a reason when not root or
# when ip, unshare or mpirun is missing. Teardown kills every process left
# in the run's namespaces, deletes them (and with them the veths) and
# removes /etc/netns/pc<pid>-* and the run's directory.
set -u

hosts=3
if [ "${1:-}" = --hosts ]; then
    hosts=${2:?run.sh: --hosts N}
    shift 2
fi
[ $# -ge 1 ] || { echo "usage: run.sh [--hosts N] TEST [ARGS...]" >&2; exit 2; }

skip() { echo "SKIP: $*"; exit 77; }
[ "$(id -u)" = 0 ] || skip "the namespace cluster needs root"
for tool in ip unshare mpirun hostname; do
    command -v "$tool" >/dev/null || skip "$tool is not installed"
done

# ip -n and ip netns exec remount / in a new mount namespace, which fails in
# a chroot whose / is not a mount point (../shared/tools/fresh-machine). Such
# a run goes on in a private mount namespace whose root is one: / bound onto
# a directory of itself and entered with chroot.
if [ -z "${PUNCH_CLUSTER_REROOTED:-}" ] && ! mountpoint -q /; then
    command -v chroot >/dev/null || skip "/ is not a mount point and chroot is missing"
    newroot=$(mktemp -d /tmp/punch-cluster-root.XXXXXX) || exit 1
    PUNCH_CLUSTER_REROOTED=1 unshare --mount --propagation unchanged /bin/sh -c \
        'mount --rbind / "$0" && exec chroot "$0" /bin/sh -c '"'"'cd "$0" && exec "$@"'"'"' "$@"' \
        "$newroot" "$PWD" "$0" --hosts "$hosts" "$@"
    rc=$?
    rmdir "$newroot" 2>/dev/null
    exit $rc
fi

tag=pc$$
net=10.$((200 + $$ % 50)).$(($$ / 50 % 250))
sw=$tag-sw
dir=$(mktemp -d "/tmp/punch-cluster-$$.XXXXXX") || exit 1
made_ns=()

teardown() {
    local ns pid
    for ns in "${made_ns[@]}"; do
        # Twice: a process being forked as the first round ran is caught by the second.
        for _ in 1 2; do
            for pid in $(ip netns pids "$ns" 2>/dev/null); do
                kill -9 "$pid" 2>/dev/null
            done
        done
    done
    for ns in "${made_ns[@]}"; do
        ip netns del "$ns" 2>/dev/null
        rm -rf "/etc/netns/$ns"
    done
    rm -rf "$dir"
}
trap teardown EXIT
trap 'exit 130' INT TERM HUP

die() { echo "run.sh: $*" >&2; exit 1; }

ip netns add "$sw" || die "cannot create namespace $sw"
made_ns+=("$sw")
# `ip -n` and `ip netns exec` remount / as a slave in a new mount
# namespace; in a chroot whose root is not a mount point (e.g.
# ../shared/tools/fresh-machine) that fails, and no host can be entered.
if ! out=$(ip -n "$sw" link set lo up 2>&1); then
    case $out in
    *"make-rslave"*) skip "cannot enter a network namespace here ($out): / is not a mount point (a chroot?)" ;;
    *) die "$sw: lo: $out" ;;
    esac
fi
ip -n "$sw" link add br0 type bridge || die "$sw: no bridge"
ip -n "$sw" link set br0 up || die "$sw: bridge down"

names=() addrs=() nss=()
for k in $(seq "$hosts"); do
    ns=$tag-h$k
    ip netns add "$ns" || die "cannot create namespace $ns"
    made_ns+=("$ns")
    ip -n "$ns" link set lo up || die "$ns: lo"
    # Both ends are born inside their namespaces: no name is ever taken in the machine's own.
    ip link add eth0 netns "$ns" type veth peer name "p$k" netns "$sw" || die "$ns: veth"
    ip -n "$sw" link set "p$k" master br0 || die "$sw: p$k"
    ip -n "$sw" link set "p$k" up || die "$sw: p$k up"
    ip -n "$ns" addr add "$net.$k/24" dev eth0 || die "$ns: address"
    ip -n "$ns" link set eth0 up || die "$ns: eth0 up"
    names+=("h$k") addrs+=("$net.$k") nss+=("$ns")
done
for ns in "${nss[@]}"; do
    mkdir -p "/etc/netns/$ns" || die "cannot create /etc/netns/$ns"
    { echo "127.0.0.1 localhost"; for k in $(seq "$hosts"); do echo "$net.$k h$k"; done; } \
        >"/etc/netns/$ns/hosts" || die "cannot write /etc/netns/$ns/hosts"
done

agent=$dir/rsh-agent
cat >"$agent" <<SH || die "cannot write $agent"
#!/bin/sh
# Open MPI's rsh agent for cluster $tag: AGENT HOST COMMAND... runs COMMAND
# in HOST's network namespace, in a UTS namespace named HOST.
host=\$1; shift
case "\$host" in
h[0-9]*) name=\$host ;;
$net.*) name=h\${host##*.} ;;
*) echo "rsh-agent: unknown host \$host" >&2; exit 255 ;;
esac
[ -e "/run/netns/$tag-\$name" ] || { echo "rsh-agent: no host \$host" >&2; exit 255; }
# As ssh to a machine off the network: a host whose link is down cannot be reached.
ip -n "$tag-\$name" link show eth0 | grep -q "state UP" ||
    { echo "rsh-agent: connect to host \$host: No route to host" >&2; exit 255; }
# Not exec: like an ssh client this process stays where it was started,
# and says so when the host goes away under the command.
ip netns exec "$tag-\$name" unshare --uts /bin/sh -c 'hostname "\$1" || exit 255; exec /bin/sh -c "\$2"' agent "\$name" "\$*"
rc=\$?
if [ \$rc -gt 128 ] || ! ip -n "$tag-\$name" link show eth0 | grep -q "state UP"; then
    echo "rsh-agent: lost host \$host: connection closed by remote host" >&2
    exit 255
fi
exit \$rc
SH
chmod 755 "$agent" || die "chmod $agent"

export PUNCH_CLUSTER_HOSTS="${names[*]}" PUNCH_CLUSTER_ADDRS="${addrs[*]}"
export PUNCH_CLUSTER_NETNS="${nss[*]}" PUNCH_CLUSTER_SUBNET=$net.0/24
export PUNCH_CLUSTER_AGENT=$agent PUNCH_CLUSTER_DIR=$dir
export OMPI_MCA_plm_rsh_agent=$agent OMPI_MCA_rtc_hwloc_vmhole=none
export OMPI_MCA_btl=self,vader,tcp OMPI_MCA_btl_tcp_if_include=$net.0/24
export OMPI_MCA_oob_tcp_if_include=$net.0/24

# Not exec: the trap must run after the test.
# Bounded below meson's own timeout, so the teardown above always gets to run
# (meson follows its SIGTERM with SIGKILL half a second later).
timeout -k 5 "${PUNCH_CLUSTER_TIMEOUT:-110}" \
    ip netns exec "${nss[0]}" unshare --uts /bin/sh -c 'hostname h1 || exit 1; exec "$@"' test "$@"
