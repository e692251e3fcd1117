/* gpu_check.c — formatting and reporting of failed GPU library calls, and
 * the PUNCH_GPU_SYNC check after each call; see gpu_check.h. */
#include "gpu/gpu_check.h"

#include <stdio.h>
#include <stdlib.h>

#include "gpu/gpu_debug.h"

static _Thread_local char gpu_check_last[512];
/* Set on a thread once it has a current device: only then may a check
 * synchronise, since synchronising earlier would create a context on
 * device 0 for every rank. */
static _Thread_local bool gpu_check_armed;

void gpu_check_failed(const char *lib_message, const char *call, const char *file, int line)
{
    snprintf(gpu_check_last, sizeof gpu_check_last, "%s failed at %s:%d: %s", call, file, line,
             lib_message ? lib_message : "unknown error");
}

const char *gpu_check_message(void)
{
    return gpu_check_last;
}

void gpu_check_fatal(void)
{
    fprintf(stderr, "punch-train: cuda: %s\n", gpu_check_last);
    exit(EXIT_FAILURE);
}

bool gpu_check_report(bool ok, const char *when)
{
    if (!ok)
        fprintf(stderr, "punch-train: cuda: %s: %s\n", when, gpu_check_last);
    return ok;
}

void gpu_check_arm(void)
{
    gpu_check_armed = true;
}

/* After a call that succeeded: with PUNCH_GPU_SYNC, wait for the device
 * and collect any error its queued work raised, naming this call. */
static bool gpu_check_after(const char *call, const char *file, int line)
{
    if (!gpu_check_armed || !gpu_debug_sync())
        return true;
    cudaError_t s = cudaDeviceSynchronize();
    if (s == cudaSuccess)
        s = cudaGetLastError();
    if (s == cudaSuccess)
        return true;
    char msg[256];
    snprintf(msg, sizeof msg, "%s (found by " GPU_SYNC_ENV " synchronising after this call)",
             cudaGetErrorString(s));
    gpu_check_failed(msg, call, file, line);
    return false;
}

bool gpu_check_cuda(cudaError_t s, const char *call, const char *file, int line)
{
    if (s == cudaSuccess)
        return gpu_check_after(call, file, line);
    gpu_check_failed(cudaGetErrorString(s), call, file, line);
    return false;
}

bool gpu_check_cublas(cublasStatus_t s, const char *call, const char *file, int line)
{
    if (s == CUBLAS_STATUS_SUCCESS)
        return gpu_check_after(call, file, line);
    gpu_check_failed(cublasGetStatusString(s), call, file, line);
    return false;
}

bool gpu_check_cudnn(cudnnStatus_t s, const char *call, const char *file, int line)
{
    if (s == CUDNN_STATUS_SUCCESS)
        return gpu_check_after(call, file, line);
    gpu_check_failed(cudnnGetErrorString(s), call, file, line);
    return false;
}

bool gpu_check_nccl(ncclResult_t s, const char *call, const char *file, int line)
{
    if (s == ncclSuccess)
        return gpu_check_after(call, file, line);
    gpu_check_failed(ncclGetErrorString(s), call, file, line);
    return false;
}
