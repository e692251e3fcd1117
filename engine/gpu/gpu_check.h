/* gpu_check.h — the one way every CUDA, cuBLAS, cuDNN and NCCL call is
 * checked. GPU_CHECK(call) evaluates the call, and on failure records
 * "<call text> failed at <file>:<line>: <library's message>" and yields
 * false; GPU_MUST(call) is the same check for ops that cannot return an
 * error (the backend's void functions): the message goes to stderr and the
 * process exits, because a step whose kernels failed cannot be trusted.
 *
 * The status type picks the library (_Generic), so one macro serves all
 * four. With PUNCH_GPU_SYNC=1 (gpu_debug.h) a call that succeeded is
 * followed by a device synchronisation and cudaGetLastError(), so a fault
 * inside a kernel is reported at the launcher's GPU_MUST, not at a later
 * wait. GPU_TEARDOWN(call) is for release paths: a failure is logged to
 * stderr and the release goes on. C only: the kernels (gpu_kernels.cu)
 * return their launch status to C callers, which check it here. */
#ifndef PUNCH_GPU_CHECK_H
#define PUNCH_GPU_CHECK_H

#include <stdbool.h>
#include <stddef.h>

#include <cublas_v2.h>
#include <cuda_runtime.h>
#include <cudnn.h>
#include <nccl.h>

/* Records a failed call (the message read back by gpu_check_message()). */
void gpu_check_failed(const char *lib_message, const char *call, const char *file, int line);
/* The last failure's message ("" when none), per thread. */
const char *gpu_check_message(void);
/* Prints the last failure as "punch-train: cuda: ..." and exits(1). */
void gpu_check_fatal(void);
/* When !ok, prints the last failure as "punch-train: cuda: <when>: ...";
 * returns ok. */
bool gpu_check_report(bool ok, const char *when);
/* Marks the calling thread as having a current device (after
 * cudaSetDevice): PUNCH_GPU_SYNC synchronises only on such threads, so it
 * never creates a context on device 0 before the device is chosen. */
void gpu_check_arm(void);

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

#define GPU_CHECK(call) gpu_check_status((call), #call, __FILE__, __LINE__)
#define GPU_TEARDOWN(call) ((void)gpu_check_report(GPU_CHECK(call), "teardown"))
#define GPU_MUST(call)               \
    do {                             \
        if (!GPU_CHECK(call))        \
            gpu_check_fatal();       \
    } while (0)

#endif
