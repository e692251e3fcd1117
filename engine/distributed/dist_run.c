/* dist_run.c — the entry point of a distributed run: MPI set-up with errors
 * returned (so a failure becomes one message and MPI_Abort, not a hang),
 * the rank-count check, the watchdog, the per-rank backend, model, data and
 * optimizer, and the dispatch to the trainer.
 *
 * The environment knobs (watchdog, overlap, sharding, ...) arrive in
 * opt->env, read once by main.c (train/options.h). */
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>

#include <mpi.h>

#include "distributed/dist_async_recovery.h"
#include "distributed/dist_ctx.h"
#include "distributed/dist_error.h"
#include "distributed/dist_optim.h"
#include "distributed/dist_profile.h"
#include "distributed/dist_report.h"
#include "distributed/dist_sync_data.h"
#include "distributed/dist_sync_heartbeat.h"
#include "distributed/dist_trainers.h"
#include "distributed/dist_watchdog.h"
#include "device/device.h"
#include "cpu/cpu.h"

bool dist_handles(const job_spec *spec)
{
    return spec->distributed.trainer != TRAINER_SINGLE;
}

static void dist_setup_mpi(dist_ctx *c)
{
    MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_RETURN);
    DIST_MPI(MPI_Comm_dup(MPI_COMM_WORLD, &c->comm));
    DIST_MPI(MPI_Comm_set_errhandler(c->comm, MPI_ERRORS_RETURN));
    DIST_MPI(MPI_Comm_rank(c->comm, &c->rank));
    DIST_MPI(MPI_Comm_size(c->comm, &c->size));
    MPI_Comm local;
    DIST_MPI(MPI_Comm_split_type(c->comm, MPI_COMM_TYPE_SHARED, c->rank, MPI_INFO_NULL, &local));
    DIST_MPI(MPI_Comm_rank(local, &c->local_rank));
    /* Whether world rank 0 shares this node: with a parameter server there,
     * the workers' device numbers start one lower (the server needs none). */
    int is_rank0 = c->rank == 0, rank0_here = 0;
    DIST_MPI(MPI_Allreduce(&is_rank0, &rank0_here, 1, MPI_INT, MPI_MAX, local));
    c->rank0_local = rank0_here != 0;
    DIST_MPI(MPI_Comm_free(&local));
}

static void dist_check_ranks(dist_ctx *c)
{
    const job_spec *s = c->spec;
    int need = spec_ranks_needed(s);
    c->has_server = spec_trainer_is_async(s->distributed.trainer);
    c->workers = s->distributed.workers;
    if (c->size == need)
        return;
    dist_die("distributed.trainer %s with %d workers needs %d MPI ranks%s, but mpirun started "
             "%d: run mpirun -np %d",
             spec_trainer_name(s->distributed.trainer), c->workers, need,
             c->has_server ? " (one more for the parameter server)" : "", c->size, need);
}

/* Backend, model, data and optimizer of this rank. */
static void dist_setup_rank(dist_ctx *c)
{
    const job_spec *s = c->spec;
    char err[1024];
    int threads = c->opt->threads > 0 ? c->opt->threads : s->resources.threads_per_worker;
    /* The parameter server only adds and scales the center variable: it runs
     * on the CPU and leaves every GPU of its node to the workers. */
    bool server = c->has_server && c->rank == 0;
    int device = c->local_rank - (c->has_server && c->rank0_local ? 1 : 0);
    c->be = server ? backend_cpu_create(threads > 0 ? threads : 1, err, sizeof err)
                   : device_backend_create(s, threads > 0 ? threads : 1, device, err, sizeof err);
    if (!c->be)
        dist_die("%s", err);
    c->m = model_create(s, c->be, s->training.batch_size, err, sizeof err);
    if (!c->m)
        dist_die("%s", err);
    dist_data_load(c);
    if (c->n_train < 1)
        dist_die("data.train: no training samples");
    c->optim = optim_create(&s->training.optimizer, c->m->n_params);
    c->host_params = malloc((size_t)(c->m->n_params + 1) * sizeof(float));
    c->host_state = malloc((size_t)(c->m->n_state + 1) * sizeof(float));
    if (!c->optim || !c->host_params || !c->host_state)
        dist_die("out of memory for %ld parameters", c->m->n_params);
    dist_optim_setup(c);
    schedule_init(&c->sched, &s->training);
    dist_profile_enable(c);
}

