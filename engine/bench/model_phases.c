/* model_phases.c — punch-bench-model: where one training step of a job's
 * model spends its time, and the model's inference throughput, measured in
 * process through the engine's public model API (model/model.h, the same
 * calls train.c makes), so no start-up or data loading is in the figures.
 *
 *   punch-bench-model JOB.json [--threads N] [--steps S] [--warmup W]
 *                     [--infer-batch B] [--weights FILE] [--datasets DIR]
 *                     [--separate-step] [--gemm default|openblas]
 *                     [--conv default|own]
 *
 * Training: W untimed steps, then S timed steps of batch training.batch_size
 * over the epoch-0 permutation, each phase (gather the batch, forward,
 * loss, backward, optimizer) timed separately. Like train.c, the backward
 * pass and the optimizer step run fused (model_backward_step: "backward"
 * holds both, "optimizer" is 0); --separate-step times them apart, as a
 * distributed trainer runs them. Inference: the test set (or
 * the first 10,000 training samples when the job has none) evaluated with
 * train_evaluate at batch B (default 256) — what `--evaluate-only` runs —
 * best of three passes, with weights from FILE (.safetensors) or the
 * freshly trained ones; --infer-batch 0 skips it (for profiling training
 * alone). --gemm openblas runs every GEMM in OpenBLAS in a build that has
 * oneDNN (cpu_sgemm_force_openblas), so both libraries compare in one
 * build; --conv own keeps convolutions off oneDNN's primitives
 * (cpu_conv_dnnl_disable), the engine's own algorithms then. Prints one JSON object on stdout. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cpu/cpu_backend.h"
#include "cpu/cpu_conv.h"
#include "train/train.h"
#include "io/tensorfile.h"
#include "timeutil/timeutil.h"
#include "device/device.h"

enum { PH_LOAD, PH_FORWARD, PH_LOSS, PH_BACKWARD, PH_OPTIM, PH_COUNT };
static const char *const phase_names[PH_COUNT] = {"load_batch", "forward", "loss",
                                                  "backward", "optimizer"};

typedef struct bench_opts {
    const char *job, *weights, *datasets;
    int threads, steps, warmup, infer_batch;
    int separate; /* model_backward + model_optimizer_step instead of the fused step */
    int openblas; /* --gemm openblas */
    int conv_own; /* --conv own */
} bench_opts;

typedef struct bench_state {
    job_spec *spec;
    backend *be;
    dataset train, val, test;
    model *m, *infer;
    optimizer *opt;
    int64_t *perm;
} bench_state;

static int bench_fail(const char *what, const char *why)
{
    fprintf(stderr, "punch-bench-model: %s: %s\n", what, why);
    return 1;
}

static int bench_parse(int argc, char **argv, bench_opts *o)
{
    *o = (bench_opts){.threads = 2, .steps = 200, .warmup = 20, .infer_batch = 256,
                      .datasets = "/usr/share/datasets"};
    for (int i = 1; i < argc; i++) {
        const char *a = argv[i], *v = i + 1 < argc ? argv[i + 1] : NULL;
        if (a[0] != '-') {
            o->job = a;
            continue;
        }
        if (strcmp(a, "--separate-step") == 0) {
            o->separate = 1;
            continue;
        }
        if (!v)
            return -1;
        if (strcmp(a, "--threads") == 0)
            o->threads = atoi(v);
        else if (strcmp(a, "--steps") == 0)
            o->steps = atoi(v);
        else if (strcmp(a, "--warmup") == 0)
            o->warmup = atoi(v);
        else if (strcmp(a, "--infer-batch") == 0)
            o->infer_batch = atoi(v);
        else if (strcmp(a, "--weights") == 0)
            o->weights = v;
        else if (strcmp(a, "--datasets") == 0)
            o->datasets = v;
        else if (strcmp(a, "--gemm") == 0 &&
                 (strcmp(v, "openblas") == 0 || strcmp(v, "default") == 0))
            o->openblas = strcmp(v, "openblas") == 0;
        else if (strcmp(a, "--conv") == 0 &&
                 (strcmp(v, "own") == 0 || strcmp(v, "default") == 0))
            o->conv_own = strcmp(v, "own") == 0;
        else
            return -1;
        i++;
    }
    if (!o->job || o->threads < 1 || o->steps < 1 || o->warmup < 0 || o->infer_batch < 0)
        return -1;
    return 0;
}

