/* bench_schedule.c — the time of one scheduling pass over a real store, for
 * scripts/bench-api (a measurement, not a test: nothing is asserted).
 *
 * A pass is the active jobs (store_active_jobs) and sched_pass(), the
 * function monitor.c's tick calls: the head of the queue in run order
 * without the jobs of users at their running limit and sched_pick() over
 * it with the hosts' free slots and the per-user running limit. Starting
 * the picked jobs is left out (it forks), so the store is only read and
 * the pass can be repeated on the same data.
 *
 * usage: bench_schedule DB SLOTS MAX_RUNNING [PASSES]
 *   DB           a punchcardd store (not in use by a daemon)
 *   SLOTS        slots of the one host (the active jobs' ranks are taken)
 *   MAX_RUNNING  per-user running limit (0: none)
 * Prints the queue and active sizes, the jobs a pass would start, and the
 * pass's time (median, p99, max) in milliseconds. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "sched/joblist.h"
#include "sched/placement.h"
#include "sched/scheduler.h"
#include "store/store.h"

static double bench_now_ms(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec * 1e3 + (double)ts.tv_nsec / 1e6;
}

static int bench_cmp_double(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

/* One pass; false on a store error. *n_queue, *n_active and *n_picked say
 * what it saw and chose. */
static bool bench_pass(store *st, int slots, int max_running, size_t *n_queue, size_t *n_active,
                       size_t *n_picked)
{
    job_list active = {0};
    sched_plan plan = {0};
    placement_cluster *avail = calloc(1, sizeof *avail);
    bool oom = false;
    bool ok = avail && store_active_jobs(st, joblist_collect, &active) == STORE_OK &&
              !active.short_of_memory;
    if (ok) {
        int free_slots = slots;
        for (size_t i = 0; i < active.n; i++)
            free_slots -= active.v[i].ranks;
        avail->n_hosts = 1;
        avail->slots[0] = free_slots > 0 ? free_slots : 0;
        ok = sched_pass(st, &active, avail, max_running, NULL, NULL, &plan, &oom) == STORE_OK;
        *n_picked = plan.n_picked;
        *n_queue = plan.queue.n;
        *n_active = active.n;
    }
    free(avail);
    joblist_free(&active);
    sched_plan_free(&plan);
    return ok;
}

int main(int argc, char **argv)
{
    if (argc < 4 || argc > 5) {
        fprintf(stderr, "usage: %s DB SLOTS MAX_RUNNING [PASSES]\n", argv[0]);
        return 2;
    }
    int slots = atoi(argv[2]), max_running = atoi(argv[3]);
    int passes = argc == 5 ? atoi(argv[4]) : 200;
    if (slots < 1 || max_running < 0 || passes < 1) {
        fprintf(stderr, "%s: SLOTS >= 1, MAX_RUNNING >= 0, PASSES >= 1\n", argv[0]);
        return 2;
    }
    char err[512];
    store *st = store_open(argv[1], 1, err, sizeof err);
    if (!st) {
        fprintf(stderr, "%s: %s\n", argv[0], err);
        return 1;
    }
    double *ms = calloc((size_t)passes, sizeof *ms);
    size_t n_queue = 0, n_active = 0, n_picked = 0;
    int rc = ms ? 0 : 1;
    for (int i = 0; rc == 0 && i < passes; i++) {
        double t0 = bench_now_ms();
        if (!bench_pass(st, slots, max_running, &n_queue, &n_active, &n_picked)) {
            fprintf(stderr, "%s: the store failed during a pass\n", argv[0]);
            rc = 1;
        }
        ms[i] = bench_now_ms() - t0;
    }
    if (rc == 0) {
        qsort(ms, (size_t)passes, sizeof *ms, bench_cmp_double);
        printf("queue head %zu, active %zu, would start %zu; pass over %d runs: median %.3f ms, "
               "p99 %.3f ms, max %.3f ms\n",
               n_queue, n_active, n_picked, passes, ms[passes / 2],
               ms[(passes * 99) / 100 < passes ? (passes * 99) / 100 : passes - 1],
               ms[passes - 1]);
    }
    free(ms);
    store_close(st);
    return rc;
}
