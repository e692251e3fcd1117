/* cpu_conv_dnnl.h — convolution in oneDNN's convolution primitives
 * (forward, backward data, backward weights), for builds with oneDNN
 * (PUNCH_HAVE_DNNL). Threads as everywhere in the backend: each pool
 * thread runs the primitives on its own chunk of samples (minibatch =
 * chunk) with an OpenMP team of one, and writes its own partial dw/db,
 * which cpu_conv.c sums in thread order. The primitives are created for
 * each chunk size that occurs (the last batch of an epoch is short) and
 * kept until the layer is released. See cpu_conv_dnnl.c for the formats
 * and the measurements behind cpu_conv_dnnl_suits. */
#ifndef PUNCH_CPU_CONV_DNNL_H
#define PUNCH_CPU_CONV_DNNL_H

#include <stdbool.h>

#include "cpu/cpu_conv.h"

typedef struct cpu_conv_dnnl cpu_conv_dnnl;

/* Whether oneDNN's convolution beats the engine's own on d (a rule on the
 * shape, so the choice is deterministic). */
bool cpu_conv_dnnl_suits(const conv2d_desc *d);

/* The layer's state for d run on `threads` threads, with the primitives
 * for the largest chunk created. Its first member is a cpu_conv_algo
 * (CPU_CONV_DNNL), so it can stand where cpu_conv.c keeps a layer's
 * algorithm. bf16: the primitives read bf16 activations, weights and
 * output gradients (converted by their reorders) and write fp32. NULL when
 * oneDNN cannot run d (in bf16: has no bf16 kernel for it). */
cpu_conv_dnnl *cpu_conv_dnnl_create(const conv2d_desc *d, int threads, bool bf16);
/* Whether s runs in bf16. */
bool cpu_conv_dnnl_is_bf16(const cpu_conv_dnnl *s);
void cpu_conv_dnnl_destroy(cpu_conv_dnnl *s);

/* Floats of workspace s needs per thread: at least `least` (so the caller
 * can run another algorithm in it when oneDNN fails), rounded so that
 * thread blocks of this plus `after` floats keep 64-byte alignment. */
long cpu_conv_dnnl_thread_floats(const cpu_conv_dnnl *s, long least, long after);
/* Floats of workspace s needs once, shared by the threads. */
long cpu_conv_dnnl_shared_floats(const cpu_conv_dnnl *s);

/* Creates, on the calling thread, whatever primitives the chunks of a
 * `batch` split over the threads need (backward ones too when backward,
 * the forward with ReLU fused when act is ReLU).
 * False when oneDNN fails or the workspace would not hold them; the
 * caller then runs its own algorithm. */
bool cpu_conv_dnnl_ready(cpu_conv_dnnl *s, int batch, bool backward, spec_activation act);

/* The weights in the format forward (or, when backward, backward data)
 * reads, into `shared` (the shared_floats of the workspace), before the
 * chunks run. */
bool cpu_conv_dnnl_weights(cpu_conv_dnnl *s, const float *w, bool backward, float *shared);

/* y = act(conv(x, w) + bias) for n samples (a chunk that
 * cpu_conv_dnnl_ready saw); scratch: this thread's thread_floats. False
 * when oneDNN failed; the caller then runs its own algorithm. */
bool cpu_conv_dnnl_forward(cpu_conv_dnnl *s, int tid, int n, const float *x,
                           const float *w, const float *shared, const float *bias,
                           spec_activation act, float *y, float *scratch);

/* dw, db = this chunk's weight and bias gradients (overwritten), and
 * dx (+)= its input gradient when dx is not NULL. False as forward. */
bool cpu_conv_dnnl_backward(cpu_conv_dnnl *s, int tid, int n, const float *x,
                            const float *w, const float *shared, const float *dz,
                            float *dx, bool accumulate, float *dw, float *db,
                            float *scratch);

/* Let oneDNN pick blocked formats (false, the default) or make it run on
 * the engine's plain NCHW/OIHW tensors directly (true). Process-wide; for
 * benchmarks comparing the two; set it before layers are prepared. */
void cpu_conv_dnnl_force_plain(bool on);

#endif
