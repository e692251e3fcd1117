/* gpu_check.c — formatting and reporting of failed GPU library calls; see
 * gpu_check.h. */
#include "gpu/gpu_check.h"

#include <stdio.h>
#include <stdlib.h>

static _Thread_local char gpu_check_last[512];

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

bool gpu_check_cuda(cudaError_t s, const char *call, const char *file, int line)
{
    if (s == cudaSuccess)
        return true;
    gpu_check_failed(cudaGetErrorString(s), call, file, line);
    return false;
}

bool gpu_check_cublas(cublasStatus_t s, const char *call, const char *file, int line)
{
    if (s == CUBLAS_STATUS_SUCCESS)
        return true;
    gpu_check_failed(cublasGetStatusString(s), call, file, line);
    return false;
}

bool gpu_check_cudnn(cudnnStatus_t s, const char *call, const char *file, int line)
{
    if (s == CUDNN_STATUS_SUCCESS)
        return true;
    gpu_check_failed(cudnnGetErrorString(s), call, file, line);
    return false;
}

bool gpu_check_nccl(ncclResult_t s, const char *call, const char *file, int line)
{
    if (s == ncclSuccess)
        return true;
    gpu_check_failed(ncclGetErrorString(s), call, file, line);
    return false;
}
