/* gpu_absent.c — the gpu.h entry points in a build without CUDA
 * (-Dcuda=disabled, or no toolkit found): each reports GPU_NO_CUDA_BUILD,
 * so the engine gives the same one-line error wherever a GPU is asked for
 * and callers need no #ifdef. */
#include <stdio.h>
#include <stdlib.h>

#include "gpu/gpu.h"

static void gpu_absent(char *err, size_t errlen)
{
    if (err && errlen)
        snprintf(err, errlen, "%s", GPU_NO_CUDA_BUILD);
}

bool gpu_built(void)
{
    return false;
}

bool gpu_available(char *why, size_t whylen)
{
    gpu_absent(why, whylen);
    return false;
}

int gpu_device_count(char *why, size_t whylen)
{
    gpu_absent(why, whylen);
    return 0;
}

backend *backend_cuda_create(int local_rank, char *err, size_t errlen)
{
    (void)local_rank;
    gpu_absent(err, errlen);
    return NULL;
}

backend *gpu_backend_open(char *err, size_t errlen)
{
    gpu_absent(err, errlen);
    return NULL;
}

gpu_comm *gpu_comm_create(backend *be, MPI_Comm comm, char *err, size_t errlen)
{
    (void)be;
    (void)comm;
    gpu_absent(err, errlen);
    return NULL;
}

/* The functions below take objects only a CUDA build can create; reaching
 * one is a programming error, not a user's. */
static void gpu_absent_abort(const char *fn)
{
    fprintf(stderr, "punch-train: %s called in a build without CUDA\n", fn);
    abort();
}

void gpu_comm_free(gpu_comm *c)
{
    if (c)
        gpu_absent_abort(__func__);
}

void gpu_comm_allreduce(gpu_comm *c, float *buf, long n, gpu_reduce_op op)
{
    (void)c;
    (void)buf;
    (void)n;
    (void)op;
    gpu_absent_abort(__func__);
}

void gpu_comm_begin(gpu_comm *c, const gpu_bucket_plan *plan, float *grads,
                    gpu_reduce_op op)
{
    (void)c;
    (void)plan;
    (void)grads;
    (void)op;
    gpu_absent_abort(__func__);
}

void gpu_comm_layer_done(gpu_comm *c, int layer)
{
    (void)c;
    (void)layer;
    gpu_absent_abort(__func__);
}

void gpu_comm_end(gpu_comm *c)
{
    (void)c;
    gpu_absent_abort(__func__);
}

gpu_optim *gpu_optim_create(backend *be, const spec_optimizer *cfg, long n, char *err,
                            size_t errlen)
{
    (void)be;
    (void)cfg;
    (void)n;
    gpu_absent(err, errlen);
    return NULL;
}

void gpu_optim_free(gpu_optim *o)
{
    if (o)
        gpu_absent_abort(__func__);
}

void gpu_optim_step(gpu_optim *o, float *params, const float *grads, float lr)
{
    (void)o;
    (void)params;
    (void)grads;
    (void)lr;
    gpu_absent_abort(__func__);
}

long gpu_optim_iterations(const gpu_optim *o)
{
    (void)o;
    gpu_absent_abort(__func__);
    return 0;
}

long gpu_optim_state_floats(const gpu_optim *o)
{
    (void)o;
    gpu_absent_abort(__func__);
    return 0;
}

void gpu_optim_state_save(const gpu_optim *o, float *dst)
{
    (void)o;
    (void)dst;
    gpu_absent_abort(__func__);
}

void gpu_optim_state_load(gpu_optim *o, const float *src)
{
    (void)o;
    (void)src;
    gpu_absent_abort(__func__);
}
