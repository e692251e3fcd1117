/* sgemm_peak.c — punch-bench-sgemm: the sgemm ceiling of this machine with
 * the GEMM libraries punch-train links, for scripts/bench-engine.
 *
 *   punch-bench-sgemm [--size N] [--threads T] [--repeats R]
 *                     [--library openblas|dnnl] [--shape M,N,K[,TA,TB]]...
 *
 * Without --shape: a square N x N x N row-major sgemm (default N = 2048) on
 * T OpenBLAS threads (default 2), best of R timed calls after one warm-up.
 * With --shape (repeatable): the same for each given shape, which is how
 * the findings measure the GEMMs punch-train actually issues (TA/TB are 0
 * or 1: transpose A / B). Prints one JSON object on stdout with OpenBLAS's
 * core name, so a run records which kernel (Haswell AVX2, SkylakeX
 * AVX-512, ...) produced the figure; OPENBLAS_CORETYPE chooses it.
 * --library dnnl times oneDNN's sgemm instead (what punch-train's GEMMs run
 * when it is built with oneDNN) on T OpenMP threads. */
#include <cblas.h>
#ifdef PUNCH_HAVE_DNNL
#include <omp.h>
#include <oneapi/dnnl/dnnl.h>
#endif
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "timeutil/timeutil.h"

#define BENCH_MAX_SHAPES 64

/* OpenBLAS exports these but Debian's cblas.h does not always declare them. */
char *openblas_get_corename(void);
char *openblas_get_config(void);

typedef struct bench_shape {
    int m, n, k;
    bool ta, tb;
} bench_shape;

typedef struct bench_result {
    double best_gflops, median_gflops, best_seconds;
    int calls;
} bench_result;