static int bench_open(const bench_opts *o, bench_state *s, char *err, size_t errlen)
{
    spec_error serr;
    s->spec = spec_load_file(o->job, &serr);
    if (!s->spec) {
        spec_error_str(&serr, err, errlen);
        return -1;
    }
    const char *dirs[1] = {o->datasets};
    dataset_roots roots = {dirs, 1};
    const spec_training *t = &s->spec->training;
    s->be = device_backend_create(s->spec, o->threads, 0, err, errlen);
    if (!s->be || dataset_load_all(&s->spec->data, &s->spec->input, &roots, t->seed, &s->train,
                                   &s->val, &s->test, err, errlen) != 0)
        return -1;
    s->m = model_create(s->spec, s->be, t->batch_size, err, errlen);
    if (!s->m || model_init_params(s->m, t->seed, err, errlen) != 0)
        return -1;
    if (o->infer_batch > 0) {
        s->infer = model_create(s->spec, s->be, o->infer_batch, err, errlen);
        if (!s->infer)
            return -1;
    }
    s->opt = optim_create(&t->optimizer, s->m->n_params);
    s->perm = malloc((size_t)(s->train.n > 0 ? s->train.n : 1) * sizeof *s->perm);
    if (!s->opt || !s->perm) {
        snprintf(err, errlen, "out of memory");
        return -1;
    }
    if (s->train.n < t->batch_size) {
        snprintf(err, errlen, "fewer training samples than one batch");
        return -1;
    }
    dataset_epoch_permutation(s->train.n, t->seed, 0, s->perm);
    return 0;
}

static void bench_close(bench_state *s)
{
    free(s->perm);
    optim_free(s->opt);
    model_free(s->infer);
    model_free(s->m);
    dataset_free(&s->train);
    dataset_free(&s->val);
    dataset_free(&s->test);
    if (s->be)
        s->be->destroy(s->be);
    spec_free(s->spec);
}

/* `count` steps from step `first` on; phase times added to t when t != NULL. */
static int bench_train(bench_state *s, long first, int count, int separate, double *t,
                       char *err, size_t errlen)
{
    model *m = s->m;
    float lr = (float)s->spec->training.optimizer.learning_rate;
    int b = s->spec->training.batch_size;
    long per_epoch = s->train.n / b;
    for (long step = first; step < first + count; step++) {
        const int64_t *idx = s->perm + (step % per_epoch) * b;
        double c[PH_COUNT + 1];
        c[0] = timeutil_mono_s();
        if (model_load_batch(m, &s->train, idx, b, err, errlen) != 0)
            return -1;
        c[1] = timeutil_mono_s();
        model_forward(m, b, true, (uint64_t)step);
        s->be->synchronize(s->be);
        c[2] = timeutil_mono_s();
        batch_metrics bm;
        model_loss(m, b, &bm);
        c[3] = timeutil_mono_s();
        if (separate)
            model_backward(m, b);
        else
            model_backward_step(m, b, s->opt, lr);
        s->be->synchronize(s->be);
        c[4] = timeutil_mono_s();
        if (separate)
            model_optimizer_step(m, s->opt, lr);
        s->be->synchronize(s->be);
        c[5] = timeutil_mono_s();
        for (int p = 0; t && p < PH_COUNT; p++)
            t[p] += c[p + 1] - c[p];
    }
    return 0;
}

