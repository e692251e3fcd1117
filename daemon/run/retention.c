/* retention.c — forgets finished jobs older than retention_days: rows and
 * events first (one transaction), then run directories, so a crash between
 * the two leaves at worst a directory no job refers to, never a job whose
 * files are half gone. With retention_keep_records the rows are marked
 * files_removed instead (also before the directories go): a crash between
 * leaves a job that says its files are gone while some remain, never one
 * that offers files it no longer has. */
#include "run/retention.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "log.h"
#include "run/rundir.h"

int retention_run(daemon_ctx *d, double now, int max)
{
    if (d->cfg.retention_days <= 0 || max < 1)
        return 0;
    char (*ids)[STORE_ID_LEN + 1] = calloc((size_t)max, sizeof *ids);
    if (!ids) {
        log_error("retention: out of memory");
        return -1;
    }
    double before = now - (double)d->cfg.retention_days * 86400.0;
    int n = 0;
    bool keep = d->cfg.retention_keep_records;
    if ((keep ? store_mark_files_removed(d->st, before, max, ids, &n)
              : store_prune_finished(d->st, before, max, ids, &n)) != STORE_OK) {
        log_error("retention: cannot %s old finished jobs; retrying later",
                  keep ? "mark the files removed of" : "forget");
        free(ids);
        return -1;
    }
    for (int i = 0; i < n; i++) {
        char dir[4096];
        if (!rundir_path(dir, sizeof dir, d->cfg.data_dir, ids[i], NULL) || !rundir_remove(dir))
            log_error("retention: job %s %s, but its run directory under %s/runs could "
                      "not be removed",
                      ids[i], keep ? "marked files_removed" : "forgotten", d->cfg.data_dir);
    }
    if (n > 0)
        log_info("retention: %s %d finished job%s that ended over %d days ago",
                 keep ? "removed the run directories (records kept) of" : "forgot", n,
                 n == 1 ? "" : "s", d->cfg.retention_days);
    free(ids);
    return n;
}

void retention_tick(daemon_ctx *d, double now)
{
    /* Only the main thread calls this. */
    static double next_at;
    if (d->cfg.retention_days <= 0 || now < next_at)
        return;
    int n = retention_run(d, now, RETENTION_BATCH);
    next_at = n == RETENTION_BATCH ? now : now + 60.0;
}

/* Unlinks the files of dir whose name starts with prefix. A missing dir
 * holds nothing to remove. */
static bool retention_unlink_in(const char *dir, const char *prefix)
{
    DIR *dh = opendir(dir);
    if (!dh)
        return errno == ENOENT;
    bool ok = true;
    struct dirent *e;
    while ((e = readdir(dh)) != NULL) {
        if (strncmp(e->d_name, prefix, strlen(prefix)) != 0)
            continue;
        if (unlinkat(dirfd(dh), e->d_name, 0) != 0 && errno != ENOENT) {
            log_error("retention: cannot remove %s/%s: %s", dir, e->d_name, strerror(errno));
            ok = false;
        }
    }
    closedir(dh);
    return ok;
}

bool retention_sweep_trial(daemon_ctx *d, const char *job_id, bool loser)
{
    char dir[4096], ckpt[4096];
    if (!rundir_path(dir, sizeof dir, d->cfg.data_dir, job_id, NULL) ||
        !rundir_path(ckpt, sizeof ckpt, d->cfg.data_dir, job_id, "checkpoints")) {
        log_error("retention: job %s: run directory path too long", job_id);
        return false;
    }
    if (!loser)
        return rundir_prune_checkpoints(dir, 1) >= 0;
    if (!rundir_remove(ckpt)) {
        log_error("retention: job %s: cannot remove %s", job_id, ckpt);
        return false;
    }
    return retention_unlink_in(dir, "weights.");
}
