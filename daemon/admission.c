/* admission.c — does a job fit the cluster at all (contract in admission.h). */
#include "admission.h"

#include <stdio.h>

bool admission_check(const daemon_ctx *d, int ranks, int gpus_per_worker, int workers,
                     const char **field, char *why, size_t cap)
{
    if (ranks > d->total_slots) {
        *field = "distributed.workers";
        snprintf(why, cap,
                 "distributed.workers: the job needs %d MPI ranks but this cluster has %d "
                 "slots; it could never run",
                 ranks, d->total_slots);
        return false;
    }
    /* One GPU set per worker; an asynchronous trainer's parameter server
     * (the extra rank) needs none. */
    int gpus = gpus_per_worker * workers;
    if (gpus > d->total_gpus) {
        *field = "resources.gpus";
        snprintf(why, cap,
                 "resources.gpus: the job needs %d GPU%s (%d per worker x %d worker%s) but "
                 "this cluster has %d (--gpus %d on each of %d host%s); it could never run",
                 gpus, gpus == 1 ? "" : "s", gpus_per_worker, workers, workers == 1 ? "" : "s",
                 d->total_gpus, d->cfg.gpus, d->hosts, d->hosts == 1 ? "" : "s");
        return false;
    }
    return true;
}
