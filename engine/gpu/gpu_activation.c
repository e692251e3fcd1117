/* gpu_activation.c — activations on the CUDA backend: relu, sigmoid and
 * tanh through cuDNN, whose documentation allows the in-place use the seam
 * permits (x == y forward, dx == dy backward). Softmax uses the backend's
 * own row kernel instead: cuDNN does not document in-place softmax, which
 * dense layers rely on, and the kernel computes the CPU backend's formula
 * (gpu_math.h), checked on the host by test_gpu_host. */
#include "gpu/gpu_backend.h"
#include "gpu/gpu_kernels.h"

/* Element-wise ops see the data as (1, 1, 1, len) chunks: cuDNN's
 * dimensions are ints, our lengths are longs. */
#define GPU_ACT_CHUNK (1L << 30)

static cudnnActivationDescriptor_t gpu_act_desc(gpu_ctx *g, spec_activation act)
{
    switch (act) {
    case ACT_RELU:
        return g->act[0];
    case ACT_SIGMOID:
        return g->act[1];
    case ACT_TANH:
        return g->act[2];
    case ACT_NONE:
    case ACT_SOFTMAX:
        break;
    }
    return NULL;
}

/* g->view set to the chunk of the n values that starts at off. */
static void gpu_act_view(gpu_ctx *g, long n, long off)
{
    long len = n - off < GPU_ACT_CHUNK ? n - off : GPU_ACT_CHUNK;
    if (!gpu_tensor_4d(g->view, 1, 1, 1, len))
        gpu_check_fatal();
}

void gpu_activation_forward(backend *be, spec_activation act, long rows, long cols,
                            const float *x, float *y)
{
    gpu_ctx *g = gpu_ctx_of(be);
    long n = rows * cols;
    if (n <= 0)
        return;
    const float one = 1.0f, zero = 0.0f;
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
    for (long off = 0; off < n; off += GPU_ACT_CHUNK) {
        gpu_act_view(g, n, off);
        GPU_MUST(cudnnActivationForward(g->dnn, gpu_act_desc(g, act), &one, g->view, x + off,
                                        &zero, g->view, y + off));
    }
}

/* backend.h defines the derivative from the forward output y alone; cuDNN
 * also takes the input x. For sigmoid and tanh it uses y; for relu, x > 0
 * exactly when y > 0, so y stands in for x in every case. */
void gpu_activation_backward(backend *be, spec_activation act, long rows, long cols,
                             const float *y, const float *dy, float *dx, bool accumulate)
{
    gpu_ctx *g = gpu_ctx_of(be);
    long n = rows * cols;
    if (n <= 0)
        return;
    const float one = 1.0f, beta = accumulate ? 1.0f : 0.0f;
    if (act == ACT_NONE) {
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
    for (long off = 0; off < n; off += GPU_ACT_CHUNK) {
        gpu_act_view(g, n, off);
        GPU_MUST(cudnnActivationBackward(g->dnn, gpu_act_desc(g, act), &one, g->view, y + off,
                                         g->view, dy + off, g->view, y + off, &beta, g->view,
                                         dx + off));
    }
}
