/* quota.c — disk use of run directories and of the data dir's file system
 * (contract in quota.h). */
#include "run/quota.h"

#include <dirent.h>
#include <ftw.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/statvfs.h>

#include "grow/grow.h"
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
double quota_job_bytes(daemon_ctx *d, const store_job *job)
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

/* The jobs a user's disk walks, copied out of the store's read (a
 * finished one's measure is written back, which needs a connection of its
 * own: none is held meanwhile). */
typedef struct quota_walk {
    store_job *v;
    size_t n, cap;
    bool short_of_memory;
} quota_walk;

static bool quota_keep_job(const store_job *job, void *arg)
{
    quota_walk *w = arg;
    if (!grow_reserve((void **)&w->v, &w->cap, w->n + 1, sizeof *w->v)) {
        w->short_of_memory = true;
        return false;
    }
    store_job *c = &w->v[w->n++];
    *c = *job;
    c->error = c->hosts = c->progress = c->result = NULL; /* the row's; not needed */
    return true;
}

double quota_user_bytes(daemon_ctx *d, const char *owner)
{
    /* The store sums what it has measured and lists the rest: a submit's
     * check reads neither the user's queue nor their measured history. */
    double cached = 0, bytes = 0;
    quota_walk w = {0};
    store_status rs = store_owner_disk(d->st, owner, &cached, quota_keep_job, &w);
    for (size_t i = 0; rs == STORE_OK && !w.short_of_memory && i < w.n; i++)
        bytes += quota_job_bytes(d, &w.v[i]);
    free(w.v);
    return rs == STORE_OK && !w.short_of_memory ? cached + bytes : -1;
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

double quota_reserve_bytes(const config *c, double total_bytes)
{
    if (c->disk_reserve_mb >= 0)
        return (double)c->disk_reserve_mb * 1024 * 1024;
    double pct = total_bytes * 0.05, gib = 1024.0 * 1024 * 1024;
    return pct < gib ? pct : gib;
}

bool quota_below_reserve(const config *c, double *free_bytes, double *reserve)
{
    double total = 0;
    *free_bytes = 0;
    *reserve = 0;
    if (!quota_fs_space(c->data_dir, free_bytes, &total))
        return false;
    *reserve = quota_reserve_bytes(c, total);
    return *free_bytes < *reserve;
}

/* Is there a temporary of an unfinished atomic write (".NAME.tmp.XXXXXX",
 * lib/io's atomic_write_file) in dir? */
static bool quota_has_temporary(const char *dir)
{
    DIR *d = opendir(dir);
    if (!d)
        return false;
    bool found = false;
    for (struct dirent *e; !found && (e = readdir(d)) != NULL;)
        found = e->d_name[0] == '.' && strstr(e->d_name, ".tmp.") != NULL;
    closedir(d);
    return found;
}

bool quota_job_writing(const char *dir, double since)
{
    char ckpt[4200];
    if (snprintf(ckpt, sizeof ckpt, "%s/checkpoints", dir) >= (int)sizeof ckpt)
        return false;
    struct stat st;
    if (stat(ckpt, &st) == 0 &&
        (double)st.st_mtim.tv_sec + (double)st.st_mtim.tv_nsec * 1e-9 >= since)
        return true;
    return quota_has_temporary(ckpt) || quota_has_temporary(dir);
}
