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

/* The progress.jsonl lines (runlog_progress.c): the one writer every
 * trainer, single or distributed, calls, so that each event carries the
 * fields schema/rundir.md lists whichever trainer ran. Each returns -1 +
 * message when the line could not be made or appended. */

typedef struct runlog_start_line {
    int epochs;
    long steps;             /* per epoch, summed over workers */
    long samples;           /* training samples per epoch */
    int ranks;
    const char *trainer;    /* spec_trainer_name */
    long epoch;             /* epochs already done (a resumed run) */
    bool resumed;           /* from a checkpoint, possibly mid-epoch */
    long parameters;        /* the model's trainable parameters */
    int workers;            /* distributed trainers' workers; 0: omitted */
} runlog_start_line;

int runlog_start(const char *dir, const runlog_start_line *l, char *err, size_t errlen);

/* Whether a "step" line is due: at most one a second, the first after the
 * first step. *last is the monotonic time of the previous one (0: none). */
bool runlog_step_due(double *last);

typedef struct runlog_step_line {
    long epoch;             /* 0-based, in progress */
    int epochs;
    long step, steps;       /* steps done in this epoch, of steps */
    eval_result run;        /* loss and metrics over this epoch's steps so far */
    double samples_per_s;
    double elapsed_s;
    double eta_s;           /* seconds until the last epoch ends, estimated */
} runlog_step_line;

int runlog_step(const char *dir, const spec_training *t, const runlog_step_line *l, char *err,
                size_t errlen);

typedef struct runlog_epoch_line {
    long epoch;             /* 0-based, just finished */
    int epochs;
    eval_result train;
    const eval_result *val; /* NULL without validation */
    double lr;
    double samples_per_s;
    double elapsed_s;
    double eta_s;
    long commits;           /* asynchronous trainers; < 0: omitted */
    double mean_staleness;  /* with commits */
} runlog_epoch_line;

int runlog_epoch(const char *dir, const spec_training *t, const runlog_epoch_line *l,
                 char *err, size_t errlen);

/* training.evaluate: the test set before the first step. */
int runlog_evaluate_before(const char *dir, const spec_training *t, const eval_result *test,
                           char *err, size_t errlen);

/* The last line of a run that succeeded; test is NULL without a test set. */
int runlog_end(const char *dir, const spec_training *t, const eval_result *test,
               double elapsed_s, int epochs_run, char *err, size_t errlen);

/* The last line of a run that failed, with its one-line reason. */
int runlog_failed(const char *dir, const char *reason, char *err, size_t errlen);

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
