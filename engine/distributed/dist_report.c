/* dist_report.c — rank 0's side of the run directory (schema/rundir.md):
 * progress.jsonl (one complete line per write(2)), history.json in the
 * Keras History shape plus per-worker detail (rewritten atomically after
 * every epoch; on --resume the existing one is cut back to the epochs the
 * checkpoint holds and extended), the weights files, and the failure line
 * a dying rank 0 leaves behind. Also the two collectives of this file:
 * every rank's host name, gathered to rank 0 at start for "rank_hosts",
 * and whether every rank's backend is bit-reproducible, for
 * "reproducible". */
#include <stdbool.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <jansson.h>

#include <mpi.h>

#include "distributed/dist_report.h"
#include "distributed/dist_ctx.h"
#include "distributed/dist_error.h"
#include "distributed/dist_eval.h"
#include "train/runlog.h"
#include "timeutil/timeutil.h"
#include "train/weights.h"

struct dist_report {
    const dist_ctx *c;
    json_t *hist;
    char hist_path[4096];
    double t0;              /* monotonic clock at start (this process) */
    double last_step_line;
    int epochs_run;         /* epochs finished in this process */
    int epoch_first;        /* first epoch of this process */
};

/* Rank 0: every rank's MPI_Get_processor_name, rank-indexed, from
 * dist_report_gather_hosts (NULL before it, and on other ranks). Kept
 * here rather than in dist_ctx: only the report reads it. */
static char (*dist_report_hosts)[MPI_MAX_PROCESSOR_NAME];

void dist_report_gather_hosts(const dist_ctx *c)
{
    char mine[MPI_MAX_PROCESSOR_NAME] = {0};
    int len = 0;
    DIST_MPI(MPI_Get_processor_name(mine, &len));
    if (c->rank == 0) {
        dist_report_hosts = calloc((size_t)c->size, sizeof *dist_report_hosts);
        if (!dist_report_hosts)
            dist_die("out of memory");
    }
    DIST_MPI(MPI_Gather(mine, MPI_MAX_PROCESSOR_NAME, MPI_CHAR, dist_report_hosts,
                        MPI_MAX_PROCESSOR_NAME, MPI_CHAR, 0, c->comm));
}

/* Rank 0: "rank K: <reason>" for the first rank whose backend is not
 * bit-reproducible once its model is built, from
 * dist_report_gather_reproducible; "" when every rank's is. */
static char dist_report_irreproducible[320];

void dist_report_gather_reproducible(const dist_ctx *c)
{
    enum { WHY = 256 };
    char mine[WHY] = {0};
    if (c->be->not_reproducible)
        snprintf(mine, sizeof mine, "%s", c->be->not_reproducible);
    char *all = NULL;
    if (c->rank == 0) {
        all = calloc((size_t)c->size, WHY);
        if (!all)
            dist_die("out of memory");
    }
    DIST_MPI(MPI_Gather(mine, WHY, MPI_CHAR, all, WHY, MPI_CHAR, 0, c->comm));
    if (c->rank != 0)
        return;
    dist_report_irreproducible[0] = '\0';
    for (int k = 0; k < c->size; k++) {
        char *why = all + (size_t)k * WHY;
        why[WHY - 1] = '\0';
        if (why[0]) {
            snprintf(dist_report_irreproducible, sizeof dist_report_irreproducible,
                     "rank %d: %s", k, why);
            break;
        }
    }
    free(all);
}

/* "reproducible", and its reason when false: what the ranks said at
 * start, or what rank 0's own backend has said since (a GPU convolution
 * may give it up on a batch size it first meets mid-run). */
static void dist_report_put_reproducible(const dist_report *r)
{
    char why[sizeof dist_report_irreproducible + 16];
    const backend *be = r->c->be;
    if (dist_report_irreproducible[0])
        snprintf(why, sizeof why, "%s", dist_report_irreproducible);
    else if (be && be->not_reproducible)
        snprintf(why, sizeof why, "rank 0: %s", be->not_reproducible);
    else
        why[0] = '\0';
    json_object_set_new(r->hist, "reproducible", json_boolean(why[0] == '\0'));
    if (why[0])
        json_object_set_new(r->hist, "reproducible_reason", json_string(why));
    else
        json_object_del(r->hist, "reproducible_reason");
}

/* A progress line's outcome (runlog_*): failing to append one is not
 * worth failing the run. */
static void dist_report_line(int rc, const char *err)
{
    if (rc < 0)
        fprintf(stderr, "punch-train: %s\n", err);
}

