/* gpu_activation.c — activations on the CUDA backend, all in the backend's
 * own kernels (gpu_kernels.cu) with the CPU backend's formulas
 * (gpu_math.h, checked on the host by test_gpu_host):
 * - relu, sigmoid and tanh, forward and backward. cuDNN 9 deprecates both
 *   cudnnActivationForward and cudnnActivationBackward, and the latter
 *   takes the input x, which the seam does not keep (backend.h defines the
 *   derivative from the output y); element-wise kernels also need no int
 *   chunking of long lengths and allow every in-place use the seam
 *   permits (x == y forward, dx == dy backward when not accumulating).
 * - softmax per row: cuDNN does not document in-place softmax, which dense
 *   layers rely on. */
#include "gpu/gpu_activation.h"

#include "gpu/gpu_ctx.h"
#include "gpu/gpu_kernels.h"
#include "gpu/gpu_ops.h"

/* The kernel's name for an element-wise activation. */
static int gpu_act_kind_of(spec_activation act)
{
    switch (act) {
    case ACT_RELU:
        return GPU_ACT_RELU;
    case ACT_SIGMOID:
        return GPU_ACT_SIGMOID;
    case ACT_TANH:
        return GPU_ACT_TANH;
    case ACT_NONE:
    case ACT_SOFTMAX:
    case ACT_GELU:       /* no gelu ops on CUDA yet: layers refuse it */
    case ACT_GELU_EXACT:
        break;
    }
    return -1;
}

void gpu_activation_forward(backend *be, spec_activation act, long rows, long cols,
                            const float *x, float *y)
{
    gpu_ctx *g = gpu_ctx_of(be);
    long n = rows * cols;
    if (n <= 0)
        return;
    if (act == ACT_NONE) {
        if (x != y)
            GPU_MUST(cudaMemcpyAsync(y, x, (size_t)n * sizeof *y, cudaMemcpyDeviceToDevice,
                                     g->stream));
        return;
    }
    if (act == ACT_SOFTMAX) {
        GPU_MUST(gpu_k_softmax_forward(g->stream, rows, cols, x, y));
        return;
    }
    GPU_MUST(gpu_k_act_forward(g->stream, gpu_act_kind_of(act), n, x, y));
}

void gpu_activation_backward(backend *be, spec_activation act, long rows, long cols,
                             const float *y, const float *dy, float *dx, bool accumulate)
{
    gpu_ctx *g = gpu_ctx_of(be);
    long n = rows * cols;
    if (n <= 0)
        return;
    if (act == ACT_NONE) {
        const float one = 1.0f;
        if (accumulate)
            GPU_MUST(cublasSaxpy_64(g->blas, n, &one, dy, 1, dx, 1));
        else if (dx != dy)
            GPU_MUST(cudaMemcpyAsync(dx, dy, (size_t)n * sizeof *dx, cudaMemcpyDeviceToDevice,
                                     g->stream));
        return;
    }
    if (act == ACT_SOFTMAX) {
        GPU_MUST(gpu_k_softmax_backward(g->stream, rows, cols, y, dy, dx, accumulate));
        return;
    }
    GPU_MUST(gpu_k_act_backward(g->stream, gpu_act_kind_of(act), n, y, dy, dx, accumulate));
}

/* Sets this file's ops of backend.h on be. */
void gpu_activation_register(backend *be)
{
    be->activation_forward = gpu_activation_forward;
    be->activation_backward = gpu_activation_backward;
}
