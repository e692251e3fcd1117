/* metrics.c — Prometheus counters for the HTTP API and the queue. */
#include "http/metrics.h"

#include <stdatomic.h>
#include <stdint.h>
#include <stdlib.h>

static const char *const route_names[ROUTE_COUNT] = {
    "/healthz", "/metrics", "GET /api/v1/jobs", "POST /api/v1/jobs", "GET /api/v1/jobs/{id}",
    "DELETE /api/v1/jobs/{id}", "/api/v1/jobs/{id}/history", "/api/v1/jobs/{id}/weights",
    "/api/v1/jobs/{id}/logs", "/api/v1/jobs/{id}/events", "/api/submit", "/api/state",
    "/api/cancel", "/api/destroy", "/api/v1/cluster", "GET /api/v1/datasets",
    "GET /api/v1/datasets/{name}", "PUT /api/v1/datasets/{name}",
    "DELETE /api/v1/datasets/{name}", "/api/v1/jobs/{id}/files",
    "/api/v1/jobs/{id}/files/{path}", "POST /api/v1/jobs/{id}/resume",
    "POST /api/v1/jobs/{id}/predict", "/ (dashboard)", "/api/v1/events",
    "/api/v1/jobs/{id}/spec", "POST /api/v1/jobs/{id}/cancel",
    "/api/v1/jobs/{id}/export", "POST /api/v1/jobs/{id}/generate", "other",
};

const char *metrics_route_name(metrics_route r)
{
    return (unsigned)r < ROUTE_COUNT ? route_names[r] : "other";
}

/* Upper bounds (seconds) of the latency buckets. */
static const double bucket_le[] = {0.0001, 0.00025, 0.0005, 0.001, 0.0025, 0.005,
                                   0.01,   0.025,   0.05,   0.1,   0.25,   1.0};
#define N_BUCKETS (sizeof bucket_le / sizeof bucket_le[0])

static _Atomic uint64_t req_count[ROUTE_COUNT][600];
static _Atomic uint64_t req_bucket[ROUTE_COUNT][N_BUCKETS + 1];
static _Atomic uint64_t req_nanos[ROUTE_COUNT];
static _Atomic int slots_total, slots_used, gpus_total, gpus_used;

void metrics_record(metrics_route route, int status, double seconds)
{
    if ((unsigned)route >= ROUTE_COUNT)
        route = ROUTE_OTHER;
    if (status < 100 || status > 599)
        status = 599;
    atomic_fetch_add_explicit(&req_count[route][status], 1, memory_order_relaxed);
    size_t b = 0;
    while (b < N_BUCKETS && seconds > bucket_le[b])
        b++;
    atomic_fetch_add_explicit(&req_bucket[route][b], 1, memory_order_relaxed);
    atomic_fetch_add_explicit(&req_nanos[route], (uint64_t)(seconds * 1e9), memory_order_relaxed);
}

void metrics_set_slots(int total, int used)
{
    atomic_store_explicit(&slots_total, total, memory_order_relaxed);
    atomic_store_explicit(&slots_used, used, memory_order_relaxed);
}

void metrics_set_gpus(int total, int used)
{
    atomic_store_explicit(&gpus_total, total, memory_order_relaxed);
    atomic_store_explicit(&gpus_used, used, memory_order_relaxed);
}

char *metrics_render(store *st, size_t *len)
{
    char *buf = NULL;
    size_t size = 0;
    FILE *f = open_memstream(&buf, &size);
    if (!f)
        return NULL;
    long counts[JOB_STATE_COUNT];
    bool have_counts = store_counts(st, counts) == STORE_OK;
    fprintf(f, "# HELP punchcard_jobs Jobs in the store by state.\n# TYPE punchcard_jobs gauge\n");
    for (int s = 0; have_counts && s < JOB_STATE_COUNT; s++)
        fprintf(f, "punchcard_jobs{state=\"%s\"} %ld\n", job_state_name((job_state)s), counts[s]);
    fprintf(f, "# HELP punchcard_queue_length Jobs waiting to run.\n"
               "# TYPE punchcard_queue_length gauge\npunchcard_queue_length %ld\n",
            have_counts ? counts[JOB_QUEUED] : 0L);
    fprintf(f, "# HELP punchcard_slots Scheduler slots.\n# TYPE punchcard_slots gauge\n"
               "punchcard_slots{kind=\"total\"} %d\npunchcard_slots{kind=\"used\"} %d\n",
            atomic_load(&slots_total), atomic_load(&slots_used));
    fprintf(f, "# HELP punchcard_gpus Scheduler GPUs (--gpus on each host).\n"
               "# TYPE punchcard_gpus gauge\n"
               "punchcard_gpus{kind=\"total\"} %d\npunchcard_gpus{kind=\"used\"} %d\n",
            atomic_load(&gpus_total), atomic_load(&gpus_used));
    fprintf(f, "# HELP punchcard_http_requests_total HTTP requests by route and status.\n"
               "# TYPE punchcard_http_requests_total counter\n");
    for (int r = 0; r < ROUTE_COUNT; r++)
        for (int c = 100; c < 600; c++) {
            uint64_t n = atomic_load_explicit(&req_count[r][c], memory_order_relaxed);
            if (n)
                fprintf(f, "punchcard_http_requests_total{route=\"%s\",code=\"%d\"} %llu\n",
                        route_names[r], c, (unsigned long long)n);
        }
    fprintf(f, "# HELP punchcard_http_request_duration_seconds Time to answer, by route.\n"
               "# TYPE punchcard_http_request_duration_seconds histogram\n");
    for (int r = 0; r < ROUTE_COUNT; r++) {
        uint64_t cum = 0;
        for (size_t b = 0; b <= N_BUCKETS; b++)
            cum += atomic_load_explicit(&req_bucket[r][b], memory_order_relaxed);
        if (cum == 0)
            continue;
        uint64_t running = 0;
        for (size_t b = 0; b < N_BUCKETS; b++) {
            running += atomic_load_explicit(&req_bucket[r][b], memory_order_relaxed);
            fprintf(f, "punchcard_http_request_duration_seconds_bucket{route=\"%s\",le=\"%g\"} %llu\n",
                    route_names[r], bucket_le[b], (unsigned long long)running);
        }
        fprintf(f, "punchcard_http_request_duration_seconds_bucket{route=\"%s\",le=\"+Inf\"} %llu\n"
                   "punchcard_http_request_duration_seconds_sum{route=\"%s\"} %.6f\n"
                   "punchcard_http_request_duration_seconds_count{route=\"%s\"} %llu\n",
                route_names[r], (unsigned long long)cum, route_names[r],
                atomic_load_explicit(&req_nanos[r], memory_order_relaxed) / 1e9, route_names[r],
                (unsigned long long)cum);
    }
    if (fclose(f) != 0) {
        free(buf);
        return NULL;
    }
    *len = size;
    return buf;
}
