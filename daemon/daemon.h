/* daemon.h — the state punchcardd's threads share: settings, the store, the
 * secrets, and how jobs are launched. Created by main.c; the HTTP threads
 * read it, the main thread runs the supervision tick. */
#ifndef PUNCH_DAEMON_H
#define PUNCH_DAEMON_H

#include <limits.h>
#include <pthread.h>

#include "auth.h"
#include "config.h"
#include "launcher.h"
#include "store.h"

#define DAEMON_VERSION "0.1.0"

typedef struct daemon_ctx {
    config cfg;
    store *st;
    auth *au;
    int total_slots;
    int hosts;         /* 1 without a hostfile */
    int total_gpus;    /* cfg.gpus on each host */
    char self_exe[PATH_MAX];
    char engine[PATH_MAX];
    char mpirun[PATH_MAX];
    launcher_config lc;
} daemon_ctx;

/* UNIX time now, in seconds. */
double daemon_now(void);

/* Ask the main thread to run the tick now (a job was submitted or a stop
 * requested) instead of at the next period. Safe from any thread. */
void daemon_wake(void);

#endif
