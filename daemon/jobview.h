/* jobview.h — a job as the API shows it (the job object of
 * schema/openapi.yaml): row fields, queue position, and progress/result read
 * from the run directory while the job runs (frozen in the store after). */
#ifndef PUNCH_JOBVIEW_H
#define PUNCH_JOBVIEW_H

#include <jansson.h>

#include "daemon.h"

/* The job object of job (caller owns it); NULL when a figure it needs from
 * the store (why a queued job waits) cannot be read, for a 500. */
json_t *jobview_json(daemon_ctx *d, const store_job *job);

#endif
