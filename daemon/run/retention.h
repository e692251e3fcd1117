/* retention.h — forgetting old finished jobs (config retention_days).
 *
 * A shared cluster's store grows by every job ever submitted; pages and
 * single-job reads do not slow down with it (store.h), but the disk fills
 * with run directories (weights, logs, checkpoints). With retention_days
 * set, a finished job (succeeded, failed, cancelled, timeout) is forgotten
 * that many days after it ended: its row, its events and its run directory.
 * A queued, starting or running job is never touched, whatever its age.
 * The default (0) keeps every job. With retention_keep_records, only the
 * run directory goes: the row and events stay, marked files_removed (the
 * job's file downloads then answer 410 Gone). */
#ifndef PUNCH_RETENTION_H
#define PUNCH_RETENTION_H

#include "daemon.h"

/* Forget up to `max` finished jobs that ended more than retention_days
 * before `now` (oldest first): their rows and events in one transaction,
 * then their run directories (retention_keep_records: the rows marked
 * files_removed instead of deleted). Returns how many were done, 0 when
 * retention is off, -1 on a store error (logged; nothing was forgotten). A
 * run directory that cannot be removed is logged and left behind. */
int retention_run(daemon_ctx *d, double now, int max);

/* The main loop's call after each tick: at most once a minute, and then at
 * most RETENTION_BATCH jobs per call while more are due, so a backlog of
 * old jobs never holds the tick for long. */
#define RETENTION_BATCH 100
void retention_tick(daemon_ctx *d, double now);

/* Sweeps (docs/sweeps.md): a trial that will not train again sheds files.
 * A losing one (the sweep's keep "best", not its best) loses checkpoints/
 * and weights.*, keeping history, progress and logs; any other keeps only
 * its last checkpoint (checkpoints/ckpt.bin, the one a resume needs, and
 * the newest epoch's weights-epoch-NNN saves). false
 * when a file could not be removed (logged). */
bool retention_sweep_trial(daemon_ctx *d, const char *job_id, bool loser);

#endif
