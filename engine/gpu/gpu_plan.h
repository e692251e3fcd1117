/* gpu_plan.h — shape and workspace computations of the CUDA backend's
 * convolution, pooling and batch normalisation, in plain C so they are
 * unit-tested without a GPU.
 *
 * Why a plan: cuDNN pads symmetrically only, while a layer may pad one more
 * at the bottom/right (TensorFlow's "same" with an even kernel). Such a
 * convolution pads its input explicitly into the workspace and lets cuDNN
 * run unpadded; its input gradient comes back padded and is cropped. The
 * plan says which path a layer takes and where each buffer lives in the
 * one workspace the model allocates at build time. */
#ifndef PUNCH_GPU_PLAN_H
#define PUNCH_GPU_PLAN_H

#include <stdbool.h>
#include <stddef.h>

#include "backend/backend.h"

/* Workspace pieces start on 256-byte boundaries (cuDNN's alignment). */
#define GPU_PLAN_ALIGN_FLOATS 64L

typedef struct gpu_conv_plan {
    bool explicit_pad;     /* asymmetric padding: pad in the workspace */
    int pad_h, pad_w;      /* the symmetric padding cuDNN applies */
    int in_h, in_w;        /* input height and width as cuDNN sees them */
    long padded_floats;    /* one padded input at max_batch (0 if !explicit_pad) */
    long cudnn_floats;     /* cuDNN's own workspace, rounded up */
    long off_xpad;         /* padded x, in floats from the workspace start */
    long off_dxpad;        /* padded dx */
    long workspace_floats; /* total */
} gpu_conv_plan;

/* Validates d (positive sizes, oh/ow consistent with the formula in
 * backend.h) and fills the geometry part of p. False + message otherwise. */
bool gpu_conv_plan_geometry(const conv2d_desc *d, gpu_conv_plan *p, char *err, size_t errlen);
/* Lays out the workspace once cuDNN's need (bytes, the largest over the
 * algorithms chosen) is known. False when the total overflows. */
bool gpu_conv_plan_workspace(gpu_conv_plan *p, size_t cudnn_bytes, char *err, size_t errlen);

typedef struct gpu_pool_plan {
    bool use_cudnn;        /* symmetric padding smaller than the window */
    int pad_h, pad_w;      /* cuDNN's padding when use_cudnn */
} gpu_pool_plan;

/* Validates d (oh/ow = (h + pads - k) / stride + 1) and picks the path:
 * cuDNN when its symmetric padding reproduces d, else the backend's own
 * kernel. */
bool gpu_pool_plan_build(const pool2d_desc *d, gpu_pool_plan *p, char *err, size_t errlen);

/* Workspace of batchnorm_backward: cuDNN always writes an input gradient,
 * so a call with dx == NULL needs a scratch one (max_batch * c * spatial).
 * -1 when the size overflows a long or is not positive. */
long gpu_batchnorm_workspace(const batchnorm_desc *d);

/* bytes rounded up to whole, aligned floats. */
long gpu_plan_floats(size_t bytes);

#endif
