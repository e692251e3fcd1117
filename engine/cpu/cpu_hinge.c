/* cpu_hinge.c — the categorical hinge loss of backend.h (Keras's and
 * PyDTNN's categorical_hinge) and its gradient. The row formula is
 * backend/hinge.h's, the one the device kernel (gpu_hinge.cu) runs, so
 * the two backends cannot drift apart; test_categorical_hinge
 * checks it against finite differences, test_gpu_vs_cpu the device's
 * compilation of it against this one. */
#include "cpu/cpu_backend.h"
#include "cpu/cpu_ops.h"
#include "backend/hinge.h"

/* Rows in order on the calling thread: the loss is O(batch * n), far
 * below what a hand-off to the pool would cost. */
static double cpu_categorical_hinge(backend *be, int batch, int n, const float *y,
                             const float *targets, float *dy)
{
    (void)be;
    float inv_batch = 1.0f / (float)batch;
    double total = 0.0;
    for (long r = 0; r < batch; r++)
        total += hinge_row(n, inv_batch, y + r * n, targets + r * n, dy + r * n);
    return total;
}

/* Sets this file's ops of backend.h on be. */
void cpu_hinge_register(backend *be)
{
    be->categorical_hinge = cpu_categorical_hinge;
}
