/* bench_quota.c — what a user's disk use (quota_user_bytes, asked on every
 * submit when user_quota_mb is set) costs with a long history: N finished
 * jobs of one user, each with a run directory of a few small files. Prints
 * the time of walking every run directory (what each submit cost before a
 * finished job's size was kept in the store), of the first call (walks and
 * records each size) and of later calls (read from the store). A
 * measurement, not a test: nothing is asserted.
 *
 * usage: bench_quota DIR [JOBS]   (DIR: an empty scratch directory) */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>

#include "run/quota.h"
#include "run/rundir.h"

static double bench_now_ms(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec * 1e3 + (double)ts.tv_nsec / 1e6;
}

int main(int argc, char **argv)
{
    if (argc < 2) {
        fprintf(stderr, "usage: bench_quota DIR [JOBS]\n");
        return 2;
    }
    int n = argc > 2 ? atoi(argv[2]) : 2000;
    daemon_ctx d = {0};
    config_defaults(&d.cfg);
    snprintf(d.cfg.data_dir, sizeof d.cfg.data_dir, "%s", argv[1]);
    char path[4200], err[256];
    snprintf(path, sizeof path, "%s/runs", argv[1]);
    if (mkdir(path, 0700) != 0) {
        perror(path);
        return 1;
    }
    snprintf(path, sizeof path, "%s/punchcard.db", argv[1]);
    if (!(d.st = store_open(path, 2, err, sizeof err))) {
        fprintf(stderr, "%s\n", err);
        return 1;
    }
    char (*ids)[STORE_ID_LEN + 1] = calloc((size_t)n, sizeof *ids);
    if (!ids)
        return 1;
    static const char *const files[] = {"job.json", "train.log", "history.json",
                                        "weights.safetensors", "exit.json"};
    for (int i = 0; i < n; i++) {
        store_new_job nj = {.owner = "alice", .name = "j", .trainer = "single", .spec = "{}",
                            .ranks = 1, .workers = 1, .threads = 1};
        if (store_job_submit(d.st, &nj, 0, 1e9 + i, ids[i]) != STORE_OK ||
            store_job_cancel_queued(d.st, ids[i], 1e9 + i + 1) != STORE_OK ||
            !rundir_path(path, sizeof path, d.cfg.data_dir, ids[i], NULL) ||
            mkdir(path, 0700) != 0)
            return 1;
        for (size_t k = 0; k < sizeof files / sizeof files[0]; k++)
            if (!rundir_write_atomic(path, files[k], "0123456789\n", 11, err, sizeof err))
                return 1;
    }
    double t0 = bench_now_ms(), walked = 0;
    for (int i = 0; i < n; i++)
        if (rundir_path(path, sizeof path, d.cfg.data_dir, ids[i], NULL))
            walked += quota_dir_bytes(path);
    double t1 = bench_now_ms();
    double first = quota_user_bytes(&d, "alice");
    double t2 = bench_now_ms();
    double later = 0, t3 = t2;
    for (int r = 0; r < 5; r++)
        later = quota_user_bytes(&d, "alice");
    t3 = bench_now_ms();
    printf("%d finished jobs, %.0f bytes (first call %.0f, later %.0f)\n", n, walked, first,
           later);
    printf("walk every run directory: %.1f ms\nfirst call (walk and record): %.1f ms\n"
           "later calls (from the store): %.1f ms each\n",
           t1 - t0, t2 - t1, (t3 - t2) / 5);
    free(ids);
    store_close(d.st);
    return 0;
}
