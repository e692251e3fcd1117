/* jobstate.h — the states of a job, as the daemon stores them and the API
 * names them ("queued" ... "timeout"). One list, so the daemon, the client
 * and the documentation (schema/openapi.yaml) cannot drift apart.
 *
 * A job moves queued → starting → running → one final state; a queued job
 * may go straight to cancelled. The order of the enum is the order of that
 * life: every state from JOB_SUCCEEDED on is final. */
#ifndef PUNCH_JOBSTATE_H
#define PUNCH_JOBSTATE_H

#include <stdbool.h>

typedef enum job_state {
    JOB_QUEUED,
    JOB_STARTING,
    JOB_RUNNING,
    JOB_SUCCEEDED,
    JOB_FAILED,
    JOB_CANCELLED,
    JOB_TIMEOUT,
    JOB_STATE_COUNT
} job_state;

/* The API's name of s; "unknown" for a value outside the enum. */
const char *job_state_name(job_state s);

/* The state called `name`; false (and *out untouched) for any other string. */
bool job_state_parse(const char *name, job_state *out);

/* Whether s is one a job never leaves. */
bool job_state_is_final(job_state s);

#endif
