/* dist_checkpoint.c — checkpoints/ckpt.bin of a distributed run: every replica's
 * parameters, batchnorm state and optimizer state (one replica for
 * allreduce and the parameter server's center; one per rank for averaging
 * and ensemble), the epochs done, the global step (which seeds dropout and
 * the data order continues from the epoch), the schedule state and the
 * parameter server's counters. Rank 0 writes it atomically after every
 * epoch (train/checkpoint_file.h, the single trainer's writer too), so a
 * resumed run starts exactly at an epoch boundary.
 *
 * The asynchronous trainers write the center as replica 0 (its optimizer
 * floats zero: the server has no optimizer) and, once every worker has
 * sent its state, worker w's own variables as replica 1 + w: its params,
 * batchnorm state, and its optimizer state (eamsgd: and its momentum). A
 * checkpoint of theirs with the center alone (n_replicas 1, n_optim 0, as
 * written before workers' replicas existed) still resumes: the workers
 * then restart from the center. The layout is the same either way.
 *
 * Version 2: params and optimizer floats are in the model's aligned
 * layout (LAYER_PARAM_ALIGN padding between tensors); a version 1 file
 * (unpadded) is refused with a message rather than misread.
 *
 * Layout (host byte order; the file is read back by the same engine):
 *   "PUNCHDCK" u32 version u32 trainer
 *   i64 ranks n_replicas n_workers epochs_done global_step commits
 *   f64 staleness_sum  i64 n_params n_state n_optim sched_bytes
 *   sched_bytes of schedule_state, i64 worker_commits[n_workers],
 *   then per replica: params, state, optimizer floats. */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "distributed/dist_checkpoint.h"
#include "distributed/dist_ctx.h"
#include "io/io_file.h"
#include "train/checkpoint_file.h"

#define DIST_CKPT_MAGIC "PUNCHDCK"
#define DIST_CKPT_VERSION 2u

typedef struct dist_ckpt_head {
    char magic[8];
    uint32_t version, trainer;
    int64_t ranks, n_replicas, n_workers, epochs_done, global_step, commits;
    double staleness_sum;
    int64_t n_params, n_state, n_optim, sched_bytes;
} dist_ckpt_head;

static size_t dist_ckpt_size(const dist_ckpt_head *h)
{
    size_t per = (size_t)(h->n_params + h->n_state + h->n_optim) * sizeof(float);
    return sizeof *h + (size_t)h->sched_bytes + (size_t)h->n_workers * sizeof(int64_t) +
           (size_t)h->n_replicas * per;
}

int dist_ckpt_save(const dist_ctx *c, const dist_ckpt_meta *meta, const dist_replica *reps,
                   long n_optim, char *err, size_t errlen)
{
    dist_ckpt_head h = {.version = DIST_CKPT_VERSION,
                        .trainer = (uint32_t)c->spec->distributed.trainer,
                        .ranks = c->size,
                        .n_replicas = meta->n_replicas,
                        .n_workers = meta->worker_commits ? meta->n_workers : 0,
                        .epochs_done = meta->epochs_done,
                        .global_step = (int64_t)meta->global_step,
                        .commits = meta->commits,
                        .staleness_sum = meta->staleness_sum,
                        .n_params = c->m->n_params,
                        .n_state = c->m->n_state,
                        .n_optim = n_optim,
                        .sched_bytes = sizeof meta->sched};
    memcpy(h.magic, DIST_CKPT_MAGIC, 8);
    checkpoint_file f;
    if (checkpoint_file_open(&f, dist_ckpt_size(&h), err, errlen) != 0)
        return -1;
    checkpoint_file_put(&f, &h, sizeof h);
    checkpoint_file_put(&f, &meta->sched, sizeof meta->sched);
    for (int64_t i = 0; i < h.n_workers; i++) {
        int64_t v = meta->worker_commits[i];
        checkpoint_file_put(&f, &v, sizeof v);
    }
    for (int k = 0; k < meta->n_replicas; k++) {
        checkpoint_file_put(&f, reps[k].params, (size_t)h.n_params * sizeof(float));
        checkpoint_file_put(&f, reps[k].state, (size_t)h.n_state * sizeof(float));
        void *o = checkpoint_file_next(&f, (size_t)n_optim * sizeof(float));
        if (n_optim > 0 && reps[k].optim)
            memcpy(o, reps[k].optim, (size_t)n_optim * sizeof(float));
        else if (n_optim > 0)
            memset(o, 0, (size_t)n_optim * sizeof(float));
    }
    return checkpoint_file_commit(&f, c->opt->out_dir, err, errlen);
}

