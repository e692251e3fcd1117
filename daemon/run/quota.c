/* quota.c — disk use of run directories and of the data dir's file system
 * (contract in quota.h). */
#include "run/quota.h"

#include <ftw.h>
#include <math.h>
#include <stdio.h>
#include <sys/stat.h>
#include <sys/statvfs.h>

#include "run/rundir.h"

/* nftw has no argument for its callback: the sum lives in this thread's
 * variable (HTTP threads and the monitor may walk at once). */
static _Thread_local double quota_sum;

static int quota_add(const char *path, const struct stat *st, int flag, struct FTW *f)
{
    (void)path;
    (void)flag;
    (void)f;
    quota_sum += (double)st->st_blocks * 512;
    return 0;
}

double quota_dir_bytes(const char *dir)
{
    quota_sum = 0;
    if (nftw(dir, quota_add, 16, FTW_PHYS) != 0)
        return quota_sum; /* what could be read: a vanished file is not an error */
    return quota_sum;
}

/* A job's run directory: walked while it may still grow; once it has
 * ended, measured once and kept in the store (its directory no longer
 * changes, but for retention, which marks it files_removed). */
static double quota_job_bytes(daemon_ctx *d, const store_job *job)
{
    if (job->files_removed)
        return 0;
    if (job_state_is_final(job->state) && job->final_bytes >= 0)
        return job->final_bytes;
    char dir[4096];
    if (!rundir_path(dir, sizeof dir, d->cfg.data_dir, job->id, NULL))
        return 0;
    double bytes = quota_dir_bytes(dir);
    if (job_state_is_final(job->state))
        store_job_set_final_bytes(d->st, job->id, job->finished_at, bytes); /* logged */
    return bytes;
}

double quota_user_bytes(daemon_ctx *d, const char *owner)
{
    double bytes = 0;
    store_page_query q = {.owner = owner, .state = -1, .before = 0, .since = NAN,
                          .limit = 1000};
    for (;;) {
        store_page page;
        if (store_job_page(d->st, &q, &page) != STORE_OK)
            return -1;
        for (size_t i = 0; i < page.n; i++)
            bytes += quota_job_bytes(d, &page.jobs[i]);
        bool more = page.more && page.n > 0;
        if (more)
            q.before = page.jobs[page.n - 1].seq;
        store_page_clear(&page);
        if (!more)
            return bytes;
    }
}

bool quota_fs_space(const char *path, double *free_bytes, double *total_bytes)
{
    struct statvfs v;
    if (statvfs(path, &v) != 0)
        return false;
    *free_bytes = (double)v.f_bavail * (double)v.f_frsize;
    *total_bytes = (double)v.f_blocks * (double)v.f_frsize;
    return true;
}
