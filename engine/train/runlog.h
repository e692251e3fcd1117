/* runlog.h — what a run reports in its directory (schema/rundir.md):
 * progress.jsonl (one JSON object per line, appended with one write(2)
 * each) and history.json (Keras History shape, rewritten atomically after
 * every epoch). The per-epoch records are plain data so a checkpoint can
 * carry them and a resumed run reports the whole history. */
#ifndef PUNCH_RUNLOG_H
#define PUNCH_RUNLOG_H

#include <stdbool.h>
#include <stddef.h>

#include <jansson.h>

#include "jobspec/spec.h"

/* One epoch's results. Metric slots follow spec->training.metrics. */
typedef struct epoch_record {
    double loss;
    double metric[SPEC_MAX_METRICS];
    double val_loss;
    double val_metric[SPEC_MAX_METRICS];
    double lr;
    double time_s;
    double samples_per_s;
} epoch_record;

/* Loss and metrics of one evaluation (validation or test). */
typedef struct eval_result {
    double loss;
    double metric[SPEC_MAX_METRICS];
    long samples;
} eval_result;

typedef struct run_history {
    epoch_record *epochs;   /* cap entries */
    int n_epochs;           /* recorded */
    int cap;                /* spec->training.epochs */
    bool has_val;
    bool has_test;
    eval_result test;
    /* The backend's not_reproducible (backend.h) when the run is written:
     * NULL, "reproducible": true; else false with this as the reason. */
    const char *not_reproducible;
} run_history;

int run_history_init(run_history *h, int epochs);
void run_history_free(run_history *h);

/* Append one JSON object (made by the caller, stolen) as a line to
 * DIR/progress.jsonl, adding "time". -1 + message on I/O failure. */
int runlog_event(const char *dir, json_t *event, char *err, size_t errlen);

/* Add "loss", each metric, and (with a prefix such as "val_") their
 * values to obj. */
void runlog_put_metrics(json_t *obj, const spec_training *t, const char *prefix, double loss,
                        const double *metric);

/* This machine's host name, as MPI_Get_processor_name reports it for a
 * rank here (gethostname; "unknown" if that fails): the single trainer's
 * one entry of history.json's "rank_hosts". */
void runlog_host_name(char *buf, size_t len);

/* Rewrite DIR/history.json from h; "rank_hosts" is [host]. */
int runlog_write_history(const char *dir, const job_spec *spec, const run_history *h,
                         const char *host, char *err, size_t errlen);

#endif
