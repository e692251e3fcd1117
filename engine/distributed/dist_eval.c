/* dist_eval.c — metric sums, and evaluation of a model (or of an
 * ensemble's mean prediction) on validation and test data, in inference
 * mode, sharded over the ranks when they all hold the same model. */
#include <stdbool.h>
#include <math.h>
#include <stdlib.h>

#include <mpi.h>

#include "distributed/dist_eval.h"
#include "distributed/dist_ctx.h"
#include "distributed/dist_error.h"
#include "distributed/dist_watchdog.h"

void dist_sums_add_batch(dist_sums *s, const model *m, double loss_sum, const batch_metrics *bm,
                         int batch)
{
    s->loss += loss_sum;
    s->correct += bm->correct;
    s->sq_err += bm->sq_err;
    s->abs_err += bm->abs_err;
    s->n += batch;
    s->terms += (double)model_loss_terms(m, batch);
}

void dist_sums_add(dist_sums *acc, const dist_sums *s)
{
    acc->loss += s->loss;
    acc->correct += s->correct;
    acc->sq_err += s->sq_err;
    acc->abs_err += s->abs_err;
    acc->n += s->n;
    acc->terms += s->terms;
}

double dist_sums_loss(const dist_sums *s)
{
    return s->terms > 0 ? s->loss / s->terms : 0.0;
}

double dist_sums_metric(const dist_sums *s, spec_metric metric, int n_out)
{
    batch_metrics sums = {s->correct, s->sq_err, s->abs_err};
    return model_metric(&sums, s->terms, metric, n_out);
}

void dist_eval_range(model *m, const dataset *d, long lo, long hi, dist_sums *out)
{
    char err[256];
    *out = (dist_sums){0};
    for (long first = lo; first < hi; first += m->max_batch) {
        int batch = (int)(hi - first < m->max_batch ? hi - first : m->max_batch);
        if (model_load_range(m, d, first, batch, err, sizeof err) < 0)
            dist_die("evaluation: %s", err);
        model_forward(m, batch, false, 0);
        batch_metrics bm = {0};
        double loss = model_loss(m, batch, &bm);
        dist_sums_add_batch(out, m, loss, &bm, batch);
        dist_watchdog_tick("evaluating");
    }
}

void dist_eval_sharded(dist_ctx *c, const dataset *d, dist_sums *out)
{
    /* d is this rank's slice already (dist_sync_data.c). */
    dist_eval_range(c->m, d, 0, d->n, out);
    double t0 = MPI_Wtime();
    DIST_MPI(MPI_Allreduce(MPI_IN_PLACE, out, DIST_SUMS_LEN, MPI_DOUBLE, MPI_SUM, c->comm));
    c->comm_s += MPI_Wtime() - t0;
}

void dist_predict(model *m, const dataset *d, float *out)
{
    char err[256];
    for (long first = 0; first < d->n; first += m->max_batch) {
        int batch = (int)(d->n - first < m->max_batch ? d->n - first : m->max_batch);
        if (model_load_range(m, d, first, batch, err, sizeof err) < 0)
            dist_die("prediction: %s", err);
        model_forward(m, batch, false, 0);
        /* The model's output is softmax probabilities (fused loss) or the
         * last layer's output; model_loss fills the former. */
        batch_metrics bm = {0};
        model_loss(m, batch, &bm);
        m->be->download(m->be, out + first * m->n_out, m->output, (long)batch * m->n_out);
        dist_watchdog_tick("predicting");
    }
}

/* Categorical hinge of one row, as backend.h's categorical_hinge defines
 * it: max(0, max_j (1 - t_j) y_j - sum_j t_j y_j + 1). */
static double dist_sample_hinge(const float *y, int n, int label, const float *tg)
{
    double pos = 0.0, neg = -INFINITY;
    for (int j = 0; j < n; j++) {
        double t = tg ? tg[j] : j == label ? 1.0 : 0.0;
        pos += t * y[j];
        neg = fmax(neg, (1.0 - t) * y[j]);
    }
    return fmax(0.0, neg - pos + 1.0);
}

/* Per-sample loss of output row y against class `label` (one-hot), or
 * against the targets `tg` when not NULL, as the backend's losses define
 * it (probabilities clipped like binary_xent). */
static double dist_sample_loss(spec_loss loss, const float *y, int n, int label,
                               const float *tg)
{
    if (loss == LOSS_CATEGORICAL_HINGE)
        return dist_sample_hinge(y, n, label, tg);
    double sum = 0.0;
    for (int j = 0; j < n; j++) {
        double t = tg ? tg[j] : j == label ? 1.0 : 0.0;
        double p = y[j];
        switch (loss) {
        case LOSS_CATEGORICAL_CROSSENTROPY:
            if (j == label)
                sum -= log(p > 1e-30 ? p : 1e-30);
            break;
        case LOSS_BINARY_CROSSENTROPY:
            p = p < 1e-7 ? 1e-7 : (p > 1 - 1e-7 ? 1 - 1e-7 : p);
            sum -= (t * log(p) + (1 - t) * log(1 - p)) / n;
            break;
        case LOSS_MSE:
            sum += (p - t) * (p - t) / n;
            break;
        case LOSS_CATEGORICAL_HINGE:
            break;
        }
    }
    return sum;
}

void dist_output_sums(const job_spec *spec, const float *out, int n_out, const dataset *d,
                      dist_sums *s)
{
    *s = (dist_sums){0};
    for (long i = 0; i < d->n; i++) {
        const float *y = out + i * n_out;
        int label = d->y[i];
        const float *tg = d->t ? d->t + i * n_out : NULL;
        int best = 0, want = 0;
        for (int j = 0; j < n_out; j++) {
            double t = tg ? tg[j] : j == label ? 1.0 : 0.0;
            s->sq_err += (y[j] - t) * (y[j] - t);
            s->abs_err += fabs(y[j] - t);
            if (y[j] > y[best])
                best = j;
            if (tg && tg[j] > tg[want])
                want = j;
        }
        s->correct += best == (tg ? want : label);
        s->loss += dist_sample_loss(spec->training.loss, y, n_out, label, tg);
        s->n += 1;
        s->terms += 1;
    }
}
