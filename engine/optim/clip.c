/* clip.c — global gradient-norm clipping (training.clip_norm), as
 * torch.nn.utils.clip_grad_norm_ over every parameter at once. The norm is
 * summed in double in index order, so every process holding the same
 * gradient computes the same scale and applies the same bits. Unlike
 * PyTorch, the scale is max_norm / norm without a 1e-6 guard, so the
 * clipped norm is max_norm to float rounding. */
#include <math.h>

#include "optim/optim.h"

double optim_grad_norm(const float *g, long n)
{
    double sum = 0.0;
    for (long i = 0; i < n; i++)
        sum += (double)g[i] * (double)g[i];
    return sqrt(sum);
}

double optim_clip_norm(float *g, long n, double max_norm)
{
    /* Off: g is not even read (it may be device memory then). */
    if (!(max_norm > 0.0))
        return 0.0;
    double norm = optim_grad_norm(g, n);
    if (!(norm > max_norm))
        return norm;
    float scale = (float)(max_norm / norm);
    for (long i = 0; i < n; i++)
        g[i] *= scale;
    return norm;
}
