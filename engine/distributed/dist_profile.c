/* dist_profile.c — training.profile for the distributed trainers. Every
 * training rank times its layers as the single trainer does (model/profile.c,
 * inside model_forward and model_backward), the phases of its steps, and the
 * seconds each step spent in MPI: the growth of c->comm_s over the step
 * (allreduce: the gradient exchange and the sample exchange; a
 * parameter-server worker: its push and pull, on the steps that end a
 * window). After training rank 0 gathers every rank's figures and writes
 * profile.json: the single trainer's layout merged over the training ranks
 * (a mean over all their steps, the longest of any), "mpi" among the step
 * phases, and under "ranks" each training rank's own figures. A parameter
 * server trains nothing and is not listed. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <mpi.h>

#include "distributed/dist_profile.h"
#include "distributed/dist_ctx.h"
#include "distributed/dist_error.h"
#include "distributed/dist_watchdog.h"
#include "io/tensorfile.h"

/* Doubles per profile_stat on the wire: total, max, n. */
#define DIST_PROF_STAT 3

void dist_profile_enable(dist_ctx *c)
{
    if (!c->spec->training.profile || (c->has_server && c->rank == 0))
        return;
    if (model_profile_enable(c->m) != 0)
        dist_die("profile: out of memory");
}

void dist_profile_begin(dist_ctx *c)
{
    if (!c->m->profile)
        return;
    c->prof_t = model_profile_now(c->m);
    c->prof_comm = c->comm_s;
}

void dist_profile_mark(dist_ctx *c, profile_phase phase)
{
    if (!c->m->profile)
        return;
    double now = model_profile_now(c->m);
    profile_stat_add(&c->m->profile->phase[phase], now - c->prof_t);
    c->prof_t = now;
}

void dist_profile_end(dist_ctx *c)
{
    if (!c->m->profile)
        return;
    profile_stat_add(&c->prof_mpi, c->comm_s - c->prof_comm);
}

/* The stats a rank sends, in order: each layer's forward and backward,
 * each phase, then MPI. */
static long dist_profile_stats(const model *m)
{
    return 2L * m->n_layers + PROFILE_PHASES + 1;
}

static void dist_profile_put(double *dst, const profile_stat *s)
{
    dst[0] = s->total;
    dst[1] = s->max;
    dst[2] = (double)s->n;
}

static profile_stat dist_profile_get(const double *src)
{
    return (profile_stat){.total = src[0], .max = src[1], .n = (long)src[2]};
}

/* This rank's figures, flat (all zeros where it did not profile). */
static void dist_profile_pack(const dist_ctx *c, double *out)
{
    const model_profile *p = c->m->profile;
    if (!p)
        return;
    int L = c->m->n_layers;
    for (int i = 0; i < L; i++) {
        dist_profile_put(out + (2L * i) * DIST_PROF_STAT, &p->forward[i]);
        dist_profile_put(out + (2L * i + 1) * DIST_PROF_STAT, &p->backward[i]);
    }
    for (int k = 0; k < PROFILE_PHASES; k++)
        dist_profile_put(out + (2L * L + k) * DIST_PROF_STAT, &p->phase[k]);
    dist_profile_put(out + (2L * L + PROFILE_PHASES) * DIST_PROF_STAT, &c->prof_mpi);
}

/* Adds a rank's flat figures to p and *mpi. */
static void dist_profile_unpack(const double *in, int n_layers, model_profile *p,
                                profile_stat *mpi)
{
    for (int i = 0; i < n_layers; i++) {
        profile_stat f = dist_profile_get(in + (2L * i) * DIST_PROF_STAT);
        profile_stat b = dist_profile_get(in + (2L * i + 1) * DIST_PROF_STAT);
        profile_stat_merge(&p->forward[i], &f);
        profile_stat_merge(&p->backward[i], &b);
    }
    for (int k = 0; k < PROFILE_PHASES; k++) {
        profile_stat s = dist_profile_get(in + (2L * n_layers + k) * DIST_PROF_STAT);
        profile_stat_merge(&p->phase[k], &s);
    }
    profile_stat s = dist_profile_get(in + (2L * n_layers + PROFILE_PHASES) * DIST_PROF_STAT);
    profile_stat_merge(mpi, &s);
}

