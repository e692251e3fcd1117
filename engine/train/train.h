/* train.h — the single-process trainer (distributed.trainer "single"):
 * epochs of shuffled batches, validation, schedules, test evaluation, and
 * the run directory of schema/rundir.md (progress.jsonl, history.json,
 * weights.safetensors, weights.npz, checkpoints/ckpt.bin).
 *
 * Reproducibility: the initial weights come from training.seed, the batch
 * order of epoch e from dataset_epoch_permutation(n, seed, e), and the
 * dropout masks of global step s from (seed, s); the CPU backend's ops
 * depend only on the thread count. So the same seed and threads give
 * bit-identical weights, and a run resumed from checkpoints/ckpt.bin (at
 * an epoch end, or mid-epoch after SIGTERM/SIGINT) reaches the same
 * weights as one that was never interrupted.
 *
 * The other trainers (engine/distributed/) are entered through
 * dist_train(); the step pieces they share are the model's (model/model.h),
 * the rest sits beside this file: options.h, weights.h, checkpoint.h,
 * runlog.h. */
#ifndef PUNCH_TRAIN_H
#define PUNCH_TRAIN_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "backend/backend.h"
#include "model/model.h"
#include "train/runlog.h"
#include "data/dataset.h"
#include "optim/optim.h"
#include "optim/schedule.h"
#include "jobspec/spec.h"

typedef struct train_options {
    const char *out_dir;        /* run directory (created if missing) */
    dataset_roots roots;        /* where dataset names resolve */
    int threads;                /* CPU threads; <= 0: resources.threads_per_worker */
    int local_rank;             /* node-local rank (engine_options): picks the GPU */
    bool resume;                /* continue from out_dir/checkpoints/ckpt.bin */
    const char *weights;        /* evaluate-only: weights file (.safetensors or .npz) */
    bool verbose;               /* one progress line per epoch on stderr */
    /* Called after each training step with the 0-based epoch and the
     * 1-based step just taken, before the trainer looks for SIGTERM/SIGINT;
     * NULL for none. It lets a caller act at an exact step: test_train.c
     * raises SIGTERM there to interrupt a run deterministically mid-epoch. */
    void (*on_step)(void *ctx, long epoch, long step);
    void *on_step_ctx;
} train_options;

/* Train `spec` in this process. 0 on success; -1 with a one-line reason
 * (also recorded as the "end" event of progress.jsonl when possible). */
int train_single(const job_spec *spec, const train_options *opt, char *err, size_t errlen);

/* Load opt->weights into the model and evaluate it on the test set (and
 * the validation set, if any); prints one JSON line on stdout and writes
 * out_dir/evaluation.json. 0 or -1 with a message. */
int train_evaluate_only(const job_spec *spec, const train_options *opt, char *err,
                        size_t errlen);

/* Loss and metrics of `m` over all of `d` in inference mode, in batches of
 * m->max_batch. Deterministic; -1 + message on a bad label. */
int train_evaluate(model *m, const dataset *d, eval_result *out, char *err, size_t errlen);

#endif