static int bench_load_weights(model *m, const char *path, char *err, size_t errlen)
{
    tensor_entry *t = NULL;
    int n = 0;
    if (safetensors_read(path, &t, &n, err, errlen) != 0)
        return -1;
    int rc = model_load_tensors(m, t, n, err, errlen);
    tensorfile_free(t, n);
    return rc;
}

/* Best of three passes of train_evaluate over the test set. */
static int bench_infer(const bench_opts *o, bench_state *s, double *rate, double *acc,
                       long *samples, char *err, size_t errlen)
{
    if (!s->infer)
        return 0;
    if (o->weights) {
        if (bench_load_weights(s->infer, o->weights, err, errlen) != 0)
            return -1;
    } else {
        float *p = malloc((size_t)s->m->n_params * sizeof *p);
        if (!p) {
            snprintf(err, errlen, "out of memory");
            return -1;
        }
        model_get_params(s->m, p);
        model_set_params(s->infer, p);
        free(p);
    }
    dataset *d = s->test.n > 0 ? &s->test : &s->train;
    dataset view = *d;
    if (view.n > 10000)
        view.n = 10000;
    double best = 0;
    eval_result r = {0};
    for (int pass = 0; pass < 3; pass++) {
        double t0 = timeutil_mono_s();
        if (train_evaluate(s->infer, &view, &r, err, errlen) != 0)
            return -1;
        s->be->synchronize(s->be);
        double sec = timeutil_mono_s() - t0;
        if (pass == 0 || sec < best)
            best = sec;
    }
    *rate = (double)view.n / best;
    *acc = s->spec->training.n_metrics > 0 ? r.metric[0] : 0.0;
    *samples = view.n;
    return 0;
}

int main(int argc, char **argv)
{
    bench_opts o;
    if (bench_parse(argc, argv, &o) != 0) {
        fprintf(stderr, "usage: punch-bench-model JOB.json [--threads N] [--steps S] "
                "[--warmup W] [--infer-batch B] [--weights FILE.safetensors] "
                "[--datasets DIR] [--separate-step] [--gemm default|openblas] "
                "[--conv default|own]\n");
        return 2;
    }
    cpu_sgemm_force_openblas(o.openblas);
    cpu_conv_dnnl_disable(o.conv_own);
    char err[1024];
    bench_state s;
    memset(&s, 0, sizeof s);
    int rc = 0;
    double t[PH_COUNT] = {0}, rate = 0, acc = 0;
    long samples = 0;
    if (bench_open(&o, &s, err, sizeof err) != 0 ||
        bench_train(&s, 0, o.warmup, o.separate, NULL, err, sizeof err) != 0 ||
        bench_train(&s, o.warmup, o.steps, o.separate, t, err, sizeof err) != 0 ||
        bench_infer(&o, &s, &rate, &acc, &samples, err, sizeof err) != 0) {
        rc = bench_fail(o.job, err);
    } else {
        double total = 0;
        for (int p = 0; p < PH_COUNT; p++)
            total += t[p];
        int b = s.spec->training.batch_size;
        printf("{\"job\":\"%s\",\"gemm\":\"%s\",\"conv\":\"%s\",\"threads\":%d,"
               "\"batch\":%d,\"steps\":%d,\"parameters\":%ld,\"train_samples_per_s\":%.1f,"
               "\"step_ms\":{", o.job, o.openblas ? "openblas" : "default",
               o.conv_own ? "own" : "default", o.threads, b, o.steps, s.m->n_trainable,
               (double)o.steps * b / total);
        for (int p = 0; p < PH_COUNT; p++)
            printf("%s\"%s\":%.4f", p ? "," : "", phase_names[p], t[p] / o.steps * 1e3);
        printf("},\"infer_batch\":%d,\"infer_samples\":%ld,\"infer_samples_per_s\":%.1f,"
               "\"infer_accuracy\":%.4f}\n", o.infer_batch, samples, rate, acc);
    }
    bench_close(&s);
    return rc;
}
