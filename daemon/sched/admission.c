/* admission.c — does a job fit the cluster at all (contract in admission.h). */
#include "sched/admission.h"

#include <stdio.h>
#include <stdlib.h>

#include "sched/placement.h"

/* Each worker's GPUs must be on its own host: can the hosts, empty, hold
 * the job that way? (Slots alone always fit once the totals do.) */
static bool admission_per_host(const daemon_ctx *d, int ranks, int gpus_per_worker, int workers,
                               const char **field, char *why, size_t cap)
{
    if (!d->cl || gpus_per_worker == 0)
        return true;
    placement_cluster *empty = malloc(sizeof *empty);
    placement *a = malloc(sizeof *a);
    placement_need need = {ranks, workers, gpus_per_worker * workers};
    bool fits = !empty || !a; /* out of memory: let the scheduler judge */
    if (!fits) {
        cluster_capacity(d->cl, empty, false);
        fits = placement_pack(empty, need, a);
    }
    free(empty);
    free(a);
    if (fits)
        return true;
    *field = "resources.gpus";
    snprintf(why, cap,
             "resources.gpus: each of the job's %d worker%s needs %d GPU%s on its own host, "
             "and %d host%s of %d GPUs each cannot hold them so; it could never run",
             workers, workers == 1 ? "" : "s", gpus_per_worker, gpus_per_worker == 1 ? "" : "s",
             d->hosts, d->hosts == 1 ? "" : "s", d->cfg.gpus);
    return false;
}

bool admission_check(const daemon_ctx *d, int ranks, int gpus_per_worker, int workers,
                     const char **field, char *why, size_t cap)
{
    /* Slurm knows its nodes: a job it can never run is refused by sbatch. */
    if (config_slurm(&d->cfg))
        return true;
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
    return admission_per_host(d, ranks, gpus_per_worker, workers, field, why, cap);
}

/* How many of the job's ranks one host runs at most. */
static int admission_ranks_per_host(const daemon_ctx *d, int ranks)
{
    if (!d->cl || d->hosts <= 1)
        return ranks;
    placement_cluster *empty = malloc(sizeof *empty);
    if (!empty)
        return ranks;
    cluster_capacity(d->cl, empty, false);
    int most = 0;
    for (int h = 0; h < empty->n_hosts; h++)
        if (empty->slots[h] > most)
            most = empty->slots[h];
    free(empty);
    return most > 0 && most < ranks ? most : ranks;
}

bool admission_memory(const daemon_ctx *d, const memest *m, const char **field, char *why,
                      size_t cap)
{
    if (config_slurm(&d->cfg) || d->host_memory <= 0)
        return true;
    int on_host = admission_ranks_per_host(d, m->ranks);
    double need = m->per_rank * on_host;
    if (need <= d->host_memory)
        return true;
    char b[8][32];
    *field = "model";
    snprintf(why, cap,
             "model: the job needs an estimated %s of memory on one host (%d rank%s x %s: "
             "parameters %s, gradients %s, optimizer state %s, activations and batch %s, "
             "data %s), but a host has %s for jobs (host_memory_mb); it could never run",
             memest_format(need, b[0], sizeof b[0]), on_host, on_host == 1 ? "" : "s",
             memest_format(m->per_rank, b[1], sizeof b[1]),
             memest_format(m->params, b[2], sizeof b[2]),
             memest_format(m->grads, b[3], sizeof b[3]),
             memest_format(m->optimizer, b[4], sizeof b[4]),
             memest_format(m->activations + m->batch, b[5], sizeof b[5]),
             memest_format(m->data, b[6], sizeof b[6]),
             memest_format(d->host_memory, b[7], sizeof b[7]));
    return false;
}

bool admission_limits(const daemon_ctx *d, const job_spec *spec, const char **field, char *why,
                      size_t cap)
{
    int threads = spec->resources.threads_per_worker;
    /* Under Slurm, Slurm knows its nodes' cores (sbatch refuses). */
    if (!config_slurm(&d->cfg) && d->host_cores > 0 && threads > d->host_cores) {
        *field = "resources.threads_per_worker";
        snprintf(why, cap,
                 "resources.threads_per_worker: %d threads per worker, but a host of this "
                 "cluster has at most %d cores",
                 threads, d->host_cores);
        return false;
    }
    long limit = spec->resources.time_limit_s, max = d->cfg.max_time_limit_s;
    if (max > 0 && limit > max) {
        *field = "resources.time_limit_s";
        snprintf(why, cap,
                 "resources.time_limit_s: %ld s is longer than this site allows (%ld s, "
                 "max_time_limit_s)",
                 limit, max);
        return false;
    }
    return true;
}