static int bench_cmp_double(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

static bool bench_dnnl;

static void bench_sgemm(const bench_shape *s, const float *a, int lda, const float *b, int ldb,
                        float *c)
{
#ifdef PUNCH_HAVE_DNNL
    if (bench_dnnl) {
        dnnl_sgemm(s->ta ? 'T' : 'N', s->tb ? 'T' : 'N', s->m, s->n, s->k, 1.0f, a, lda, b,
                   ldb, 0.0f, c, s->n);
        return;
    }
#endif
    cblas_sgemm(CblasRowMajor, s->ta ? CblasTrans : CblasNoTrans,
                s->tb ? CblasTrans : CblasNoTrans, s->m, s->n, s->k, 1.0f, a, lda, b, ldb,
                0.0f, c, s->n);
}

static float *bench_matrix(long n)
{
    float *p = aligned_alloc(64, (size_t)((n * (long)sizeof(float) + 63) / 64 * 64));
    if (!p)
        return NULL;
    /* Small, non-zero, non-denormal values: timing must not depend on data. */
    for (long i = 0; i < n; i++)
        p[i] = (float)((i * 7919) % 1000) * 1e-3f - 0.5f;
    return p;
}

/* One call of shape s; calls per sample are batched so each timed sample
 * lasts at least ~20 ms (small shapes would otherwise measure the clock). */
static int bench_run(const bench_shape *s, int repeats, bench_result *out)
{
    float *a = bench_matrix((long)s->m * s->k);
    float *b = bench_matrix((long)s->k * s->n);
    float *c = bench_matrix((long)s->m * s->n);
    double *secs = malloc((size_t)repeats * sizeof *secs);
    if (!a || !b || !c || !secs) {
        free(a);
        free(b);
        free(c);
        free(secs);
        return -1;
    }
    int lda = s->ta ? s->m : s->k, ldb = s->tb ? s->k : s->n;
    double flops = 2.0 * s->m * s->n * s->k;
    int calls = 1;
    double t0 = timeutil_mono_s();
    bench_sgemm(s, a, lda, b, ldb, c);
    double once = timeutil_mono_s() - t0;
    if (once < 0.02)
        calls = (int)(0.02 / (once > 1e-7 ? once : 1e-7)) + 1;
    for (int r = 0; r < repeats; r++) {
        t0 = timeutil_mono_s();
        for (int i = 0; i < calls; i++)
            bench_sgemm(s, a, lda, b, ldb, c);
        secs[r] = (timeutil_mono_s() - t0) / calls;
    }
    qsort(secs, (size_t)repeats, sizeof *secs, bench_cmp_double);
    out->best_seconds = secs[0];
    out->best_gflops = flops / secs[0] * 1e-9;
    out->median_gflops = flops / secs[repeats / 2] * 1e-9;
    out->calls = calls;
    free(a);
    free(b);
    free(c);
    free(secs);
    return 0;
}

static int bench_parse_shape(const char *text, bench_shape *s)
{
    int ta = 0, tb = 0;
    int got = sscanf(text, "%d,%d,%d,%d,%d", &s->m, &s->n, &s->k, &ta, &tb);
    if ((got != 3 && got != 5) || s->m < 1 || s->n < 1 || s->k < 1 || s->m > 65536 ||
        s->n > 65536 || s->k > 65536)
        return -1;
    s->ta = ta != 0;
    s->tb = tb != 0;
    return 0;
}

static int bench_usage(const char *why)
{
    fprintf(stderr, "punch-bench-sgemm: %s\nusage: punch-bench-sgemm [--size N] [--threads T] "
            "[--repeats R] [--library openblas|dnnl] [--shape M,N,K[,TA,TB]]...\n", why);
    return 2;
}

int main(int argc, char **argv)
{
    int size = 2048, threads = 2, repeats = 5, n_shapes = 0;
    bench_shape shapes[BENCH_MAX_SHAPES];
    for (int i = 1; i < argc; i++) {
        const char *v = i + 1 < argc ? argv[i + 1] : NULL;
        if (strcmp(argv[i], "--help") == 0) {
            puts("usage: punch-bench-sgemm [--size N] [--threads T] [--repeats R] "
                 "[--library openblas|dnnl] [--shape M,N,K[,TA,TB]]...");
            return 0;
        }
        if (!v)
            return bench_usage("an option needs a value");
        if (strcmp(argv[i], "--size") == 0)
            size = atoi(v);
        else if (strcmp(argv[i], "--threads") == 0)
            threads = atoi(v);
        else if (strcmp(argv[i], "--repeats") == 0)
            repeats = atoi(v);
        else if (strcmp(argv[i], "--library") == 0) {
            if (strcmp(v, "dnnl") == 0) {
#ifndef PUNCH_HAVE_DNNL
                return bench_usage("--library dnnl: this build has no oneDNN");
#endif
                bench_dnnl = true;
            } else if (strcmp(v, "openblas") != 0)
                return bench_usage("--library takes openblas or dnnl");
        } else if (strcmp(argv[i], "--shape") == 0) {
            if (n_shapes == BENCH_MAX_SHAPES || bench_parse_shape(v, &shapes[n_shapes]) != 0)
                return bench_usage("--shape takes M,N,K or M,N,K,TA,TB (at most 64 shapes)");
            n_shapes++;
        } else
            return bench_usage("unknown option");
        i++;
    }
    if (size < 1 || size > 16384 || threads < 1 || threads > 1024 || repeats < 1 ||
        repeats > 1000)
        return bench_usage("--size 1..16384, --threads 1..1024, --repeats 1..1000");
    if (n_shapes == 0)
        shapes[n_shapes++] = (bench_shape){size, size, size, false, false};
    openblas_set_num_threads(threads);
#ifdef PUNCH_HAVE_DNNL
    omp_set_num_threads(threads);
#endif
    printf("{\"library\":\"%s\",\"core\":\"%s\",\"config\":\"%s\",\"threads\":%d,"
           "\"repeats\":%d,\"results\":[", bench_dnnl ? "dnnl" : "openblas",
           bench_dnnl ? "oneDNN JIT" : openblas_get_corename(), openblas_get_config(), threads,
           repeats);
    for (int i = 0; i < n_shapes; i++) {
        bench_result r;
        if (bench_run(&shapes[i], repeats, &r) != 0) {
            fprintf(stderr, "punch-bench-sgemm: out of memory for %dx%dx%d\n", shapes[i].m,
                    shapes[i].n, shapes[i].k);
            return 1;
        }
        printf("%s{\"m\":%d,\"n\":%d,\"k\":%d,\"ta\":%d,\"tb\":%d,\"calls\":%d,"
               "\"best_s\":%.9f,\"gflops\":%.2f,\"median_gflops\":%.2f}",
               i ? "," : "", shapes[i].m, shapes[i].n, shapes[i].k, shapes[i].ta, shapes[i].tb,
               r.calls, r.best_seconds, r.best_gflops, r.median_gflops);
    }
    printf("]}\n");
    return 0;
}
