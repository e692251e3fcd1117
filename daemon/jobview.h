/* jobview.h — a job as the API shows it (the job object of
 * schema/openapi.yaml): row fields, queue position, and progress/result read
 * from the run directory while the job runs (frozen in the store after). */
#ifndef PUNCH_JOBVIEW_H
#define PUNCH_JOBVIEW_H

#include <jansson.h>

#include "daemon.h"

json_t *jobview_json(daemon_ctx *d, const store_job *job);

#endif
