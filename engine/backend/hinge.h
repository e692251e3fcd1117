/* hinge.h — one row of the categorical hinge loss (backend.h's
 * categorical_hinge, Keras's and PyDTNN's formula) and its gradient, the
 * one formula both backends run: cpu/cpu_hinge.c on the host and
 * gpu/gpu_hinge.cu in a CUDA kernel (compiled by nvcc as device code, by
 * the C compiler as plain C). test_gpu_vs_cpu checks the two compilations
 * against each other on a device. */
#ifndef PUNCH_BACKEND_HINGE_H
#define PUNCH_BACKEND_HINGE_H

#ifdef __CUDACC__
#define HINGE_HD __host__ __device__
#else
#define HINGE_HD
#endif

/* Products and sums the device must not fuse into an FMA the CPU does not
 * do: rounded explicitly in device code, plain operations on the host. */
#ifdef __CUDA_ARCH__
#define HINGE_FMUL(a, b) __fmul_rn((a), (b))
#define HINGE_DMUL(a, b) __dmul_rn((a), (b))
#define HINGE_DADD(a, b) __dadd_rn((a), (b))
#else
#define HINGE_FMUL(a, b) ((a) * (b))
#define HINGE_DMUL(a, b) ((a) * (b))
#define HINGE_DADD(a, b) ((a) + (b))
#endif

/* One row of backend.h's categorical_hinge: returns the row's loss and
 * writes its gradient, divided by the batch, to d. The subgradient at the kink
 * (loss exactly 0) is 0; a tie for the largest wrong score goes to the
 * first column. */
HINGE_HD static inline double hinge_row(int n, float inv_batch, const float *y,
                                        const float *t, float *d)
{
    double pos = 0.0;
    for (int j = 0; j < n; j++)
        pos = HINGE_DADD(pos, HINGE_DMUL((double)t[j], (double)y[j]));
    int k = 0;
    float neg = HINGE_FMUL(1.0f - t[0], y[0]);
    for (int j = 1; j < n; j++) {
        float v = HINGE_FMUL(1.0f - t[j], y[j]);
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
        d[j] = HINGE_FMUL(g, inv_batch);
    }
    return margin;
}

#endif
