/* finalstate.h — how a started job ended: succeeded, failed, cancelled or
 * timeout, and the one-line error a user reads for it. A pure decision over
 * what the store and the run directory say, so every branch is unit-tested
 * (tests/daemon/test_finalstate.c); monitor.c gathers the facts and records
 * the answer.
 *
 * Precedence, first that applies:
 *   1. the daemon stopped it: stop_reason "cancel" -> cancelled (no error),
 *      "timeout" -> timeout ("time limit of N s exceeded");
 *   2. exit.json says mpirun exited 0 without a signal and the engine's end
 *      line does not say "failed" -> succeeded (no error);
 *   3. otherwise failed, and the error is the engine's own end error if it
 *      wrote one, else what the supervisor saw ("supervisor ended without
 *      recording an exit status", "mpirun killed by signal S", "mpirun exited
 *      with code C"), the last two followed by ": " and train.log's telling
 *      line when there is one.
 * A stop request wins over the exit record: a job cancelled while it was
 * already ending still reads as cancelled, as the user asked. */
#ifndef PUNCH_FINALSTATE_H
#define PUNCH_FINALSTATE_H

#include <stddef.h>

#include "jobstate/jobstate.h"
#include "run/rundir.h"

typedef struct finalstate_facts {
    const char *stop_reason;  /* the store's: "", "cancel" or "timeout" */
    long time_limit_s;        /* the job's limit, for the timeout message */
    const rundir_exit *exit;  /* exit.json; NULL if the supervisor left none */
    const char *end_status;   /* progress.jsonl's end line status; "" if none */
    const char *end_error;    /* its error; NULL if none */
    const char *log_line;     /* rundir_failure_line() of train.log; "" if none */
} finalstate_facts;

/* The final state the facts mean; error (capacity cap, truncated to fit)
 * receives its error text, "" when it has none. */
job_state finalstate_decide(const finalstate_facts *f, char *error, size_t cap);

#endif
