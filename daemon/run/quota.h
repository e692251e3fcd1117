/* quota.h — disk: what a run directory holds, what a user's run directories
 * hold together, and how full the data dir's file system is. The limits
 * (config: job_output_quota_mb, user_quota_mb, disk_min_free_pct) are
 * applied by the monitor (a running job past its quota is stopped and
 * fails), at submit (507 while the user is over quota) and by /healthz
 * (degraded when the file system is nearly full). */
#ifndef PUNCH_QUOTA_H
#define PUNCH_QUOTA_H

#include <stdbool.h>

#include "daemon.h"

/* Bytes the files under dir occupy on disk (allocated blocks, so a sparse
 * file counts what it holds); symbolic links are not followed. 0 if dir
 * does not exist. */
double quota_dir_bytes(const char *dir);

/* Bytes the run directories of owner's jobs occupy, or -1 on a store error.
 * A finished job's is measured once and then read from the store
 * (store_job_set_final_bytes): the walks cost the user's unfinished jobs,
 * not their history. */
double quota_user_bytes(daemon_ctx *d, const char *owner);

/* One job's run directory in bytes (walked while it may grow, the
 * store's measure once it has ended); 0 once its files are removed. */
double quota_job_bytes(daemon_ctx *d, const store_job *job);

/* Free and total bytes of the file system holding path (for unprivileged
 * users: statvfs's f_bavail). False if statvfs fails. */
bool quota_fs_space(const char *path, double *free_bytes, double *total_bytes);

/* The data dir's reserve: free space no job may write into (config
 * disk_reserve_mb; by default 5% of the file system or 1 GiB, whichever is
 * smaller). The monitor stops a job that writes checkpoints or weights
 * while less than this is free (quota_below_reserve, quota_job_writing). */
double quota_reserve_bytes(const config *c, double total_bytes);

/* True when the data dir's file system has less free than its reserve,
 * with what is free and the reserve in *free_bytes and *reserve. */
bool quota_below_reserve(const config *c, double *free_bytes, double *reserve);

/* Does the run directory dir show checkpoint or weights writes since
 * `since` (wall seconds): checkpoints/ changed, or an unfinished write's
 * temporary file is there? */
bool quota_job_writing(const char *dir, double since);

#endif
