/* admission.h — could a job ever run on this cluster? The one answer to that
 * question, asked when a job is submitted (api.c: refuse it with 400) and
 * again each time the scheduler looks at the queue (monitor.c: fail a queued
 * job that no longer fits because --slots, --gpus or the hostfile shrank
 * since it was accepted). Both places give the same field and text.
 *
 * Only the cluster's size counts, never what is busy now: a job that fits an
 * empty cluster waits in the queue, one that does not is refused. */
#ifndef PUNCH_ADMISSION_H
#define PUNCH_ADMISSION_H

#include <stdbool.h>
#include <stddef.h>

#include "daemon.h"
#include "sched/memest.h"

/* True if a job of `ranks` MPI ranks and `workers` workers holding
 * `gpus_per_worker` GPUs each fits d's cluster (d->total_slots,
 * d->total_gpus, d->cfg.gpus, d->hosts, and the hosts' fixed capacities in
 * d->cl when set: each worker's GPUs must be on its host; nothing else is
 * read). Otherwise
 * false, with *field set to the job-spec field to blame (a static string:
 * "distributed.workers" or "resources.gpus") and why (capacity cap) set to
 * the whole message, which begins with that field, e.g.
 *   distributed.workers: the job needs 5 MPI ranks but this cluster has 4
 *   slots; it could never run
 * Slots are checked first, then the GPUs in all, then per host; under
 * scheduler = slurm every job passes (sbatch refuses what Slurm can never
 * run, and the job fails with its message). Pure: no
 * I/O, no locks, callable from any thread. */
bool admission_check(const daemon_ctx *d, int ranks, int gpus_per_worker, int workers,
                     const char **field, char *why, size_t cap);

/* True if a job whose memory estimate is *m could fit a host's memory
 * (d->host_memory) with as many of its ranks as one host would run: all of
 * them on a single host, else up to the largest host's slots. Otherwise
 * false, *field "model", and why naming the estimate, its parts and the
 * limit. Every job passes under scheduler = slurm and when d->host_memory
 * is 0 (unknown). Pure, like admission_check. */
bool admission_memory(const daemon_ctx *d, const memest *m, const char **field, char *why,
                      size_t cap);

/* True if the job's resources stay within the site's limits: no more
 * threads_per_worker than a host has cores (d->host_cores, when known) and
 * no longer time_limit_s than max_time_limit_s (when set); under
 * scheduler = slurm the cores are Slurm's to check. Otherwise false
 * with *field the resources.* field and why the message. Pure. */
bool admission_limits(const daemon_ctx *d, const job_spec *spec, const char **field, char *why,
                      size_t cap);

#endif