static json_t *dist_report_array(json_t *obj, const char *key)
{
    json_t *a = json_object_get(obj, key);
    if (!json_is_array(a)) {
        a = json_array();
        json_object_set_new(obj, key, a);
    }
    return a;
}

/* Drop entries past `n` of every array in obj (and in its workers). */
static void dist_report_truncate(json_t *obj, size_t n)
{
    const char *key;
    json_t *v;
    json_object_foreach(obj, key, v) {
        if (json_is_array(v) && strcmp(key, "workers") != 0)
            while (json_array_size(v) > n)
                json_array_remove(v, json_array_size(v) - 1);
    }
    json_t *w = json_object_get(obj, "workers");
    size_t i;
    json_t *e;
    json_array_foreach(w, i, e) dist_report_truncate(e, n);
}

static int dist_mkdir(const char *path, char *err, size_t errlen)
{
    if (mkdir(path, 0755) == 0 || errno == EEXIST)
        return 0;
    snprintf(err, errlen, "%s: cannot create directory: %s", path, strerror(errno));
    return -1;
}

dist_report *dist_report_open(const dist_ctx *c, int start_epoch, char *err, size_t errlen)
{
    char path[4096];
    if (dist_mkdir(c->opt->out_dir, err, errlen) < 0)
        return NULL;
    snprintf(path, sizeof path, "%s/checkpoints", c->opt->out_dir);
    if (dist_mkdir(path, err, errlen) < 0)
        return NULL;
    dist_report *r = calloc(1, sizeof *r);
    if (!r) {
        snprintf(err, errlen, "out of memory");
        return NULL;
    }
    r->c = c;
    r->t0 = timeutil_mono_s();
    r->epoch_first = start_epoch;
    snprintf(path, sizeof path, "%s/progress.jsonl", c->opt->out_dir);
    /* A fresh run starts a fresh progress.jsonl; a resumed one appends. */
    int flags = O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC | (start_epoch > 0 ? 0 : O_TRUNC);
    int fd = open(path, flags, 0644);
    if (fd < 0) {
        snprintf(err, errlen, "%s: %s", path, strerror(errno));
        free(r);
        return NULL;
    }
    close(fd);
    snprintf(r->hist_path, sizeof r->hist_path, "%s/history.json", c->opt->out_dir);
    if (start_epoch > 0)
        r->hist = json_load_file(r->hist_path, 0, NULL);
    if (!json_is_object(r->hist)) {
        json_decref(r->hist);
        r->hist = json_object();
    }
    dist_report_truncate(r->hist, (size_t)start_epoch);
    json_object_del(r->hist, "test");
    json_object_set_new(r->hist, "trainer",
                        json_string(spec_trainer_name(c->spec->distributed.trainer)));
    json_object_set_new(r->hist, "ranks", json_integer(c->size));
    if (c->held) {
        /* Per rank: train samples resident, and received each epoch. */
        json_t *held = json_array(), *recv = json_array();
        for (int k = 0; k < c->size; k++) {
            json_array_append_new(held, json_integer(c->held[2 * k]));
            json_array_append_new(recv, json_integer(c->held[2 * k + 1]));
        }
        json_object_set_new(r->hist, "samples_held", held);
        json_object_set_new(r->hist, "samples_received", recv);
    }
    if (dist_report_hosts) {
        /* This process's ranks: a resumed run records where it runs now. */
        json_t *hosts = json_array();
        for (int k = 0; k < c->size; k++) {
            dist_report_hosts[k][MPI_MAX_PROCESSOR_NAME - 1] = '\0';
            json_array_append_new(hosts, json_string(dist_report_hosts[k]));
        }
        json_object_set_new(r->hist, "rank_hosts", hosts);
    }
    return r;
}

void dist_report_free(dist_report *r)
{
    if (!r)
        return;
    json_decref(r->hist);
    free(r);
    free(dist_report_hosts);
    dist_report_hosts = NULL;
}

void dist_report_start(dist_report *r, long steps, long samples)
{
    const job_spec *s = r->c->spec;
    runlog_start_line l = {.epochs = s->training.epochs,
                           .steps = steps,
                           .samples = samples,
                           .ranks = r->c->size,
                           .trainer = spec_trainer_name(s->distributed.trainer),
                           .epoch = r->epoch_first,
                           .resumed = r->epoch_first > 0,
                           .parameters = r->c->m->n_trainable,
                           .workers = r->c->workers};
    char err[512];
    dist_report_line(runlog_start(r->c->opt->out_dir, &l, err, sizeof err), err);
}

