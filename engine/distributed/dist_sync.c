/* dist_sync.c — pieces the synchronous trainers (allreduce, averaging,
 * ensemble) share at epoch boundaries: gathering per-rank metric sums, one
 * schedule decision for all ranks, the identical-weights check, and the
 * final weights and "end" event. */
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <mpi.h>

#include "distributed/dist_sync.h"
#include "distributed/dist_ctx.h"
#include "distributed/dist_error.h"
#include "distributed/dist_eval.h"
#include "distributed/dist_report.h"

dist_sums dist_gather_sums(dist_ctx *c, const dist_sums *mine, dist_sums *per_worker)
{
    double t0 = MPI_Wtime();
    DIST_MPI(MPI_Gather(mine, DIST_SUMS_LEN, MPI_DOUBLE, per_worker, DIST_SUMS_LEN, MPI_DOUBLE,
                        0, c->comm));
    c->comm_s += MPI_Wtime() - t0;
    dist_sums total = {0};
    if (c->rank != 0)
        return total;
    for (int r = 0; r < c->size; r++)
        dist_sums_add(&total, &per_worker[r]);
    return total;
}

bool dist_schedule_end(dist_ctx *c, int epoch, const dist_sums *train, bool has_val,
                       const dist_sums *val)
{
    const job_spec *s = c->spec;
    /* Names live as long as this call: schedule_epoch_end reads them now. */
    char names[2 * (SPEC_MAX_METRICS + 1)][40];
    epoch_metrics em = {0};
    for (int v = 0; v < (has_val ? 2 : 1); v++) {
        const dist_sums *sums = v ? val : train;
        const char *prefix = v ? "val_" : "";
        snprintf(names[em.n], sizeof names[0], "%sloss", prefix);
        em.names[em.n] = names[em.n];
        em.values[em.n++] = dist_sums_loss(sums);
        for (int i = 0; i < s->training.n_metrics; i++) {
            spec_metric mt = s->training.metrics[i];
            snprintf(names[em.n], sizeof names[0], "%s%s", prefix, spec_metric_name(mt));
            em.names[em.n] = names[em.n];
            em.values[em.n++] = dist_sums_metric(sums, mt, c->m->n_out);
        }
    }
    return schedule_epoch_end(&c->sched, &s->training, epoch, &em);
}

bool dist_sync_schedule(dist_ctx *c, int epoch, const dist_sums *train, bool has_val,
                        const dist_sums *val, bool *save)
{
    int32_t flag = 0;
    if (c->rank == 0)
        flag = dist_schedule_end(c, epoch, train, has_val, val);
    DIST_MPI(MPI_Bcast(&c->sched, (int)sizeof c->sched, MPI_BYTE, 0, c->comm));
    DIST_MPI(MPI_Bcast(&flag, 1, MPI_INT32_T, 0, c->comm));
    *save = flag != 0;
    return c->sched.stop;
}

void dist_sync_report_times(dist_ctx *c)
{
    double mine[2] = {c->comm_s, c->train_s};
    double *all = c->rank == 0 ? calloc((size_t)c->size * 2, sizeof *all) : NULL;
    if (c->rank == 0 && !all)
        dist_die("out of memory");
    DIST_MPI(MPI_Gather(mine, 2, MPI_DOUBLE, all, 2, MPI_DOUBLE, 0, c->comm));
    if (c->rank == 0)
        dist_report_worker_times(c->rep, all, c->size);
    free(all);
}

void dist_sync_write_final(dist_ctx *c, const dist_sums *test)
{
    char err[1024];
    model_get_params(c->m, c->host_params);
    model_get_state(c->m, c->host_state);
    if (dist_write_weights(c, c->host_params, c->host_state, NULL, true, err, sizeof err) < 0 ||
        dist_report_end(c->rep, c->lay.n_test > 0, test, c->comm_s, c->train_s, err,
                        sizeof err) < 0)
        dist_die("%s", err);
}

/* FNV-1a over the bytes: any differing bit changes it. */
static uint64_t dist_hash_floats(const float *p, long n)
{
    const unsigned char *b = (const unsigned char *)p;
    uint64_t h = 0xcbf29ce484222325ULL;
    for (long i = 0; i < n * (long)sizeof(float); i++) {
        h ^= b[i];
        h *= 0x100000001b3ULL;
    }
    return h;
}

void dist_check_identical(dist_ctx *c, uint64_t step)
{
    model_get_params(c->m, c->host_params);
    uint64_t mine = dist_hash_floats(c->host_params, c->m->n_params), lo = mine, hi = mine;
    DIST_MPI(MPI_Allreduce(MPI_IN_PLACE, &lo, 1, MPI_UINT64_T, MPI_MIN, c->comm));
    DIST_MPI(MPI_Allreduce(MPI_IN_PLACE, &hi, 1, MPI_UINT64_T, MPI_MAX, c->comm));
    if (lo != hi)
        dist_die("weights differ between ranks after step %llu (PUNCH_DIST_CHECK_SYNC)",
                 (unsigned long long)step);
}
