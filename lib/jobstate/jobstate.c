/* jobstate.c — the job states' names (see jobstate.h). */
#include "jobstate/jobstate.h"

#include <string.h>

static const char *const job_state_names[JOB_STATE_COUNT] = {
    "queued", "starting", "running", "succeeded", "failed", "cancelled", "timeout",
};

const char *job_state_name(job_state s)
{
    return (unsigned)s < JOB_STATE_COUNT ? job_state_names[s] : "unknown";
}

bool job_state_parse(const char *name, job_state *out)
{
    for (int i = 0; i < JOB_STATE_COUNT; i++) {
        if (strcmp(name, job_state_names[i]) == 0) {
            *out = (job_state)i;
            return true;
        }
    }
    return false;
}

bool job_state_is_final(job_state s) { return s >= JOB_SUCCEEDED; }