static void dist_teardown(dist_ctx *c)
{
    dist_optim_free(c);
    optim_free(c->optim);
    model_free(c->m);
    if (c->be)
        c->be->destroy(c->be);
    dist_data_free(c);
    free(c->host_params);
    free(c->host_state);
    dist_report_free(c->rep);
}

int dist_train(const job_spec *spec, const dist_options *opt)
{
    int init = 0;
    MPI_Initialized(&init);
    if (!init) {
        /* Ranks waiting in MPI yield the core instead of spinning on it:
         * with more ranks than free cores (a shared machine, a parameter
         * server next to its workers), a spinning rank takes the time
         * slice its peer needs to finish the step it waits for, and an
         * allreduce step costs a scheduler quantum (measured: mlp on 2
         * ranks, 8k samples/s spinning, 86k yielding). An explicit
         * setting in the environment wins. */
        setenv("OMPI_MCA_mpi_yield_when_idle", "1", 0);
        /* SERIALIZED: the allreduce buckets' progress thread calls MPI,
         * one thread at a time (dist_sync_progress.c). */
        int provided;
        if (MPI_Init_thread(NULL, NULL, MPI_THREAD_SERIALIZED, &provided) != MPI_SUCCESS) {
            fprintf(stderr, "punch-train: MPI_Init failed\n");
            return 1;
        }
    }
    dist_ctx c = {.spec = spec, .opt = opt, .hcomm = MPI_COMM_NULL};
    dist_setup_mpi(&c);
    dist_error_setup(c.rank, c.rank == 0 ? opt->out_dir : NULL);
    dist_check_ranks(&c);
    dist_report_gather_hosts(&c);
    c.watchdog_s = opt->env.watchdog_s;
    dist_setup_rank(&c);
    /* Armed once this rank has its data: loading takes seconds and no
     * rank waits on another before this point. Peers may still be loading
     * (slower disks, a busier node), so the first wait gets a long limit. */
    if (dist_watchdog_start(c.watchdog_s) < 0)
        dist_die("cannot start the watchdog thread");
    dist_watchdog_tick_for("waiting for every rank to load its data",
                           c.watchdog_s > 120 ? c.watchdog_s : 120);
    dist_report_gather_reproducible(&c);
    if (c.rank == 0)
        spec_print_summary(spec, stdout), fflush(stdout);

    bool sync = !c.has_server;
    if (sync)
        dist_heartbeat_start(c.comm);
    int rc = 0;
    switch (spec->distributed.trainer) {
    case TRAINER_ALLREDUCE:
        rc = dist_run_allreduce(&c);
        break;
    case TRAINER_AVERAGING:
    case TRAINER_ENSEMBLE:
        rc = dist_run_replicas(&c);
        break;
    case TRAINER_DOWNPOUR:
    case TRAINER_ADAG:
    case TRAINER_DYNSGD:
    case TRAINER_AEASGD:
    case TRAINER_EAMSGD:
        rc = dist_run_async(&c);
        break;
    default:
        dist_die("distributed.trainer %s is not a distributed trainer",
                 spec_trainer_name(spec->distributed.trainer));
    }
    dist_watchdog_tick("finishing");
    if (sync)
        dist_heartbeat_stop();
    /* After a lost worker (dist_async_recovery.c) the barrier and
     * MPI_Finalize would wait for the dead rank: leave without them. */
    bool lost = dist_recovery_lost() > 0;
    if (!lost)
        DIST_MPI(MPI_Barrier(c.comm));
    dist_watchdog_stop();
    dist_teardown(&c);
    if (lost)
        return rc;
    MPI_Comm_free(&c.comm);
    if (!init)
        MPI_Finalize();
    return rc;
}
