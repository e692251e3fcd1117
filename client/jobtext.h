/* jobtext.h — how jobs read to a person: the one-job detail view of
 * `punch state` and the table of `punch list`, as plain text made from the
 * job objects the API sends. */
#ifndef PUNCH_CLIENT_JOBTEXT_H
#define PUNCH_CLIENT_JOBTEXT_H

#include <stdbool.h>
#include <stdio.h>

#include <jansson.h>

/* "key  value" lines for one job object. now is the current UNIX time, for
 * "(2m ago)". */
void jobtext_print_detail(const json_t *job, double now, FILE *out);

/* A table of jobs (an array of job objects), one row each, with a header;
 * "no jobs" when empty. An OWNER column when the jobs have several owners
 * (an admin's list); a long error cut to the row. */
void jobtext_print_table(const json_t *jobs, double now, FILE *out);
/* The same with a SWEEP column when some job is a sweep's trial (its id,
 * "-" for the others); with wide the jobs' key hyperparameters
 * (jobhparams.h), their final metrics (jobmetrics.h) and each trial's
 * params last. */
void jobtext_print_table_wide(const json_t *jobs, double now, bool wide, FILE *out);

/* "5s ago", "3m ago", "2h ago", "4d ago"; "-" for a missing time. */
void jobtext_format_age(const json_t *when, double now, char *buf, size_t len);

/* A short progress or result for the table: "epoch 2/5 loss 0.51",
 * "test_accuracy 0.8712", "queued #2", or the error. */
void jobtext_format_summary(const json_t *job, char *buf, size_t len);

#endif