/* Loss and metrics of sums, in the run log's form. */
static eval_result dist_report_result(const job_spec *s, int n_out, const dist_sums *sums)
{
    eval_result e = {.loss = dist_sums_loss(sums), .samples = (long)sums->n};
    for (int i = 0; i < s->training.n_metrics; i++)
        e.metric[i] = dist_sums_metric(sums, s->training.metrics[i], n_out);
    return e;
}

void dist_report_step(dist_report *r, int epoch, long step, long steps, const dist_sums *run,
                      double samples_per_s)
{
    if (!runlog_step_due(&r->last_step_line))
        return;
    const job_spec *s = r->c->spec;
    double elapsed = timeutil_mono_s() - r->t0;
    /* The ETA from this process's pace: a resumed run starts at an epoch
     * boundary, so its steps are those since epoch_first. */
    long done = (long)(epoch - r->epoch_first) * steps + step;
    long left = (steps - step) + (long)(s->training.epochs - epoch - 1) * steps;
    runlog_step_line l = {.epoch = epoch,
                          .epochs = s->training.epochs,
                          .step = step,
                          .steps = steps,
                          .run = dist_report_result(s, r->c->m->n_out, run),
                          .samples_per_s = samples_per_s,
                          .elapsed_s = elapsed,
                          .eta_s = done > 0 ? elapsed / (double)done * (double)left : 0.0};
    char err[512];
    dist_report_line(runlog_step(r->c->opt->out_dir, &s->training, &l, err, sizeof err), err);
}

static void dist_report_append_metrics(json_t *h, const job_spec *s, int n_out,
                                       const char *prefix, const dist_sums *sums)
{
    char key[64];
    snprintf(key, sizeof key, "%sloss", prefix);
    json_array_append_new(dist_report_array(h, key), json_real(dist_sums_loss(sums)));
    for (int i = 0; i < s->training.n_metrics; i++) {
        spec_metric mt = s->training.metrics[i];
        snprintf(key, sizeof key, "%s%s", prefix, spec_metric_name(mt));
        json_array_append_new(dist_report_array(h, key),
                              json_real(dist_sums_metric(sums, mt, n_out)));
    }
}

static int dist_report_save(dist_report *r, char *err, size_t errlen)
{
    dist_report_put_reproducible(r);
    char *s = json_dumps(r->hist, JSON_INDENT(1) | JSON_REAL_PRECISION(9));
    if (!s) {
        snprintf(err, errlen, "history.json: cannot encode");
        return -1;
    }
    int rc = atomic_write_file(r->hist_path, s, strlen(s), err, errlen);
    free(s);
    return rc;
}

static void dist_report_workers(dist_report *r, const dist_epoch_info *e)
{
    const job_spec *s = r->c->spec;
    json_t *ws = dist_report_array(r->hist, "workers");
    for (int i = 0; i < e->n_workers; i++) {
        json_t *w = json_array_get(ws, (size_t)i);
        if (!w) {
            w = json_object();
            json_array_append_new(ws, w);
        }
        json_object_set_new(w, "rank", json_integer(e->worker_ranks[i]));
        dist_report_append_metrics(w, s, r->c->m->n_out, "", &e->per_worker[i]);
        if (e->worker_commits)
            json_object_set_new(w, "commits", json_integer(e->worker_commits[i]));
        if (e->worker_lr)
            json_array_append_new(dist_report_array(w, "lr"), json_real(e->worker_lr[i]));
        if (e->worker_order) {
            /* 64 bits do not fit a JSON number exactly: 16 hex digits. */
            char hex[17];
            snprintf(hex, sizeof hex, "%016llx", (unsigned long long)e->worker_order[i]);
            json_array_append_new(dist_report_array(w, "order_hash"), json_string(hex));
        }
    }
}

/* The console line, in the single trainer's format. */
static void dist_report_console(const job_spec *s, int n_out, const dist_epoch_info *e,
                                double rate)
{
    const spec_training *t = &s->training;
    fprintf(stderr, "epoch %d/%d - %.1fs - %.0f samples/s - loss %.4f", e->epoch + 1, t->epochs,
            e->seconds, rate, dist_sums_loss(&e->train));
    for (int i = 0; i < t->n_metrics; i++)
        fprintf(stderr, " - %s %.4f", spec_metric_name(t->metrics[i]),
                dist_sums_metric(&e->train, t->metrics[i], n_out));
    if (e->has_val) {
        fprintf(stderr, " - val_loss %.4f", dist_sums_loss(&e->val));
        for (int i = 0; i < t->n_metrics; i++)
            fprintf(stderr, " - val_%s %.4f", spec_metric_name(t->metrics[i]),
                    dist_sums_metric(&e->val, t->metrics[i], n_out));
    }
    fprintf(stderr, " - lr %.3g", e->lr);
    if (spec_trainer_is_async(s->distributed.trainer))
        fprintf(stderr, " - commits %ld - staleness %.2f", e->commits, e->mean_staleness);
    fprintf(stderr, "\n");
}

