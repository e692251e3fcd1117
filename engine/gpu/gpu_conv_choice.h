/* gpu_conv_choice.h — which cuDNN algorithm a convolution runs in each
 * direction, and for which batch sizes its workspace has been checked. In
 * plain C over records copied from cuDNN's perf results, so the rules are
 * unit-tested without a GPU (tests/gpu/test_gpu_conv_choice.c); gpu_conv.c
 * does the cuDNN calls.
 *
 * Reproducibility: the seam promises bit-identical reruns (backend.h)
 * unless the job turns that off (training.deterministic false, PyTorch's
 * default behaviour), so only deterministic algorithms are taken while one
 * is usable; a non-deterministic one only when cuDNN offers no
 * deterministic one, and the choice says so (the run is then reported as
 * not reproducible, history.json's "reproducible"). Math: FP32 FMA only,
 * never TF32 or other tensor-op conversion, so results stay comparable with
 * the CPU reference. cuDNN 9 may report an FP32 FMA algorithm as
 * DEFAULT_MATH, so DEFAULT and FMA are both accepted (FMA first); the
 * convolution descriptor itself is set to FMA math, which keeps tensor
 * cores out whatever the record says.
 *
 * Workspace: cuDNN's need can change with the batch size, and a call may
 * use any batch in [1, max_batch] (the last batch of an epoch, of an
 * evaluation, of a rank's share is short). Rather than query every size at
 * prepare (3 x max_batch queries per layer), prepare queries max_batch and
 * sizes the workspace for it; each other size is checked once, the first
 * time it occurs, and remembered. A size whose need exceeds the workspace
 * the layer owns (cuDNN does not promise the need grows with the batch)
 * gets algorithms of its own, chosen by the same rules under that cap. */
#ifndef PUNCH_GPU_CONV_CHOICE_H
#define PUNCH_GPU_CONV_CHOICE_H

#include <stdbool.h>
#include <stddef.h>

/* cuDNN's cudnnMathType_t, mirrored so this file needs no CUDA header. */
typedef enum gpu_math {
    GPU_MATH_DEFAULT,
    GPU_MATH_FMA,
    GPU_MATH_TENSOR_OP,
    GPU_MATH_TENSOR_OP_ALLOW_CONVERSION,
} gpu_math;

/* One heuristic result (cudnnConvolution*AlgoPerf_t). */
typedef struct gpu_algo_perf {
    int algo;               /* cuDNN's algorithm enum value */
    bool ok;                /* status == CUDNN_STATUS_SUCCESS */
    bool deterministic;     /* determinism == CUDNN_DETERMINISTIC */
    gpu_math math;
    size_t memory;          /* workspace bytes at the queried batch */
} gpu_algo_perf;

/* The record to run among perf[0..n) (cuDNN's order, fastest first): the
 * first that succeeded, fits in cap bytes and uses DEFAULT or FMA math,
 * taking in turn deterministic FMA, deterministic DEFAULT, and only when
 * none of those exists non-deterministic FMA, then DEFAULT. With
 * any_determinism (the job's training.deterministic false) determinism
 * does not matter: the first FMA, then the first DEFAULT. Its index, with
 * *deterministic saying which kind it is; -1 when none is usable. */
int gpu_conv_algo_pick(const gpu_algo_perf *perf, int n, size_t cap, bool any_determinism,
                       bool *deterministic);

/* The three directions of a convolution. */
typedef enum gpu_conv_dir {
    GPU_CONV_FWD,
    GPU_CONV_BWD_DATA,
    GPU_CONV_BWD_FILTER,
    GPU_CONV_DIRS,
} gpu_conv_dir;

/* Algorithms of the three directions, as cuDNN enum values. */
typedef struct gpu_conv_algos {
    int algo[GPU_CONV_DIRS];
    bool deterministic[GPU_CONV_DIRS];
} gpu_conv_algos;

/* True when all three are deterministic. */
bool gpu_conv_algos_deterministic(const gpu_conv_algos *a);

/* What gpu_conv_batches_get asks the caller (gpu_conv.c: cuDNN) for a batch
 * size it has not seen. need(): the workspace bytes `algos` need at
 * `batch`, the largest over the three directions. pick(): algorithms for
 * `batch` whose workspace fits in cap bytes (gpu_conv_algo_pick on cuDNN's
 * heuristics at that batch). Both false on failure, message recorded by
 * the caller. */
typedef struct gpu_conv_probe {
    bool (*need)(void *ctx, int batch, const gpu_conv_algos *algos, size_t *bytes);
    bool (*pick)(void *ctx, int batch, size_t cap, gpu_conv_algos *out);
    void *ctx;
} gpu_conv_probe;

/* Per batch size 1..max_batch: not yet checked, checked and run with the
 * layer's algorithms, or run with algorithms of its own. */
typedef struct gpu_conv_batches {
    int max_batch;
    size_t cap;                 /* workspace bytes the layer owns */
    gpu_conv_algos shared;      /* chosen at prepare, for max_batch */
    struct gpu_conv_batch_entry {
        unsigned char state;    /* GPU_BATCH_* in gpu_conv_choice.c */
        gpu_conv_algos own;
    } *entry;                   /* max_batch + 1 entries, [0] unused */
} gpu_conv_batches;

/* Allocates the table (all at prepare, so a training step allocates
 * nothing) with max_batch checked and run with `shared` in `cap` bytes.
 * False when out of memory or max_batch < 1. */
bool gpu_conv_batches_init(gpu_conv_batches *t, int max_batch, const gpu_conv_algos *shared,
                           size_t cap);
void gpu_conv_batches_free(gpu_conv_batches *t);

/* The algorithms for `batch` (in [1, max_batch]). The first time a size
 * occurs it is checked with probe->need (one query per direction); when the
 * layer's algorithms need more than cap there, probe->pick chooses its own.
 * *fresh is true when this call chose new algorithms (for the log). NULL
 * when a probe fails or no algorithm fits. */
const gpu_conv_algos *gpu_conv_batches_get(gpu_conv_batches *t, int batch,
                                           const gpu_conv_probe *probe, bool *fresh);

#endif
