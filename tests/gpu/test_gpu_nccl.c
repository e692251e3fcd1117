/* test_gpu_nccl.c — NCCL gradient reduction across ranks, one GPU each:
 * whole-buffer mean and sum, and bucketed means with layers reported in
 * backward order and out of order (buckets must still launch in plan order
 * on every rank). Run under mpirun by nccl_two_ranks.sh; `--probe` (no MPI)
 * exits 77 with the reason when fewer than two devices are usable, as NCCL
 * cannot put two ranks on one GPU. */
#include <math.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <mpi.h>

#include "gpu/gpu.h"

enum { LAYERS = 5 };
static const long counts[LAYERS] = {3000, 0, 17, 5000, 1999};

/* Fills the buffer with this rank's values and returns the total. */
static long fill(backend *be, float *dev, float *host, int rank)
{
    long n = 0;
    for (int l = 0; l < LAYERS; l++)
        n += counts[l];
    for (long i = 0; i < n; i++)
        host[i] = (float)rank + 0.001f * (float)(i % 1000);
    be->upload(be, dev, host, n);
    return n;
}

/* Every element must be the mean (or the sum) over ranks. */
static int check(backend *be, const float *dev, float *host, long n, int ranks, bool sum,
                 const char *what)
{
    be->download(be, host, dev, n);
    for (long i = 0; i < n; i++) {
        float want = (float)(ranks - 1) / 2.0f + 0.001f * (float)(i % 1000);
        if (sum)
            want *= (float)ranks;
        if (fabsf(host[i] - want) > 1e-5f) {
            fprintf(stderr, "%s: element %ld is %g, expected %g\n", what, i, host[i], want);
            return 1;
        }
    }
    return 0;
}

int main(int argc, char **argv)
{
    char err[256];
    if (argc > 1 && strcmp(argv[1], "--probe") == 0) {
        int count = gpu_device_count(err, sizeof err);
        if (count < 2) {
            printf("SKIP: NCCL across two ranks needs two CUDA devices: %s\n",
                   count == 1 ? "only one is visible" : err);
            return 77;
        }
        return 0;
    }
    MPI_Init(&argc, &argv);
    int rank, ranks;
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &ranks);
    backend *be = gpu_backend_open(err, sizeof err);
    if (!be) {
        fprintf(stderr, "rank %d: %s\n", rank, err);
        MPI_Abort(MPI_COMM_WORLD, 1);
    }
    gpu_comm *comm = gpu_comm_create(be, MPI_COMM_WORLD, err, sizeof err);
    if (!comm) {
        fprintf(stderr, "rank %d: %s\n", rank, err);
        MPI_Abort(MPI_COMM_WORLD, 1);
    }
    gpu_param_span spans[LAYERS];
    long off = 0;
    for (int l = 0; l < LAYERS; l++) {
        spans[l] = (gpu_param_span){off, counts[l]};
        off += counts[l];
    }
    float *dev = be->alloc(be, off), *host = malloc((size_t)off * sizeof *host);
    gpu_bucket_plan plan;
    if (!dev || !host || !gpu_bucket_plan_build(spans, LAYERS, 4096, &plan, err, sizeof err)) {
        fprintf(stderr, "rank %d: setup failed %s\n", rank, err);
        MPI_Abort(MPI_COMM_WORLD, 1);
    }
    int failures = 0;
    long n = fill(be, dev, host, rank);
    gpu_comm_allreduce(comm, dev, n, GPU_REDUCE_MEAN);
    failures += check(be, dev, host, n, ranks, false, "allreduce mean");

    fill(be, dev, host, rank);
    gpu_comm_allreduce(comm, dev, n, GPU_REDUCE_SUM);
    failures += check(be, dev, host, n, ranks, true, "allreduce sum");

    fill(be, dev, host, rank);
    gpu_comm_begin(comm, &plan, dev, GPU_REDUCE_MEAN);
    for (int l = LAYERS - 1; l >= 0; l--)
        gpu_comm_layer_done(comm, l);
    gpu_comm_end(comm);
    failures += check(be, dev, host, n, ranks, false, "bucketed, backward order");

    fill(be, dev, host, rank);
    gpu_comm_begin(comm, &plan, dev, GPU_REDUCE_SUM);
    for (int l = 0; l < LAYERS; l++)
        gpu_comm_layer_done(comm, l);
    gpu_comm_end(comm);
    failures += check(be, dev, host, n, ranks, true, "bucketed sum, forward order");

    int total = 0;
    MPI_Allreduce(&failures, &total, 1, MPI_INT, MPI_SUM, MPI_COMM_WORLD);
    if (rank == 0)
        printf("%s: %d ranks, %d buckets, %ld floats\n", total ? "FAIL" : "ok", ranks,
               plan.n_buckets, n);
    gpu_bucket_plan_free(&plan);
    free(host);
    be->free(be, dev);
    gpu_comm_free(comm);
    be->destroy(be);
    MPI_Finalize();
    return total ? 1 : 0;
}