int dist_report_epoch(dist_report *r, const dist_epoch_info *e, char *err, size_t errlen)
{
    const job_spec *s = r->c->spec;
    int n_out = r->c->m->n_out;
    bool async = spec_trainer_is_async(s->distributed.trainer);
    r->epochs_run++;
    double elapsed = timeutil_mono_s() - r->t0;
    int left = s->training.epochs - (e->epoch + 1);
    double eta = left * elapsed / r->epochs_run;
    double rate = e->seconds > 0 ? e->samples / e->seconds : 0.0;

    eval_result val = dist_report_result(s, n_out, &e->val);
    runlog_epoch_line l = {.epoch = e->epoch,
                           .epochs = s->training.epochs,
                           .train = dist_report_result(s, n_out, &e->train),
                           .val = e->has_val ? &val : NULL,
                           .lr = e->lr,
                           .samples_per_s = rate,
                           .elapsed_s = elapsed,
                           .eta_s = eta,
                           .commits = async ? e->commits : -1,
                           .mean_staleness = e->mean_staleness};
    char line_err[512];
    dist_report_line(runlog_epoch(r->c->opt->out_dir, &s->training, &l, line_err,
                                  sizeof line_err), line_err);

    dist_report_console(s, n_out, e, rate);

    dist_report_append_metrics(r->hist, s, n_out, "", &e->train);
    if (e->has_val)
        dist_report_append_metrics(r->hist, s, n_out, "val_", &e->val);
    json_array_append_new(dist_report_array(r->hist, "lr"), json_real(e->lr));
    json_array_append_new(dist_report_array(r->hist, "epoch_time_s"), json_real(e->seconds));
    json_array_append_new(dist_report_array(r->hist, "samples_per_s"), json_real(rate));
    if (async) {
        json_object_set_new(r->hist, "commits", json_integer(e->commits));
        json_object_set_new(r->hist, "mean_staleness", json_real(e->mean_staleness));
    }
    if (e->per_worker)
        dist_report_workers(r, e);
    return dist_report_save(r, err, errlen);
}

void dist_report_commits(dist_report *r, long commits, double mean_staleness,
                         const long *worker_commits, int n_workers)
{
    json_object_set_new(r->hist, "commits", json_integer(commits));
    json_object_set_new(r->hist, "mean_staleness", json_real(mean_staleness));
    json_t *ws = dist_report_array(r->hist, "workers");
    for (int i = 0; i < n_workers; i++) {
        json_t *w = json_array_get(ws, (size_t)i);
        if (!w) {
            w = json_object();
            json_object_set_new(w, "rank", json_integer(i + 1));
            json_array_append_new(ws, w);
        }
        json_object_set_new(w, "commits", json_integer(worker_commits[i]));
    }
}

void dist_report_stopped(dist_report *r, int epoch, long discarded)
{
    json_object_set_new(r->hist, "stopped_epoch", json_integer(epoch + 1));
    json_object_set_new(r->hist, "commits_discarded", json_integer(discarded));
}

/* A parameter server's lost worker (dist_async_server.c): history.json's
 * lost_workers, saved at once, and a worker_lost line in progress.jsonl. */
void dist_report_lost_worker(dist_report *r, int rank, int epoch, long step, double silent_s)
{
    json_t *l = json_object();
    json_object_set_new(l, "rank", json_integer(rank));
    json_object_set_new(l, "epoch", json_integer(epoch));
    json_object_set_new(l, "step", json_integer(step));
    json_object_set_new(l, "silent_s", json_real(silent_s));
    json_array_append_new(dist_report_array(r->hist, "lost_workers"), l);
    char err[512];
    if (dist_report_save(r, err, sizeof err) < 0)
        fprintf(stderr, "punch-train: %s\n", err);
    json_t *ev = json_object();
    json_object_set_new(ev, "event", json_string("worker_lost"));
    json_object_set_new(ev, "rank", json_integer(rank));
    json_object_set_new(ev, "epoch", json_integer(epoch));
    json_object_set_new(ev, "step", json_integer(step));
    json_object_set_new(ev, "silent_s", json_real(silent_s));
    dist_report_line(runlog_event(r->c->opt->out_dir, ev, err, sizeof err), err);
}

