/* liveness.h — running jobs that stop reporting, and jobs that lose a host
 * (monitor.c calls it on the main thread's tick and ends the jobs it finds
 * stalled, settle.c when a job ends; the stall rule itself is stall.c's).
 *
 * Stalls: a running job's progress is rank 0's progress.jsonl, which grows
 * with every step, epoch and checkpoint. When it has not grown for longer
 * than max(stall_grace, stall_factor x the longest gap seen so far), the
 * job is stalled: with a hostfile its hosts are probed (cluster_suspect),
 * its processes are killed and it fails saying so. What is known of each
 * job's reports lives in memory: after a restart the count starts again.
 *
 * Requeue after a host loss: a job that failed because a host was lost (a
 * host its train.log names, or, when nothing names one, any of its hosts
 * whose probe then fails, which also covers a stall) is put back in the
 * queue by itself (event "host H lost: requeued ..."), at most
 * host_loss_retries times (counted in its events), and resumes from its
 * last checkpoint on the hosts left (the launcher's --resume); without a
 * checkpoint it starts over and its event says so. A job whose hosts all
 * answer stays failed. Waiting for probes is memory only: a restart in
 * between leaves the job failed. */
#ifndef PUNCH_LIVENESS_H
#define PUNCH_LIVENESS_H

#include <stdbool.h>

#include "daemon.h"
#include "store/store.h"

/* A running job, each tick: true when it is stalled, with the error it
 * fails with in error (capacity cap) and its hosts suspected; the caller
 * ends it (kills it, settles it as failed, and when *probing awaits its
 * hosts' probes with liveness_await_probes) and drops it. */
bool liveness_stalled(daemon_ctx *d, const store_job *job, const char *dir, double now,
                      char *error, size_t cap, bool *probing);

/* A job was settled: forget its reports. */
void liveness_forget(const char *id);

/* A job failed because host `host` was lost (already marked down). */
void liveness_host_lost(daemon_ctx *d, const store_job *job, const char *host);

/* A job failed in a way that may be one of its hosts' (they are being
 * probed): requeue it once a probe finds one down. */
void liveness_await_probes(daemon_ctx *d, const store_job *job);

/* Each tick: requeue the jobs whose probes found a host down. */
void liveness_tick(daemon_ctx *d);

/* Release memory (at exit). */
void liveness_cleanup(void);

#endif
