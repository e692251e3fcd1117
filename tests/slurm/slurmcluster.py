"""slurmcluster.py — a throw-away Slurm 22.05 cluster for tests: munged,
slurmctld and slurmds started as root without systemd, on free ports, with
every file in a temporary directory (its own munge key, state, spool, logs,
pid files). Stopped by pid file, never by name; the jobs left in it are
scancelled first.

Two shapes: on this machine alone, one slurmd (node n1, all its cores); on
the namespace cluster of tests/cluster/run.sh (PUNCH_CLUSTER_HOSTS set:
this process runs in h1), slurmctld here and one slurmd per host (node hK,
one CPU each, so an N-task job spans N hosts), each started through the
run's rsh agent in its host's namespace and UTS name, with the machine's
cgroup tree (/proc/1/root/sys/fs/cgroup) bound where `ip netns exec` left
a fresh /sys. Pitfalls (from
../shared/tools/netns-cluster): SlurmctldHost and NodeHostname must be the
hostname the daemon sees; no slurmdbd, so no sacct: jobs are followed with
squeue and scontrol. MessageTimeout=2: a client facing a stopped
slurmctld gives up after 1 s instead of 9."""
import os
import pwd
import shutil
import signal
import subprocess
import tempfile
import time

import punchtest

TOOLS = ("munged", "slurmctld", "slurmd", "sbatch", "squeue", "scancel", "scontrol", "sinfo")


def require_slurm():
    """Skip (77) unless root with Debian's slurmctld, slurmd, slurm-client
    and munge installed."""
    if os.geteuid() != 0:
        punchtest.skip("needs root (starts munged, slurmctld and slurmd)")
    missing = [t for t in TOOLS
               if not shutil.which(t, path=os.environ.get("PATH", "") + ":/usr/sbin:/sbin")]
    if missing:
        punchtest.skip("Slurm is not installed (missing %s; apt-get install slurmctld slurmd "
                       "slurm-client munge)" % ", ".join(missing))
    try:
        pwd.getpwnam("munge")
    except KeyError:
        punchtest.skip("no munge user (apt-get install munge)")


def _which(name):
    return shutil.which(name, path=os.environ.get("PATH", "") + ":/usr/sbin:/sbin")


