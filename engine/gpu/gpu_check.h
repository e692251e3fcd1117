/* gpu_check.h — the one way every CUDA, cuBLAS, cuDNN and NCCL call is
 * checked. GPU_CHECK(call) evaluates the call, and on failure records
 * "<call text> failed at <file>:<line>: <library's message>" and yields
 * false; GPU_MUST(call) is the same check for ops that cannot return an
 * error (the backend's void functions): the message goes to stderr and the
 * process exits, because a step whose kernels failed cannot be trusted.
 *
 * The status type picks the library (_Generic in C, overloads in CUDA
 * C++), so one macro serves all four. */
#ifndef PUNCH_GPU_CHECK_H
#define PUNCH_GPU_CHECK_H

#include <stdbool.h>
#include <stddef.h>

#include <cuda_runtime.h>

#ifndef __CUDACC__
#include <cublas_v2.h>
#include <cudnn.h>
#include <nccl.h>
#endif

#ifdef __cplusplus
extern "C" {
#endif

/* Records a failed call (the message read back by gpu_check_message()). */
void gpu_check_failed(const char *lib_message, const char *call, const char *file, int line);
/* The last failure's message ("" when none), per thread. */
const char *gpu_check_message(void);
/* Prints the last failure as "punch-train: cuda: ..." and exits(1). */
void gpu_check_fatal(void);

#ifdef __cplusplus
}
#endif

#ifdef __cplusplus
static inline bool gpu_check_status(cudaError_t s, const char *call, const char *file, int line)
{
    if (s == cudaSuccess)
        return true;
    gpu_check_failed(cudaGetErrorString(s), call, file, line);
    return false;
}
#else
bool gpu_check_cuda(cudaError_t s, const char *call, const char *file, int line);
bool gpu_check_cublas(cublasStatus_t s, const char *call, const char *file, int line);
bool gpu_check_cudnn(cudnnStatus_t s, const char *call, const char *file, int line);
bool gpu_check_nccl(ncclResult_t s, const char *call, const char *file, int line);
#define gpu_check_status(s, call, file, line)          \
    _Generic((s),                                      \
             cudaError_t: gpu_check_cuda,              \
             cublasStatus_t: gpu_check_cublas,         \
             cudnnStatus_t: gpu_check_cudnn,           \
             ncclResult_t: gpu_check_nccl)(s, call, file, line)
#endif

#define GPU_CHECK(call) gpu_check_status((call), #call, __FILE__, __LINE__)
#define GPU_MUST(call)               \
    do {                             \
        if (!GPU_CHECK(call))        \
            gpu_check_fatal();       \
    } while (0)

#endif
