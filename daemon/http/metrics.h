/* metrics.h — request counters and latency histograms per route, rendered
 * with the job gauges as Prometheus text for GET /metrics. Lock-free
 * (relaxed atomics): recording costs a few increments per request. */
#ifndef PUNCH_METRICS_H
#define PUNCH_METRICS_H

#include <stdio.h>

#include "store/store.h"

typedef enum metrics_route {
    ROUTE_HEALTHZ,
    ROUTE_METRICS,
    ROUTE_JOBS_LIST,
    ROUTE_JOBS_SUBMIT,
    ROUTE_JOB_GET,
    ROUTE_JOB_DELETE,
    ROUTE_JOB_HISTORY,
    ROUTE_JOB_WEIGHTS,
    ROUTE_JOB_LOGS,
    ROUTE_JOB_EVENTS,
    ROUTE_SEED_SUBMIT,
    ROUTE_SEED_STATE,
    ROUTE_SEED_CANCEL,
    ROUTE_SEED_DESTROY,
    ROUTE_CLUSTER,
    ROUTE_DATASETS_LIST,
    ROUTE_DATASET_GET,
    ROUTE_DATASET_PUT,
    ROUTE_DATASET_DELETE,
    ROUTE_JOB_FILES,
    ROUTE_JOB_FILE,
    ROUTE_JOB_RESUME,
    ROUTE_JOB_PREDICT,
    ROUTE_UI,
    ROUTE_EVENT_STREAM,
    ROUTE_JOB_SPEC,
    ROUTE_JOB_CANCEL,
    ROUTE_JOB_EXPORT,
    ROUTE_JOB_GENERATE,
    ROUTE_OTHER,
    ROUTE_COUNT
} metrics_route;

const char *metrics_route_name(metrics_route r);

void metrics_record(metrics_route route, int status, double seconds);

/* Gauges the scheduler updates each tick. */
void metrics_set_slots(int total, int used);
/* GPUs of the cluster and those the running jobs hold. */
void metrics_set_gpus(int total, int used);

/* The whole exposition; job counts from the store. Caller frees. */
char *metrics_render(store *st, size_t *len);

#endif
