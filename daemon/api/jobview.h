/* jobview.h — a job as the API shows it (the job object of
 * schema/openapi.yaml): row fields, queue position, and progress/result read
 * from the run directory while the job runs (frozen in the store after). */
#ifndef PUNCH_JOBVIEW_H
#define PUNCH_JOBVIEW_H

#include <stdbool.h>

#include <jansson.h>

#include "daemon.h"

/* The job object of job (caller owns it); NULL when a figure it needs from
 * the store (why a queued job waits) cannot be read, for a 500. */
json_t *jobview_json(daemon_ctx *d, const store_job *job);

/* Whether a queued job's view needs its owner's count of starting and
 * running jobs (the per-user running limit decides its waiting_for). */
bool jobview_needs_active(const daemon_ctx *d);

/* The job object from figures the caller has already read (a page reads
 * them for all its jobs at once: store_job_page): the job's queue place
 * (0: none) and its owner's active job count (read only when
 * jobview_needs_active). Never asks the store. */
json_t *jobview_json_with(daemon_ctx *d, const store_job *job, int queue_position,
                          int owner_active);

#endif
