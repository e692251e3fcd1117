/* scratch_daemon.h — a daemon context over a scratch data directory, laid out
 * as punchcardd lays out its own: default config, runs/, the store in
 * punchcard.db. Header-only, as each test program is a single file. */
#ifndef PUNCH_TEST_SCRATCH_DAEMON_H
#define PUNCH_TEST_SCRATCH_DAEMON_H

#include <stdbool.h>
#include <stdio.h>
#include <sys/stat.h>

#include "daemon.h"
#include "scratch.h"

/* A fresh scratch directory /tmp/punch-NAME-XXXXXX into dir, d over it, the
 * store's path into db (db_cap bytes). */
static inline bool scratch_daemon_open(daemon_ctx *d, char dir[SCRATCH_DIR_LEN],
                                       const char *name, char *db, size_t db_cap)
{
    if (!scratch_create(dir, name))
        return false;
    config_defaults(&d->cfg);
    snprintf(d->cfg.data_dir, sizeof d->cfg.data_dir, "%s", dir);
    char path[256], err[256];
    snprintf(path, sizeof path, "%s/runs", dir);
    if (mkdir(path, 0700) != 0)
        return false;
    snprintf(db, db_cap, "%s/punchcard.db", dir);
    d->st = store_open(db, 2, err, sizeof err);
    return d->st != NULL;
}

/* Close d's store and remove dir. */
static inline bool scratch_daemon_close(daemon_ctx *d, const char *dir)
{
    store_close(d->st);
    return scratch_remove(dir);
}

#endif
