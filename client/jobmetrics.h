/* jobmetrics.h — the final-metric columns of `punch list --wide`: each
 * listed job's epoch, its last epoch's loss and metrics (the job object's
 * "progress") and its test results ("result"), as columns the whole table
 * shares, so runs compare down a column. */
#ifndef PUNCH_CLIENT_JOBMETRICS_H
#define PUNCH_CLIENT_JOBMETRICS_H

#include <stdio.h>

#include <jansson.h>

/* At most this many metric columns (the first by kind: loss, metrics,
 * val_loss, val_ metrics, test_loss, test_ metrics). */
enum { JOBMETRICS_MAX = 8 };

typedef struct jobmetrics {
    const char *key[JOBMETRICS_MAX]; /* keys of the jobs' objects: valid while they are */
    int width[JOBMETRICS_MAX];
    int n;
} jobmetrics;

/* The columns of jobs (an array of API job objects): every numeric metric
 * any of them has, in the order above. */
void jobmetrics_collect(const json_t *jobs, jobmetrics *m);
/* "EPOCH  LOSS  ACCURACY ..." and one job's cells ("-" where it lacks one),
 * each followed by two spaces. */
void jobmetrics_print_header(const jobmetrics *m, FILE *out);
void jobmetrics_print_row(const jobmetrics *m, const json_t *job, FILE *out);

#endif
