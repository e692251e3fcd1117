/* runlog_progress.c — the progress.jsonl lines of schema/rundir.md, made
 * in one place for every trainer. The single and distributed trainers
 * once wrote their own and drifted apart (distributed start lines lost
 * "resumed", "epoch" and "parameters", step lines "eta_s"); a field
 * added here reaches both, and tests/pylib/runlog_schema.py checks every
 * trainer's lines against the schema. */
#include "train/runlog.h"

#include <stdio.h>

#include "timeutil/timeutil.h"

/* At most one "step" line per this many seconds. */
#define RUNLOG_STEP_LINE_S 1.0

/* Append obj (stolen), or say it could not be made. */
static int runlog_append(const char *dir, json_t *obj, char *err, size_t errlen)
{
    if (!obj) {
        snprintf(err, errlen, "progress.jsonl: out of memory");
        return -1;
    }
    return runlog_event(dir, obj, err, errlen);
}

int runlog_start(const char *dir, const runlog_start_line *l, char *err, size_t errlen)
{
    json_t *o = json_pack("{s:s,s:i,s:I,s:I,s:i,s:s,s:b,s:I,s:I}", "event", "start", "epochs",
                          l->epochs, "steps", (json_int_t)l->steps, "samples",
                          (json_int_t)l->samples, "ranks", l->ranks, "trainer", l->trainer,
                          "resumed", l->resumed, "epoch", (json_int_t)l->epoch, "parameters",
                          (json_int_t)l->parameters);
    if (o && l->workers > 0)
        json_object_set_new(o, "workers", json_integer(l->workers));
    if (o && l->workers > 0 && l->epoch > 0)
        json_object_set_new(o, "resumed_from_epoch", json_integer(l->epoch));
    return runlog_append(dir, o, err, errlen);
}

bool runlog_step_due(double *last)
{
    double now = timeutil_mono_s();
    if (*last > 0 && now - *last < RUNLOG_STEP_LINE_S)
        return false;
    *last = now;
    return true;
}

int runlog_step(const char *dir, const spec_training *t, const runlog_step_line *l, char *err,
                size_t errlen)
{
    json_t *o = json_pack("{s:s,s:I,s:i,s:I,s:I}", "event", "step", "epoch",
                          (json_int_t)l->epoch + 1, "epochs", l->epochs, "step",
                          (json_int_t)l->step, "steps", (json_int_t)l->steps);
    if (o) {
        runlog_put_metrics(o, t, "", l->run.loss, l->run.metric);
        json_object_set_new(o, "samples_per_s", json_real(l->samples_per_s));
        json_object_set_new(o, "elapsed_s", json_real(l->elapsed_s));
        json_object_set_new(o, "eta_s", json_real(l->eta_s));
    }
    return runlog_append(dir, o, err, errlen);
}

int runlog_epoch(const char *dir, const spec_training *t, const runlog_epoch_line *l,
                 char *err, size_t errlen)
{
    json_t *o = json_pack("{s:s,s:I,s:i}", "event", "epoch", "epoch", (json_int_t)l->epoch + 1,
                          "epochs", l->epochs);
    if (o) {
        runlog_put_metrics(o, t, "", l->train.loss, l->train.metric);
        if (l->val)
            runlog_put_metrics(o, t, "val_", l->val->loss, l->val->metric);
        json_object_set_new(o, "lr", json_real(l->lr));
        json_object_set_new(o, "samples_per_s", json_real(l->samples_per_s));
        json_object_set_new(o, "elapsed_s", json_real(l->elapsed_s));
        json_object_set_new(o, "eta_s", json_real(l->eta_s));
        if (l->commits >= 0) {
            json_object_set_new(o, "commits", json_integer(l->commits));
            json_object_set_new(o, "mean_staleness", json_real(l->mean_staleness));
        }
    }
    return runlog_append(dir, o, err, errlen);
}

int runlog_evaluate_before(const char *dir, const spec_training *t, const eval_result *test,
                           char *err, size_t errlen)
{
    json_t *o = json_pack("{s:s,s:s,s:I}", "event", "evaluate", "when", "before", "samples",
                          (json_int_t)test->samples);
    if (o)
        runlog_put_metrics(o, t, "test_", test->loss, test->metric);
    return runlog_append(dir, o, err, errlen);
}

int runlog_end(const char *dir, const spec_training *t, const eval_result *test,
               double elapsed_s, int epochs_run, char *err, size_t errlen)
{
    json_t *o = json_pack("{s:s,s:s,s:f,s:i}", "event", "end", "status", "succeeded",
                          "elapsed_s", elapsed_s, "epochs_run", epochs_run);
    if (o && test)
        runlog_put_metrics(o, t, "test_", test->loss, test->metric);
    return runlog_append(dir, o, err, errlen);
}

int runlog_failed(const char *dir, const char *reason, char *err, size_t errlen)
{
    json_t *o = json_pack("{s:s,s:s,s:s}", "event", "end", "status", "failed", "error", reason);
    return runlog_append(dir, o, err, errlen);
}
