"""cluster.py — what a Python test needs of the namespace cluster that
tests/cluster/run.sh builds around it (issue 14): the hosts, which host a
process runs on, hostfiles, mpirun on the hosts, and ways to lose a host.

The test runs in host h1; run.sh describes the cluster in PUNCH_CLUSTER_*
variables and sets Open MPI's (rsh agent, interfaces, btl self,vader,tcp).
Outside run.sh every function skips the case.
"""
import os
import subprocess

import punchtest
from punchtest import fail, skip


class Host:
    """One host: its name (hK, resolvable inside the cluster), address and
    network namespace."""

    def __init__(self, name, addr, netns):
        self.name, self.addr, self.netns = name, addr, netns

    def __repr__(self):
        return "%s(%s, %s)" % (self.name, self.addr, self.netns)


def hosts():
    """The cluster's hosts, h1 (where the test runs) first."""
    names = os.environ.get("PUNCH_CLUSTER_HOSTS", "").split()
    if not names:
        skip("not on a namespace cluster (run through tests/cluster/run.sh)")
    addrs = os.environ["PUNCH_CLUSTER_ADDRS"].split()
    nss = os.environ["PUNCH_CLUSTER_NETNS"].split()
    return [Host(*t) for t in zip(names, addrs, nss)]


def host(name):
    for h in hosts():
        if h.name == name:
            return h
    fail("no host %s in the cluster %s" % (name, hosts()))


def write_hostfile(path, slots, names=None):
    """A hostfile giving each host (all, or those named) `slots` slots."""
    with open(path, "w") as f:
        for h in hosts():
            if names is None or h.name in names:
                f.write("%s slots=%d\n" % (h.name, slots))
    return path


def host_of(pid):
    """The name of the host whose network namespace holds pid (None if the
    process is gone or outside the cluster)."""
    p = subprocess.run(["ip", "netns", "identify", str(pid)], capture_output=True, text=True)
    ns = p.stdout.strip()
    for h in hosts():
        if h.netns == ns:
            return h.name
    return None


def host_pids(name):
    """The pids of the processes in a host's network namespace."""
    p = subprocess.run(["ip", "netns", "pids", host(name).netns], capture_output=True,
                       text=True)
    return [int(x) for x in p.stdout.split()]


def kill_host(name):
    """Crash a host: SIGKILL every process in its namespace (twice, for
    those being forked meanwhile). Not h1, where the test itself runs."""
    if name == hosts()[0].name:
        fail("kill_host: %s runs the test" % name)
    for _ in range(2):
        punchtest.kill_pids(host_pids(name))


def set_link(name, up):
    """Cut a host off the network (up=False: the rsh agent cannot reach it
    either, as ssh could not) or plug it back."""
    subprocess.run(["ip", "-n", host(name).netns, "link", "set", "eth0",
                    "up" if up else "down"], check=True)


def crash_host(name):
    """A host dies: off the network, and its processes gone."""
    set_link(name, False)
    kill_host(name)


def mpirun_cmd(ranks, hostfile, env_names=()):
    """mpirun for `ranks` ranks placed from `hostfile` in slot order (fill
    each host's slots, then the next), passing env_names on."""
    cmd = ["mpirun", "--hostfile", hostfile, "--map-by", "slot", "--bind-to", "none",
           "-np", str(ranks)]
    for k in env_names:
        cmd += ["-x", k]
    return cmd


def train(engine, spec_path, out, ranks, hostfile, env=None, timeout=120):
    """punch-train under mpirun across the hosts; fails the case unless it
    exits 0. Returns the finished process."""
    env_all = dict(punchtest.MPI_ENV, **(env or {}))
    cmd = mpirun_cmd(ranks, hostfile, env_all) + [
        engine, spec_path, "--out", out, "--datasets", punchtest.DATASETS]
    p = subprocess.run(cmd, env={**os.environ, **env_all}, capture_output=True, text=True,
                       timeout=timeout)
    if p.returncode != 0:
        fail("%s exited %d:\n%s" % (" ".join(cmd), p.returncode, p.stderr[-3000:]))
    return p


def daemon_args(hostfile):
    """punchcardd's flags for placing jobs on the hosts of `hostfile`."""
    return ["--hostfile", hostfile]