class Slurm:
    """Start with start(); close() stops everything it started and removes
    its directory. env: the variables a Slurm client needs (SLURM_CONF)."""

    def __init__(self, conf_extra="", cred_expire=None):
        """conf_extra: slurm.conf lines added before the nodes';
        cred_expire: AuthInfo's, in seconds (also how long Slurm holds a
        requeued job back, 120 s by default)."""
        self.conf_extra = conf_extra
        self.cred_expire = cred_expire
        self.dir = tempfile.mkdtemp(prefix="pc-slurm-%d-" % os.getpid())
        os.chmod(self.dir, 0o755)
        self.conf = os.path.join(self.dir, "slurm.conf")
        self.env = {"SLURM_CONF": self.conf}
        # munged runs as munge: its pid file is in the directory it owns.
        hosts = os.environ.get("PUNCH_CLUSTER_HOSTS", "").split()
        addrs = os.environ.get("PUNCH_CLUSTER_ADDRS", "").split()
        if hosts:
            self.nodes = [(h, a, 1) for h, a in zip(hosts, addrs)]
            self.ctld = (hosts[0], addrs[0])
        else:
            self.nodes = [("n1", "127.0.0.1", os.cpu_count() or 1)]
            self.ctld = (os.uname().nodename, "127.0.0.1")
        self.agent = os.environ.get("PUNCH_CLUSTER_AGENT") if hosts else None
        self.pidfiles = [os.path.join(self.dir, "run", "slurmd-%s.pid" % n[0])
                         for n in self.nodes]
        self.pidfiles += [os.path.join(self.dir, "run", "slurmctld.pid"),
                          os.path.join(self.dir, "munge", "munged.pid")]

    def _path(self, *parts):
        return os.path.join(self.dir, *parts)

    def _write_conf(self):
        ctld, slurmd = punchtest.free_port(), punchtest.free_port()
        conf = """ClusterName=pc{pid}
SlurmctldHost={host}({addr})
SlurmUser=root
SlurmdUser=root
AuthType=auth/munge
AuthInfo=socket={d}/munge/munge.socket.2{cred}
CredType=cred/munge
SlurmctldPort={ctld}
SlurmdPort={slurmd}
StateSaveLocation={d}/state
SlurmdSpoolDir={d}/spool/%n
SlurmctldPidFile={d}/run/slurmctld.pid
SlurmdPidFile={d}/run/slurmd-%n.pid
SlurmctldLogFile={d}/log/slurmctld.log
SlurmdLogFile={d}/log/slurmd-%n.log
ProctrackType=proctrack/linuxproc
TaskPlugin=task/none
SelectType=select/cons_tres
SelectTypeParameters=CR_CPU
SchedulerType=sched/backfill
JobCompType=jobcomp/none
JobAcctGatherType=jobacct_gather/none
AccountingStorageType=accounting_storage/none
MpiDefault=none
MailProg=/bin/true
ReturnToService=2
SwitchType=switch/none
KillWait=5
MessageTimeout=2
""".format(pid=os.getpid(), host=self.ctld[0], addr=self.ctld[1], d=self.dir, ctld=ctld,
           slurmd=slurmd,
           cred=",cred_expire=%d" % self.cred_expire if self.cred_expire else "")
        conf += self.conf_extra
        host = self.ctld[0] if not self.agent else None
        for name, addr, cpus in self.nodes:
            conf += "NodeName=%s NodeAddr=%s NodeHostname=%s CPUs=%d RealMemory=1000 " \
                    "State=UNKNOWN\n" % (name, addr, host or name, cpus)
        conf += "PartitionName=main Nodes=%s Default=YES MaxTime=INFINITE State=UP\n" % \
            ",".join(n[0] for n in self.nodes)
        with open(self.conf, "w") as f:
            f.write(conf)
        # Autodetection refuses this machine's hybrid cgroup mounts (and a
        # namespace host has none): nothing here uses cgroups, name v1.
        with open(os.path.join(self.dir, "cgroup.conf"), "w") as f:
            f.write("CgroupPlugin=cgroup/v1\n")

    def _run(self, cmd, user=None):
        if user:
            cmd = ["runuser", "-u", user, "--"] + cmd
        p = subprocess.run(cmd, capture_output=True, text=True, timeout=30,
                           env={**os.environ, **self.env})
        punchtest.require(p.returncode == 0, "%s: exit %d\n%s%s\n%s" % (
            " ".join(cmd), p.returncode, p.stdout, p.stderr, self.logs()))
        return p.stdout

    def start(self):
        for sub in ["munge", "state", "run", "log"] + ["spool/" + n[0] for n in self.nodes]:
            os.makedirs(self._path(sub), exist_ok=True)
        munge = pwd.getpwnam("munge")
        os.chown(self._path("munge"), munge.pw_uid, munge.pw_gid)
        key = self._path("munge", "munge.key")
        with open(key, "wb") as f:
            f.write(os.urandom(128))
        os.chown(key, munge.pw_uid, munge.pw_gid)
        os.chmod(key, 0o400)
        self._write_conf()
        m = self._path("munge")
        self._run([_which("munged"), "--key-file=" + key, "--socket=%s/munge.socket.2" % m,
                   "--pid-file=" + self.pidfiles[-1],
                   "--log-file=%s/munged.log" % m, "--seed-file=%s/munged.seed" % m],
                  user="munge")
        self.start_ctld(clean=True)
        for name, _, _ in self.nodes:
            cmd = [_which("slurmd"), "-f", self.conf, "-N", name]
            if self.agent:
                cmd = [self.agent, name, "SLURM_CONF=%s exec %s" % (self.conf, " ".join(cmd))]
            self._run(cmd)
        punchtest.wait_for(lambda: self.sinfo() == "idle", "the nodes to be idle", timeout=30)
        return self

    def sinfo(self):
        p = subprocess.run([_which("sinfo"), "-h", "-o", "%t"], capture_output=True, text=True,
                           env={**os.environ, **self.env}, timeout=30)
        return p.stdout.strip()

    def start_ctld(self, clean=False):
        """slurmctld; clean: without the saved state (-i), else recovering it."""
        self._run([_which("slurmctld"), "-f", self.conf] + (["-i"] if clean else []))

    def stop_ctld(self):
        self._kill(self.pidfiles[-2])

    def client(self, *args):
        """A Slurm client command's stdout (fails the case unless it exits 0)."""
        return self._run([_which(args[0])] + list(args[1:]))

    def logs(self):
        out = []
        for name in ["slurmctld.log"] + ["slurmd-%s.log" % n[0] for n in self.nodes]:
            try:
                with open(self._path("log", name), errors="replace") as f:
                    out.append("%s:\n%s" % (name, f.read()[-2000:]))
            except OSError:
                pass
        return "\n".join(out)

    @staticmethod
    def _kill(pidfile, timeout=10):
        try:
            with open(pidfile) as f:
                pid = int(f.read().strip())
        except (OSError, ValueError):
            return
        try:
            os.kill(pid, signal.SIGTERM)
        except ProcessLookupError:
            return
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline and punchtest.pid_alive(pid):
            time.sleep(0.05)
        if punchtest.pid_alive(pid):
            os.kill(pid, signal.SIGKILL)

    def close(self):
        """Cancel every job left in this cluster, stop its daemons, remove
        its directory."""
        try:
            if punchtest.pid_alive(self._pid(-2)):
                subprocess.run([_which("scancel"), "--me"], env={**os.environ, **self.env},
                               capture_output=True, timeout=30)
                for _ in range(100):
                    p = subprocess.run([_which("squeue"), "-h", "-o", "%i"], capture_output=True,
                                       text=True, env={**os.environ, **self.env}, timeout=30)
                    if p.returncode != 0 or not p.stdout.strip():
                        break
                    time.sleep(0.1)
        finally:
            for pidfile in self.pidfiles:
                self._kill(pidfile)
            shutil.rmtree(self.dir, ignore_errors=True)

    def node_lost(self, name):
        """A node whose slurmd the test killed (with the host's other
        processes): its stale pid file is dropped, so close() signals no
        process that may have taken that pid since."""
        pidfile = os.path.join(self.dir, "run", "slurmd-%s.pid" % name)
        self.pidfiles = [p for p in self.pidfiles if p != pidfile]
        try:
            os.unlink(pidfile)
        except OSError:
            pass

    def _pid(self, i):
        try:
            with open(self.pidfiles[i]) as f:
                return int(f.read().strip())
        except (OSError, ValueError):
            return -1
