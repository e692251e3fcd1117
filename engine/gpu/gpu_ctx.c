/* gpu_ctx.c — the tensor descriptor helper of gpu_ctx.h, shared by the
 * cuDNN op files. */
#include "gpu/gpu_ctx.h"

#include <limits.h>

bool gpu_tensor_4d(cudnnTensorDescriptor_t t, long n, long c, long h, long w)
{
    if (n <= 0 || c <= 0 || h <= 0 || w <= 0 || n > INT_MAX || c > INT_MAX || h > INT_MAX ||
        w > INT_MAX || n * c > INT_MAX / h / w) {
        gpu_check_failed("tensor larger than cuDNN's 2^31 elements", "gpu_tensor_4d",
                         __FILE__, __LINE__);
        return false;
    }
    return GPU_CHECK(cudnnSetTensor4dDescriptor(t, CUDNN_TENSOR_NCHW, CUDNN_DATA_FLOAT, (int)n,
                                                (int)c, (int)h, (int)w));
}
