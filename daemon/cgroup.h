/* cgroup.h — a job's memory ceiling, enforced by the kernel's memory
 * controller: a cgroup per job (cgroup v2's memory.max, or v1's
 * memory.limit_in_bytes, whichever this host mounts), made by the job's
 * supervisor under its own cgroup, entered by mpirun before it runs, and
 * removed when the job has ended. A job that goes past it is killed by the
 * kernel's OOM killer within its own cgroup, not some other user's job.
 *
 * Only what runs on the supervisor's host (mpirun and its local ranks) is
 * limited; ranks on other hosts are not. Where no memory controller is
 * writable (no cgroup delegated to punchcardd, v2 with processes in its own
 * cgroup) the job runs without a ceiling and the supervisor says so in
 * train.log. */
#ifndef PUNCH_CGROUP_H
#define PUNCH_CGROUP_H

#include <stdbool.h>
#include <stddef.h>

typedef struct cgroup_job {
    char dir[4096];  /* the job's cgroup directory; "" when none was made */
    int version;     /* 1 or 2 */
} cgroup_job;

/* Make the cgroup `name` (a run directory's base name) with a memory
 * ceiling of limit_bytes under the calling process's memory cgroup. False
 * with *err saying why when the host offers no writable memory controller. */
bool cgroup_job_create(cgroup_job *cg, const char *name, double limit_bytes, char *err,
                       size_t cap);

/* Move the calling process into the job's cgroup (in mpirun's child before
 * it runs mpirun: everything it starts inherits it). */
bool cgroup_job_enter(const cgroup_job *cg);

/* How many times the kernel killed a process of the job for its memory
 * ceiling; 0 if unknown. */
long cgroup_job_oom_kills(const cgroup_job *cg);

/* Remove the (empty) cgroup once the job's processes are gone. */
void cgroup_job_remove(cgroup_job *cg);

#endif
