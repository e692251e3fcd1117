/* sweep_pbt_run.h — PBT's lifecycle in a sweep, called by sweep.c's
 * advance: a member's generations are rung records {"generation",
 * "epochs", "from_job", "params", "started_at", "metric", "completed_at"};
 * a boundary is decided once every live member finished a generation and
 * none waits or runs; then each member's next generation starts as slots
 * free. */
#ifndef PUNCH_SWEEP_PBT_RUN_H
#define PUNCH_SWEEP_PBT_RUN_H

#include "store/store_sweeps.h"
#include "sweep/sweep_trials.h"

/* t's last generation record, finished or not (NULL: none). */
json_t *sweep_pbt_last(const sweep_trial *t);

/* Generation 0's record, for a trial just submitted. */
void sweep_pbt_first(const sweep_conf *c, sweep_trial *t);

/* A succeeded member's job finished its generation: its metric recorded. */
void sweep_pbt_record(daemon_ctx *d, const char *id, const sweep_conf *c, sweep_trial *t);

/* A member waiting for its decided generation to start, or -1. */
int sweep_pbt_waiting(const sweep_trials *ts);

/* The generation every live member finished when it is a boundary to
 * decide now (none active, none waiting, nothing left to submit, more
 * generations to come), else -1. */
int sweep_pbt_boundary(const sweep_conf *c, const sweep_trials *ts, int active,
                       bool unsubmitted);

/* Decide boundary g: exploit and explore for the bottom quantile, the
 * next generation's record for every member (stored). */
void sweep_pbt_decide(daemon_ctx *d, const store_sweep *sw, const sweep_conf *c,
                      sweep_trials *ts, int g);

/* Start t's decided generation (its job requeued); false: not now. */
bool sweep_pbt_start(daemon_ctx *d, const store_sweep *sw, const sweep_conf *c, sweep_trial *t);

/* t's lineage [{generation, from_job, params}]. */
json_t *sweep_pbt_lineage(const sweep_trial *t);

/* A losing member under keep "best": the copies of a donor's weights and
 * checkpoint it warm-started from go with its other weights. */
void sweep_pbt_forget(daemon_ctx *d, const sweep_trial *t);

#endif