static int dist_ckpt_check(const dist_ctx *c, const dist_ckpt_head *h, size_t len,
                           long n_optim, const char *path, char *err, size_t errlen)
{
    if (len >= sizeof *h && memcmp(h->magic, DIST_CKPT_MAGIC, 8) == 0 &&
        h->version < DIST_CKPT_VERSION)
        return io_errf(err, errlen, "%s: checkpoint format %u of an older engine (this one "
                       "reads format %u, with aligned parameters); it cannot resume: remove "
                       "it or use another --out", path, h->version, DIST_CKPT_VERSION);
    if (len < sizeof *h || memcmp(h->magic, DIST_CKPT_MAGIC, 8) != 0 ||
        h->version != DIST_CKPT_VERSION)
        return io_errf(err, errlen, "%s: not a distributed checkpoint of this engine", path);
    if (h->trainer != (uint32_t)c->spec->distributed.trainer || h->ranks != c->size)
        return io_errf(err, errlen,
                       "%s: written by trainer %s on %lld ranks; this run is %s on %d ranks",
                       path, spec_trainer_name((spec_trainer)h->trainer), (long long)h->ranks,
                       spec_trainer_name(c->spec->distributed.trainer), c->size);
    if (h->n_params != c->m->n_params || h->n_state != c->m->n_state ||
        (n_optim >= 0 && h->n_optim != n_optim) || h->n_optim < 0 ||
        h->n_optim > (int64_t)(len / sizeof(float)) ||
        h->sched_bytes != (int64_t)sizeof(schedule_state) ||
        h->n_replicas < 1 || h->n_replicas > c->size || h->n_workers < 0 ||
        h->n_workers > c->size || h->epochs_done < 0 ||
        h->epochs_done > c->spec->training.epochs)
        return io_errf(err, errlen, "%s: checkpoint does not match this job's model", path);
    if (dist_ckpt_size(h) != len)
        return io_errf(err, errlen, "%s: truncated or corrupt (%zu bytes, expected %zu)", path,
                       len, dist_ckpt_size(h));
    return 0;
}

int dist_ckpt_load(const dist_ctx *c, dist_ckpt_meta *meta, dist_replica **reps_out,
                   long n_optim, char *err, size_t errlen)
{
    char path[4096];
    checkpoint_file_path(c->opt->out_dir, path, sizeof path);
    unsigned char *buf = NULL;
    size_t len = 0;
    if (io_read_file(path, (size_t)1 << 40, &buf, &len, err, errlen) < 0)
        return -1;
    dist_ckpt_head h;
    memcpy(&h, buf, len < sizeof h ? len : sizeof h);
    if (dist_ckpt_check(c, &h, len, n_optim, path, err, errlen) < 0) {
        free(buf);
        return -1;
    }
    memset(meta, 0, sizeof *meta);
    meta->epochs_done = (int)h.epochs_done;
    meta->global_step = (uint64_t)h.global_step;
    meta->commits = (long)h.commits;
    meta->staleness_sum = h.staleness_sum;
    meta->n_replicas = (int)h.n_replicas;
    meta->n_workers = (int)h.n_workers;
    meta->n_optim = (long)h.n_optim;
    n_optim = (long)h.n_optim; /* checked equal unless the caller took the file's */
    const unsigned char *p = buf + sizeof h;
    memcpy(&meta->sched, p, sizeof meta->sched);
    p += sizeof meta->sched;
    dist_replica *reps = calloc((size_t)h.n_replicas, sizeof *reps);
    meta->worker_commits = calloc((size_t)h.n_workers + 1, sizeof(long));
    if (!reps || !meta->worker_commits) {
        free(reps);
        free(buf);
        return io_errf(err, errlen, "checkpoint: out of memory");
    }
    for (int64_t i = 0; i < h.n_workers; i++, p += sizeof(int64_t)) {
        int64_t v;
        memcpy(&v, p, sizeof v);
        meta->worker_commits[i] = (long)v;
    }
    for (int k = 0; k < meta->n_replicas; k++) {
        reps[k].params = malloc((size_t)(h.n_params + 1) * sizeof(float));
        reps[k].state = malloc((size_t)(h.n_state + 1) * sizeof(float));
        reps[k].optim = malloc((size_t)(n_optim + 1) * sizeof(float));
        if (!reps[k].params || !reps[k].state || !reps[k].optim) {
            dist_ckpt_free(meta, reps);
            *reps_out = NULL;
            free(buf);
            return io_errf(err, errlen, "checkpoint: out of memory");
        }
        memcpy(reps[k].params, p, (size_t)h.n_params * sizeof(float));
        p += h.n_params * sizeof(float);
        memcpy(reps[k].state, p, (size_t)h.n_state * sizeof(float));
        p += h.n_state * sizeof(float);
        memcpy(reps[k].optim, p, (size_t)n_optim * sizeof(float));
        p += n_optim * sizeof(float);
    }
    free(buf);
    *reps_out = reps;
    return 0;
}

void dist_ckpt_free(dist_ckpt_meta *meta, dist_replica *reps)
{
    for (int k = 0; reps && k < meta->n_replicas; k++) {
        free(reps[k].params);
        free(reps[k].state);
        free(reps[k].optim);
    }
    free(reps);
    free(meta->worker_commits);
    meta->worker_commits = NULL;
}
