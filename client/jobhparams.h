/* jobhparams.h — the hyperparameter columns of `punch list --wide`: each
 * listed job's model, optimizer, learning rate, batch size, epochs (the job
 * object's "hparams", kept by the server at submit), trainer and ranks, so
 * runs compare down a column with no request per job. */
#ifndef PUNCH_CLIENT_JOBHPARAMS_H
#define PUNCH_CLIENT_JOBHPARAMS_H

#include <stdio.h>

#include <jansson.h>

/* MODEL, OPT, LR, BATCH, EPOCHS, TRAINER, RANKS. */
enum { JOBHPARAMS_COLUMNS = 7 };

typedef struct jobhparams {
    int width[JOBHPARAMS_COLUMNS];
} jobhparams;

/* The columns' widths for jobs (an array of API job objects). */
void jobhparams_collect(const json_t *jobs, jobhparams *h);
/* "MODEL  OPT  LR ..." and one job's cells: "-" where it lacks one (a job
 * from before the server kept them, a predict task's training fields);
 * each followed by two spaces. */
void jobhparams_print_header(const jobhparams *h, FILE *out);
void jobhparams_print_row(const jobhparams *h, const json_t *job, FILE *out);

#endif