/* A zeroed model_profile for m's layers (free with model_profile_free). */
static model_profile *dist_profile_alloc(const model *m)
{
    model_profile *p = calloc(1, sizeof *p);
    if (!p)
        return NULL;
    p->n_layers = m->n_layers;
    p->forward = calloc((size_t)m->n_layers + 1, sizeof *p->forward);
    p->backward = calloc((size_t)m->n_layers + 1, sizeof *p->backward);
    if (!p->forward || !p->backward) {
        model_profile_free(p);
        return NULL;
    }
    return p;
}

/* model_profile_json_of with "mpi" among the step phases; NULL when out
 * of memory. */
static json_t *dist_profile_json(const model *m, const model_profile *p,
                                 const profile_stat *mpi)
{
    json_t *o = model_profile_json_of(m, p);
    json_t *steps = o ? json_object_get(o, "step_ms") : NULL;
    if (!steps || json_object_set_new(steps, "mpi", profile_stat_json(mpi)) != 0) {
        json_decref(o);
        return NULL;
    }
    return o;
}

/* Rank 0: the merged figures of the ranks in `all` (size * per doubles)
 * that profiled, and each of them under "ranks". */
static json_t *dist_profile_report(const dist_ctx *c, const double *all, long per)
{
    const model *m = c->m;
    model_profile *merged = dist_profile_alloc(m);
    json_t *ranks = json_array();
    profile_stat mpi = {0};
    for (int r = 0; merged && ranks && r < c->size; r++) {
        if (c->has_server && r == 0)
            continue;
        model_profile *one = dist_profile_alloc(m);
        profile_stat one_mpi = {0};
        if (!one)
            break;
        dist_profile_unpack(all + r * per, m->n_layers, one, &one_mpi);
        dist_profile_unpack(all + r * per, m->n_layers, merged, &mpi);
        json_t *o = dist_profile_json(m, one, &one_mpi);
        model_profile_free(one);
        if (!o)
            break;
        if (json_object_set_new(o, "rank", json_integer(r)) != 0) {
            json_decref(o);
            break;
        }
        if (json_array_append_new(ranks, o) != 0)
            break;
    }
    json_t *top = merged && ranks ? dist_profile_json(m, merged, &mpi) : NULL;
    model_profile_free(merged);
    if (!top || json_array_size(ranks) != (size_t)c->workers) {
        json_decref(top);
        json_decref(ranks);
        return NULL;
    }
    /* json_object_set_new takes the reference even when it fails. */
    if (json_object_set_new(top, "ranks", ranks) != 0 ||
        json_object_set_new(top, "trainer",
                            json_string(spec_trainer_name(c->spec->distributed.trainer))) != 0) {
        json_decref(top);
        return NULL;
    }
    return top;
}

void dist_profile_write(dist_ctx *c)
{
    if (!c->spec->training.profile)
        return;
    long per = dist_profile_stats(c->m) * DIST_PROF_STAT;
    double *mine = calloc((size_t)per, sizeof *mine);
    double *all = c->rank == 0 ? calloc((size_t)(per * c->size), sizeof *all) : NULL;
    if (!mine || (c->rank == 0 && !all))
        dist_die("profile: out of memory");
    dist_profile_pack(c, mine);
    dist_watchdog_tick("gathering the profile");
    DIST_MPI(MPI_Gather(mine, (int)per, MPI_DOUBLE, all, (int)per, MPI_DOUBLE, 0, c->comm));
    free(mine);
    if (c->rank != 0)
        return;
    json_t *o = dist_profile_report(c, all, per);
    free(all);
    char *text = o ? json_dumps(o, JSON_INDENT(1) | JSON_REAL_PRECISION(6)) : NULL;
    json_decref(o);
    if (!text)
        dist_die("profile.json: out of memory");
    char path[4096], err[1024];
    snprintf(path, sizeof path, "%s/profile.json", c->opt->out_dir);
    int rc = atomic_write_file(path, text, strlen(text), err, sizeof err);
    free(text);
    if (rc != 0)
        dist_die("profile.json: %s", err);
}