void dist_report_worker_times(dist_report *r, const double *times, int n_workers)
{
    json_t *ws = dist_report_array(r->hist, "workers");
    for (int i = 0; i < n_workers; i++) {
        json_t *w = json_array_get(ws, (size_t)i);
        if (!w)
            continue;
        json_object_set_new(w, "comm_time_s", json_real(times[2 * i]));
        json_object_set_new(w, "train_time_s", json_real(times[2 * i + 1]));
    }
}

void dist_report_reads(dist_report *r, const double *reads, int n_workers)
{
    json_t *ws = dist_report_array(r->hist, "workers");
    for (int i = 0; i < n_workers; i++) {
        json_t *w = json_array_get(ws, (size_t)i);
        if (!w)
            continue;
        json_object_set_new(w, "read_wait_s", json_real(reads[2 * i]));
        json_object_set_new(w, "read_cpu_s", json_real(reads[2 * i + 1]));
    }
}

void dist_report_evaluate(dist_report *r, const dist_sums *test)
{
    const job_spec *s = r->c->spec;
    eval_result e = dist_report_result(s, r->c->m->n_out, test);
    fprintf(stderr, "before training: test loss %.4f\n", e.loss);
    char err[512];
    dist_report_line(runlog_evaluate_before(r->c->opt->out_dir, &s->training, &e, err,
                                            sizeof err), err);
}

int dist_report_end(dist_report *r, bool has_test, const dist_sums *test, double comm_s,
                    double train_s, char *err, size_t errlen)
{
    const job_spec *s = r->c->spec;
    int n_out = r->c->m->n_out;
    if (has_test) {
        json_t *t = json_object();
        json_object_set_new(t, "loss", json_real(dist_sums_loss(test)));
        for (int i = 0; i < s->training.n_metrics; i++)
            json_object_set_new(t, spec_metric_name(s->training.metrics[i]),
                                json_real(dist_sums_metric(test, s->training.metrics[i], n_out)));
        json_object_set_new(r->hist, "test", t);
    }
    /* Rank 0's share of training time spent in communication (the
     * parameter server: in waiting for and answering workers). */
    json_object_set_new(r->hist, "comm_time_s", json_real(comm_s));
    json_object_set_new(r->hist, "train_time_s", json_real(train_s));
    if (dist_report_save(r, err, errlen) < 0)
        return -1;
    eval_result result = {0};
    if (has_test) {
        result = dist_report_result(s, n_out, test);
        fprintf(stderr, "test - loss %.4f", dist_sums_loss(test));
        for (int i = 0; i < s->training.n_metrics; i++)
            fprintf(stderr, " - %s %.4f", spec_metric_name(s->training.metrics[i]),
                    dist_sums_metric(test, s->training.metrics[i], n_out));
        fprintf(stderr, "\n");
    }
    char line_err[512];
    dist_report_line(runlog_end(r->c->opt->out_dir, &s->training, has_test ? &result : NULL,
                                timeutil_mono_s() - r->t0, r->epoch_first + r->epochs_run,
                                line_err, sizeof line_err), line_err);
    return 0;
}

/* stem.safetensors and, with npz, stem.npz (stem: a path without the
 * extension), with the trainer's name in the metadata. */
static int dist_write_weight_files(const dist_ctx *c, const float *params, const float *state,
                                   const char *stem, bool npz, char *err, size_t errlen)
{
    const char *keys[] = {"trainer", "job"};
    const char *vals[] = {spec_trainer_name(c->spec->distributed.trainer), c->spec->name};
    weights_meta meta = {keys, vals, 2};
    return weights_write(stem, c->m, params, state, &c->train, &meta, npz, err, errlen);
}

int dist_write_weights(const dist_ctx *c, const float *params, const float *state,
                       const char *suffix, bool npz, char *err, size_t errlen)
{
    char stem[4096];
    if (suffix)
        snprintf(stem, sizeof stem, "%s/weights.%s", c->opt->out_dir, suffix);
    else
        snprintf(stem, sizeof stem, "%s/weights", c->opt->out_dir);
    return dist_write_weight_files(c, params, state, stem, npz, err, errlen);
}

int dist_write_epoch_weights(const dist_ctx *c, const float *params, const float *state,
                             int epochs_done, int member, char *err, size_t errlen)
{
    char stem[4096];
    if (member >= 0)
        snprintf(stem, sizeof stem, "%s/checkpoints/weights-epoch-%03d.member-%d",
                 c->opt->out_dir, epochs_done, member);
    else
        snprintf(stem, sizeof stem, "%s/checkpoints/weights-epoch-%03d", c->opt->out_dir,
                 epochs_done);
    return dist_write_weight_files(c, params, state, stem, member < 0, err, errlen);
}
