/* cgroup.h — a job's memory ceiling, enforced by the kernel's memory
 * controller: a cgroup per job (cgroup v2's memory.max, or v1's
 * memory.limit_in_bytes, whichever this host mounts), made by the job's
 * supervisor under its own cgroup, entered by mpirun before it runs, and
 * removed when the job has ended. A job that goes past it is killed by the
 * kernel's OOM killer within its own cgroup, not some other user's job.
 *
 * Only what runs on the supervisor's host (mpirun and its local ranks) is
 * limited; ranks on other hosts are not. Where no memory controller is
 * writable (no cgroup delegated to punchcardd, v2 with other processes in its
 * own cgroup) the job runs without a ceiling and the supervisor says so in
 * train.log.
 *
 * cgroup v2 lets a cgroup hand controllers to its children only while it
 * holds no process itself ("no internal processes"). So, as systemd services
 * with Delegate= do, punchcardd moves itself at startup into a leaf child of
 * its own cgroup, OWN/daemon (its supervisors, forked from it, start there
 * too), enables +memory in OWN/cgroup.subtree_control, and each job's cgroup
 * is OWN/job-NAME, beside it. */
#ifndef PUNCH_CGROUP_H
#define PUNCH_CGROUP_H

#include <stdbool.h>
#include <stddef.h>

typedef struct cgroup_job {
    char dir[4096];  /* the job's cgroup directory; "" when none was made */
    int version;     /* 1 or 2 */
} cgroup_job;

/* The leaf the daemon moves into under its own v2 cgroup. */
#define CGROUP_DAEMON_LEAF "daemon"

/* At startup: if this process's v2 cgroup offers the memory controller and
 * is writable, move into its leaf CGROUP_DAEMON_LEAF and enable +memory for
 * the cgroup's children; *dir is then that cgroup (where jobs' cgroups go;
 * the parent when the process already started in such a leaf).
 * False with *err saying why otherwise (nothing changed). */
bool cgroup_daemon_setup(char *dir, size_t dcap, char *err, size_t cap);

/* The steps of cgroup_daemon_setup on the v2 cgroup directory `own`, for
 * process `pid`: when own is already a CGROUP_DAEMON_LEAF (systemd's
 * DelegateSubgroup=daemon) only "+memory" to its parent's subtree_control if
 * missing; nothing when own/cgroup.subtree_control already has memory;
 * else mkdir own/daemon, write pid to own/daemon/cgroup.procs, then "+memory"
 * to own/cgroup.subtree_control (moving pid back to own/cgroup.procs and
 * removing own/daemon if that fails). Works on any directory tree laid out
 * like cgroupfs (tests use a plain one). */
bool cgroup_v2_delegate(const char *own, long pid, char *err, size_t cap);

/* Where a job's v2 cgroup goes for a process in `own`: its parent when own
 * is a CGROUP_DAEMON_LEAF whose parent has memory in subtree_control (the
 * setup above), else own itself. False if the path does not fit. */
bool cgroup_v2_job_parent(const char *own, char *parent, size_t cap);

/* One line of /proc/self/cgroup ("ID:CONTROLLERS:PATH"): true with PATH
 * in out when it is the v2 hierarchy's (version 2: "0::PATH") or, for
 * version 1, a hierarchy whose controllers include memory. */
bool cgroup_parse_self_line(const char *line, int version, char *out, size_t cap);

/* The v2 part of cgroup_job_create for a process in `own`: the cgroup
 * PARENT/job-NAME (PARENT from cgroup_v2_job_parent) with memory.max and
 * memory.swap.max 0. False (nothing left behind) if it cannot. */
bool cgroup_v2_job_create(cgroup_job *cg, const char *own, const char *name, double limit_bytes);

/* Make the cgroup `name` (a run directory's base name) with a memory
 * ceiling of limit_bytes under the calling process's memory cgroup (v2:
 * job-NAME, see above; v1: NAME). False
 * with *err saying why when the host offers no writable memory controller. */
bool cgroup_job_create(cgroup_job *cg, const char *name, double limit_bytes, char *err,
                       size_t cap);

/* Move the calling process into the job's cgroup (in mpirun's child before
 * it runs mpirun: everything it starts inherits it). */
bool cgroup_job_enter(const cgroup_job *cg);

/* How many times the kernel killed a process of the job for its memory
 * ceiling; 0 if unknown. */
long cgroup_job_oom_kills(const cgroup_job *cg);

/* What the job's processes used, read before the cgroup is removed: CPU
 * seconds (v2 cpu.stat usage_usec) and peak memory in bytes (v2
 * memory.peak, v1 memory.max_usage_in_bytes; page cache included); -1 for
 * each the kernel does not offer. */
void cgroup_job_usage(const cgroup_job *cg, double *cpu_s, double *peak_bytes);

/* Remove the (empty) cgroup once the job's processes are gone. */
void cgroup_job_remove(cgroup_job *cg);

#endif
