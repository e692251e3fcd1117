/* quota.c — disk use of run directories and of the data dir's file system
 * (contract in quota.h). */
#include "quota.h"

#include <ftw.h>
#include <stdio.h>
#include <sys/stat.h>
#include <sys/statvfs.h>

#include "rundir.h"

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

typedef struct quota_walk {
    daemon_ctx *d;
    double bytes;
} quota_walk;

static bool quota_add_job(const store_job *job, void *arg)
{
    quota_walk *w = arg;
    char dir[4096];
    if (rundir_path(dir, sizeof dir, w->d->cfg.data_dir, job->id, NULL)) {
        w->bytes += quota_dir_bytes(dir);
    }
    return true;
}

double quota_user_bytes(daemon_ctx *d, const char *owner)
{
    quota_walk w = {d, 0};
    if (store_job_list(d->st, owner, -1, quota_add_job, &w) != STORE_OK)
        return -1;
    return w.bytes;
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
