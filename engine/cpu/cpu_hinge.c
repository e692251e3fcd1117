/* cpu_hinge.c — the categorical hinge loss of backend.h (Keras's and
 * PyDTNN's categorical_hinge) and its gradient. This is the reference
 * that gpu/gpu_hinge.cu repeats row for row (test_gpu_vs_cpu checks one
 * against the other), so the two keep the same operations in the same
 * order; change both together. */
#include "cpu/cpu_backend.h"

/* One row: its loss, and its gradient (already divided by the batch) in d.
 * The subgradient at the hinge's kink (loss exactly 0) is 0, and a tie
 * for neg goes to the first column, so the result never depends on
 * anything but the row. */
static double hinge_row(int n, float inv_batch, const float *y, /* (n) */
                        const float *t,                        /* (n) */
                        float *d)                              /* (n) out */
{
    double pos = 0.0;
    for (int j = 0; j < n; j++)
        pos += (double)t[j] * (double)y[j];
    int k = 0;
    float neg = (1.0f - t[0]) * y[0];
    for (int j = 1; j < n; j++) {
        float v = (1.0f - t[j]) * y[j];
        if (v > neg) {
            neg = v;
            k = j;
        }
    }
    double margin = (double)neg - pos + 1.0;
    if (margin <= 0.0) {
        for (int j = 0; j < n; j++)
            d[j] = 0.0f;
        return 0.0;
    }
    for (int j = 0; j < n; j++) {
        float g = (j == k ? 1.0f - t[j] : 0.0f) - t[j];
        d[j] = g * inv_batch;
    }
    return margin;
}

/* Rows in order on the calling thread: the loss is O(batch * n), far
 * below what a hand-off to the pool would cost. */
double cpu_categorical_hinge(backend *be, int batch, int n, const float *y,
                             const float *targets, float *dy)
{
    (void)be;
    float inv_batch = 1.0f / (float)batch;
    double total = 0.0;
    for (long r = 0; r < batch; r++)
        total += hinge_row(n, inv_batch, y + r * n, targets + r * n, dy + r * n);
    return total;
}
