/* dist_eval.h — metric sums over samples and the evaluation that fills them. */
#ifndef PUNCH_DIST_EVAL_H
#define PUNCH_DIST_EVAL_H

#include "distributed/dist_ctx.h"

/* Sums over samples, reducible with MPI_SUM as DIST_SUMS_LEN doubles. */
typedef struct dist_sums {
    double loss;     /* sum of per-sample losses */
    double correct;
    double sq_err;
    double abs_err;
    double n;        /* samples */
    double terms;    /* loss terms (model_loss_terms): samples, or the real
                        steps of a per-step model; the loss and metric divisor */
} dist_sums;
#define DIST_SUMS_LEN 6

/* A batch of `batch` samples of the model m just scored (its loss terms
 * counted from m). */
void dist_sums_add_batch(dist_sums *s, const model *m, double loss_sum, const batch_metrics *bm,
                         int batch);
/* acc += s, field by field. */
void dist_sums_add(dist_sums *acc, const dist_sums *s);
/* Mean loss and the spec's metrics, in the order of spec->training.metrics. */
double dist_sums_loss(const dist_sums *s);
double dist_sums_metric(const dist_sums *s, spec_metric metric, int n_out);

/* Inference-mode sums over samples [lo, hi) of d. */
void dist_eval_range(model *m, const dataset *d, long lo, long hi, dist_sums *out);
/* Sums over a whole set, each rank evaluating its slice d (the ranks'
 * slices as dist_data_load cuts them). */
void dist_eval_sharded(dist_ctx *c, const dataset *d, dist_sums *out);
/* The model's outputs (n_out per sample) for samples [0, d->n) into out. */
void dist_predict(model *m, const dataset *d, float *out);
/* Sums of the loss and metrics of given outputs (e.g. an ensemble's mean
 * prediction) against d's labels. */
void dist_output_sums(const job_spec *spec, const float *out, int n_out, const dataset *d,
                      dist_sums *s);

#endif
