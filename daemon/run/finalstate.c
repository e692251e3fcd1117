/* finalstate.c — a started job's final state from its facts (finalstate.h). */
#include "run/finalstate.h"

#include <stdio.h>
#include <string.h>

job_state finalstate_decide(const finalstate_facts *f, char *error, size_t cap)
{
    error[0] = '\0';
    if (strcmp(f->stop_reason, "cancel") == 0)
        return JOB_CANCELLED;
    if (strcmp(f->stop_reason, "timeout") == 0) {
        snprintf(error, cap, "time limit of %ld s exceeded", f->time_limit_s);
        return JOB_TIMEOUT;
    }
    const rundir_exit *ex = f->exit;
    if (ex && ex->exit_code == 0 && ex->signal == 0 && strcmp(f->end_status, "failed") != 0)
        return JOB_SUCCEEDED;
    const char *sep = f->log_line[0] ? ": " : "";
    if (f->end_error)
        snprintf(error, cap, "%s", f->end_error);
    else if (!ex)
        snprintf(error, cap, "supervisor ended without recording an exit status");
    else if (ex->signal)
        snprintf(error, cap, "mpirun killed by signal %d%s%s", ex->signal, sep, f->log_line);
    else
        snprintf(error, cap, "mpirun exited with code %d%s%s", ex->exit_code, sep, f->log_line);
    return JOB_FAILED;
}
