/* test_admission.c — admission_check, the one "could this job ever run here"
 * answer shared by submit (api.c) and the scheduler (monitor.c): fits, the
 * slot and GPU refusals with their exact field and text (what a user reads
 * in a 400 or in a failed job's error), plurals, several hosts, and slots
 * judged before GPUs. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <cmocka.h>

#include "sched/admission.h"

/* A cluster of `hosts` hosts with `gpus_per_host` GPUs each and `slots` MPI
 * slots in all. */
static daemon_ctx sized(int slots, int gpus_per_host, int hosts)
{
    daemon_ctx d;
    memset(&d, 0, sizeof d);
    d.total_slots = slots;
    d.hosts = hosts;
    d.cfg.gpus = gpus_per_host;
    d.total_gpus = gpus_per_host * hosts;
    return d;
}

/* admission_check refuses the job, blaming `field` with message `why`. */
static void assert_refused(const daemon_ctx *d, int ranks, int gpus_per_worker, int workers,
                           const char *field, const char *why)
{
    const char *got_field = NULL;
    char got[256];
    assert_false(admission_check(d, ranks, gpus_per_worker, workers, &got_field, got,
                                 sizeof got));
    assert_string_equal(got_field, field);
    assert_string_equal(got, why);
}

static void test_fits(void **state)
{
    (void)state;
    daemon_ctx d = sized(4, 2, 1);
    const char *field = "untouched";
    char why[256] = "untouched";
    assert_true(admission_check(&d, 4, 1, 2, &field, why, sizeof why));
    assert_true(admission_check(&d, 1, 0, 1, &field, why, sizeof why));
    /* The whole cluster is enough: what is busy now does not matter here. */
    assert_true(admission_check(&d, 3, 2, 1, &field, why, sizeof why));
    assert_string_equal(field, "untouched");
    /* Several workers on several hosts, one GPU each. */
    d = sized(8, 1, 2);
    assert_true(admission_check(&d, 3, 1, 2, &field, why, sizeof why));
}

/* A cluster (slots, GPUs per host, hosts), a job (ranks, GPUs per worker,
 * workers) it can never run, and the field and text of the refusal: too
 * many ranks, then too many GPUs. */
typedef struct refusal {
    int slots, gpus_per_host, hosts;
    int ranks, gpus_per_worker, workers;
    const char *field, *why;
} refusal;

static const refusal refusals[] = {
    {4, 2, 1, 5, 0, 4, "distributed.workers",
     "distributed.workers: the job needs 5 MPI ranks but this cluster has 4 "
     "slots; it could never run"},
    /* Slots are judged first. */
    {2, 0, 1, 3, 1, 3, "distributed.workers",
     "distributed.workers: the job needs 3 MPI ranks but this cluster has 2 "
     "slots; it could never run"},
    {8, 2, 1, 2, 3, 1, "resources.gpus",
     "resources.gpus: the job needs 3 GPUs (3 per worker x 1 worker) but this "
     "cluster has 2 (--gpus 2 on each of 1 host); it could never run"},
    /* Singular GPU, a cluster without any. */
    {8, 0, 1, 1, 1, 1, "resources.gpus",
     "resources.gpus: the job needs 1 GPU (1 per worker x 1 worker) but this "
     "cluster has 0 (--gpus 0 on each of 1 host); it could never run"},
    /* Several workers on several hosts: GPUs are per worker, summed. */
    {8, 1, 2, 3, 2, 2, "resources.gpus",
     "resources.gpus: the job needs 4 GPUs (2 per worker x 2 workers) but this "
     "cluster has 2 (--gpus 1 on each of 2 hosts); it could never run"},
};

static void test_refusals(void **state)
{
    (void)state;
    for (size_t i = 0; i < sizeof refusals / sizeof refusals[0]; i++) {
        const refusal *r = &refusals[i];
        daemon_ctx d = sized(r->slots, r->gpus_per_host, r->hosts);
        assert_refused(&d, r->ranks, r->gpus_per_worker, r->workers, r->field, r->why);
    }
}

/* With the hosts known (d->cl), a worker's GPUs must be on its own host:
 * two hosts of 3 GPUs hold two 2-GPU workers but not three, although 6
 * GPUs exist in all. */
static void test_gpus_per_host(void **state)
{
    (void)state;
    char err[256];
    daemon_ctx d = sized(0, 3, 2);
    char path[] = "/tmp/punch-admission-XXXXXX";
    int fd = mkstemp(path);
    assert_true(fd >= 0);
    assert_int_equal(write(fd, "a slots=4\nb slots=4\n", 20), 20);
    close(fd);
    d.cl = cluster_open(path, 0, 3, err, sizeof err);
    unlink(path);
    assert_non_null(d.cl);
    d.total_slots = 8;
    const char *field;
    char why[256];
    assert_true(admission_check(&d, 2, 2, 2, &field, why, sizeof why));
    assert_refused(&d, 3, 2, 3, "resources.gpus",
                   "resources.gpus: each of the job's 3 workers needs 2 GPUs on its own host, "
                   "and 2 hosts of 3 GPUs each cannot hold them so; it could never run");
    /* An asynchronous trainer's server needs no GPU: 1 + 2 workers fit. */
    assert_true(admission_check(&d, 3, 2, 2, &field, why, sizeof why));
    cluster_close(d.cl);
}

static void test_truncation(void **state)
{
    (void)state;
    daemon_ctx d = sized(2, 0, 1);
    const char *field = NULL;
    char small[12];
    assert_false(admission_check(&d, 3, 1, 3, &field, small, sizeof small));
    assert_string_equal(field, "distributed.workers");
    assert_string_equal(small, "distributed");
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_fits),
        cmocka_unit_test(test_refusals),
        cmocka_unit_test(test_gpus_per_host),
        cmocka_unit_test(test_truncation),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
