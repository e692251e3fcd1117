/* test_monitor.c — the supervision tick against a real store and real
 * supervisors (this binary re-executed as `--supervise`, as punchcardd is)
 * running a stand-in mpirun that waits for RUNDIR/release and exits with
 * the code written there. First the path of a job from queued to
 * succeeded (and the placement, host-loss requeue and a preemption that
 * spans a restart); then every store failure the tick can meet, made with
 * store_fault_sim(): each ends in a log line naming what was not recorded,
 * leaves the job in the store in a consistent state, and the next tick
 * after the fault clears carries the job on. */
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <math.h>
#include <setjmp.h>
#include <signal.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <cmocka.h>

#include "daemon.h"
#include "jobspec/spec.h"
#include "sched/monitor.h"
#include "sched/preemption.h"
#include "run/rundir.h"
#include "scratch.h"
#include "run/supervisor.h"

/* The mpirun stand-in, shaped like mpirun: its "rank" is a child, and it
 * ends when the rank does (a stop's SIGTERM goes to the ranks, not to
 * mpirun). A file "stubborn" in the data dir makes both ignore SIGTERM, so
 * only SIGKILL ends them. */
static const char STAND_IN[] =
    "#!/bin/sh\n"
    "out=\"\"\n"
    "while [ $# -gt 0 ]; do\n"
    "  [ \"$1\" = \"--out\" ] && out=\"$2\"\n"
    "  shift\n"
    "done\n"
    "[ -e \"$out/../../stubborn\" ] && trap '' TERM\n"
    "(\n"
    "  i=0\n"
    "  while [ ! -e \"$out/release\" ] && [ $i -lt 1200 ]; do sleep 0.05; i=$((i+1)); done\n"
    "  code=$(cat \"$out/release\" 2>/dev/null)\n"
    "  exit ${code:-1}\n"
    ") &\n"
    "wait $!\n";

/* Make every statement whose SQL contains `sql` fail, counting hits. */
typedef struct fault {
    const char *sql;
    int hits;
} fault;

typedef struct fixture {
    char dir[SCRATCH_DIR_LEN];
    char self[PATH_MAX];
    char mpirun[128];
    fault fault;
    char log[8192]; /* what the last tick logged */
    daemon_ctx d;
} fixture;

static bool fault_fn(void *arg, const char *sql)
{
    fault *ft = arg;
    if (!strstr(sql, ft->sql))
        return false;
    ft->hits++;
    return true;
}

static void fault_on(fixture *f, const char *sql)
{
    f->fault = (fault){sql, 0};
    store_fault_sim(fault_fn, &f->fault);
}

/* Turn the fault off, checking that it was met. */
static void fault_off(fixture *f)
{
    store_fault_sim(NULL, NULL);
    assert_true(f->fault.hits > 0);
}

static int setup(void **state)
{
    fixture *f = calloc(1, sizeof *f);
    if (!f)
        return -1;
    ssize_t n = readlink("/proc/self/exe", f->self, sizeof f->self - 1);
    if (!scratch_create(f->dir, "monitor") || n <= 0)
        return -1;
    f->self[n] = '\0';
    char path[128];
    snprintf(path, sizeof path, "%s/runs", f->dir);
    if (mkdir(path, 0700) != 0)
        return -1;
    snprintf(f->mpirun, sizeof f->mpirun, "%s/mpirun", f->dir);
    FILE *fp = fopen(f->mpirun, "w");
    if (!fp || fputs(STAND_IN, fp) < 0 || fclose(fp) != 0 || chmod(f->mpirun, 0700) != 0)
        return -1;
    daemon_ctx *d = &f->d;
    config_defaults(&d->cfg);
    snprintf(d->cfg.data_dir, sizeof d->cfg.data_dir, "%s", f->dir);
    d->cfg.max_running = 0;
    d->cfg.gpus = 0;
    d->total_slots = 4;
    char cerr[256];
    d->cl = cluster_open(NULL, 4, 0, cerr, sizeof cerr);
    if (!d->cl)
        return -1;
    d->total_gpus = 0;
    d->hosts = 1;
    d->lc = (launcher_config){f->self, f->mpirun, "punch-train", "", "", ""};
    char err[256];
    snprintf(path, sizeof path, "%s/punchcard.db", f->dir);
    d->st = store_open(path, 2, err, sizeof err);
    if (!d->st)
        return -1;
    *state = f;
    return 0;
}

static void release(fixture *f, const char *id, int code);

static bool release_active(const store_job *job, void *arg)
{
    release(arg, job->id, 0);
    return true;
}

static int teardown(void **state)
{
    fixture *f = *state;
    store_fault_sim(NULL, NULL);
    /* Let every stand-in end, then reap the supervisors. */
    store_active_jobs(f->d.st, release_active, f);
    while (waitpid(-1, NULL, 0) > 0) {
    }
    monitor_cleanup();
    store_close(f->d.st);
    cluster_close(f->d.cl);
    bool removed = scratch_remove(f->dir);
    free(f);
    return removed ? 0 : -1;
}

/* One tick, with what it logs captured in f->log (and echoed). */
static void tick(fixture *f)
{
    char path[128];
    snprintf(path, sizeof path, "%s/tick.log", f->dir);
    fflush(stderr);
    int saved = dup(STDERR_FILENO);
    int fd = open(path, O_WRONLY | O_CREAT | O_TRUNC, 0600);
    assert_true(saved >= 0 && fd >= 0);
    assert_true(dup2(fd, STDERR_FILENO) >= 0);
    close(fd);
    monitor_tick(&f->d);
    assert_true(dup2(saved, STDERR_FILENO) >= 0);
    close(saved);
    FILE *fp = fopen(path, "r");
    assert_non_null(fp);
    size_t n = fread(f->log, 1, sizeof f->log - 1, fp);
    f->log[n] = '\0';
    fclose(fp);
    fputs(f->log, stderr);
}

static void assert_logged(const fixture *f, const char *text)
{
    if (!strstr(f->log, text))
        fail_msg("the tick did not log \"%s\"; it logged:\n%s", text, f->log);
}

/* One tick while the statements whose SQL contains `sql` fail: it must meet
 * the fault and log `want`. */
static void tick_faulty(fixture *f, const char *sql, const char *want)
{
    fault_on(f, sql);
    tick(f);
    fault_off(f);
    assert_logged(f, want);
}

static void submit(fixture *f, char id[STORE_ID_LEN + 1], const char *owner, int ranks,
                   long time_limit_s)
{
    /* The facts a submit keeps (api.c): a start and an end read no spec. */
    store_new_job nj = {.owner = owner, .name = "j", .trainer = "single", .spec = "{}",
                        .ranks = ranks, .workers = ranks, .threads = 1,
                        .time_limit_s = time_limit_s, .mem_per_rank = 1048576,
                        .checkpoint_keep = 1};
    assert_int_equal(store_job_submit(f->d.st, &nj, 0, 0, id), STORE_OK);
}

static store_job get(fixture *f, const char *id)
{
    store_job j;
    assert_int_equal(store_job_get(f->d.st, id, &j), STORE_OK);
    return j;
}

static job_state state_of(fixture *f, const char *id)
{
    store_job j = get(f, id);
    job_state s = j.state;
    store_job_clear(&j);
    return s;
}

static void run_file(const fixture *f, const char *id, const char *name, char *buf, size_t cap)
{
    assert_true(rundir_path(buf, cap, f->dir, id, name));
}

static bool exists(const fixture *f, const char *id, const char *name)
{
    char path[256];
    run_file(f, id, name, path, sizeof path);
    return access(path, F_OK) == 0;
}

/* Wait (at most 60 s) for the supervisor to write `name` in the run dir. */
static void wait_for(const fixture *f, const char *id, const char *name)
{
    for (int i = 0; i < 6000 && !exists(f, id, name); i++) {
        struct timespec ts = {0, 10 * 1000 * 1000};
        nanosleep(&ts, NULL);
    }
    assert_true(exists(f, id, name));
}

/* Tell the stand-in of job id to exit with `code` (atomically: it reads the
 * file as soon as it appears). */
static void release(fixture *f, const char *id, int code)
{
    char dir[256], text[16], err[256];
    run_file(f, id, NULL, dir, sizeof dir);
    if (access(dir, F_OK) != 0)
        return;
    snprintf(text, sizeof text, "%d\n", code);
    assert_true(rundir_write_atomic(dir, "release", text, strlen(text), err, sizeof err));
}

/* Job id is still starting, with no supervisor pid recorded. */
static void expect_starting_unrecorded(fixture *f, const char *id)
{
    store_job j = get(f, id);
    assert_int_equal(j.state, JOB_STARTING);
    assert_int_equal(j.supervisor_pid, 0);
    store_job_clear(&j);
}

/* Queue a job of alice's and tick it through to starting, its supervisor up
 * (supervisor.json written). */
static void start_launched(fixture *f, char id[STORE_ID_LEN + 1], int ranks, long time_limit_s)
{
    submit(f, id, "alice", ranks, time_limit_s);
    tick(f);
    assert_int_equal(state_of(f, id), JOB_STARTING);
    wait_for(f, id, "supervisor.json");
}

/* Queue a job and tick it through to running. */
static void start_running(fixture *f, char id[STORE_ID_LEN + 1], long time_limit_s)
{
    start_launched(f, id, 2, time_limit_s);
    tick(f);
    assert_int_equal(state_of(f, id), JOB_RUNNING);
}

typedef struct events {
    char to[8][16];
    int n;
} events;

static bool collect_event(double at, const char *from, const char *to, const char *detail,
                          void *arg)
{
    (void)at, (void)from, (void)detail;
    events *e = arg;
    if (e->n < 8)
        snprintf(e->to[e->n++], sizeof e->to[0], "%s", to);
    return true;
}

static void test_runs_to_success(void **state)
{
    fixture *f = *state;
    char id[STORE_ID_LEN + 1];
    unsigned long parses = spec_parse_count();
    start_running(f, id, 0);
    assert_logged(f, "running (mpirun session");
    store_job j = get(f, id);
    assert_true(j.supervisor_pid > 1);
    assert_true(j.sid > 1);
    store_job_clear(&j);
    release(f, id, 0);
    wait_for(f, id, "exit.json");
    tick(f);
    assert_logged(f, "succeeded");
    /* The memory ceiling and checkpoint_keep came from the store. */
    assert_int_equal(spec_parse_count(), parses);
    j = get(f, id);
    assert_int_equal(j.state, JOB_SUCCEEDED);
    assert_int_equal(j.checkpoint_keep, 1);
    assert_true(j.has_exit_code);
    assert_int_equal(j.exit_code, 0);
    assert_null(j.error);
    store_job_clear(&j);
    events e = {0};
    assert_int_equal(store_job_events(f->d.st, id, collect_event, &e), STORE_OK);
    assert_int_equal(e.n, 4);
    assert_string_equal(e.to[0], "queued");
    assert_string_equal(e.to[1], "starting");
    assert_string_equal(e.to[2], "running");
    assert_string_equal(e.to[3], "succeeded");
}

/* The job's allocation as stored (the JSON text), and its hostfile. */
static void assert_placed(fixture *f, const char *id, const char *hosts, const char *hostfile)
{
    store_job j = get(f, id);
    assert_non_null(j.hosts);
    assert_string_equal(j.hosts, hosts);
    store_job_clear(&j);
    char path[256], text[128] = "";
    run_file(f, id, "hostfile", path, sizeof path);
    FILE *fp = fopen(path, "r");
    assert_non_null(fp);
    size_t n = fread(text, 1, sizeof text - 1, fp);
    text[n] = '\0';
    fclose(fp);
    assert_string_equal(text, hostfile);
}

/* Several hosts (h1: 1 slot, h2: 2): each job gets its own slots and its
 * own hostfile; a job that fails with Open MPI losing h2 names h2, h2 is
 * marked down, and the next job goes to h1 once that is free, not to the
 * idle h2. */
/* Give the daemon the hosts of `text` (a hostfile), as at start-up. */
static void use_hosts(fixture *f, const char *text)
{
    daemon_ctx *d = &f->d;
    snprintf(d->cfg.hostfile, sizeof d->cfg.hostfile, "%s/hosts", f->dir);
    FILE *fp = fopen(d->cfg.hostfile, "w");
    assert_non_null(fp);
    assert_true(fputs(text, fp) >= 0);
    assert_int_equal(fclose(fp), 0);
    char err[256];
    cluster_close(d->cl);
    d->cl = cluster_open(d->cfg.hostfile, 0, 0, err, sizeof err);
    assert_non_null(d->cl);
    d->total_slots = cluster_total_slots(d->cl);
    d->hosts = cluster_hosts(d->cl);
    d->lc.hostfile = d->cfg.hostfile;
}

static void test_hosts(void **state)
{
    fixture *f = *state;
    daemon_ctx *d = &f->d;
    use_hosts(f, "h1 slots=1\nh2 slots=2\n");
    /* The failed job stays failed here; its requeue is
     * test_host_loss_requeue's. */
    d->cfg.host_loss_retries = 0;
    FILE *fp;
    char a[STORE_ID_LEN + 1], b[STORE_ID_LEN + 1], c[STORE_ID_LEN + 1];
    submit(f, a, "alice", 2, 0);
    submit(f, b, "bob", 1, 0);
    submit(f, c, "carol", 1, 0);
    tick(f);
    assert_int_equal(state_of(f, a), JOB_STARTING);
    assert_int_equal(state_of(f, b), JOB_STARTING);
    assert_int_equal(state_of(f, c), JOB_QUEUED);
    assert_placed(f, a, "[{\"host\":\"h2\",\"ranks\":2}]", "h2 slots=2\n");
    assert_placed(f, b, "[{\"host\":\"h1\",\"ranks\":1}]", "h1 slots=1\n");
    /* a's mpirun reports that it lost h2's daemon, then exits 255. */
    wait_for(f, a, "supervisor.json");
    char log[256];
    run_file(f, a, "train.log", log, sizeof log);
    fp = fopen(log, "a");
    assert_non_null(fp);
    fputs("ssh: connect to host h2 port 22: No route to host\n"
          "--------------------------------------------------------------------------\n"
          "ORTE was unable to reliably start one or more daemons.\n"
          "--------------------------------------------------------------------------\n",
          fp);
    assert_int_equal(fclose(fp), 0);
    release(f, a, 255);
    wait_for(f, a, "exit.json");
    tick(f);
    assert_int_equal(state_of(f, a), JOB_FAILED);
    store_job j = get(f, a);
    assert_string_equal(j.error, "host h2 failed: Open MPI could not start or keep its daemon");
    store_job_clear(&j);
    assert_logged(f, "host h2: down");
    /* h2 is idle but down: c waits for h1. */
    assert_int_equal(state_of(f, c), JOB_QUEUED);
    json_t *view = cluster_json(d->cl);
    json_t *h2 = json_array_get(json_object_get(view, "hosts"), 1);
    assert_string_equal(json_string_value(json_object_get(h2, "state")), "down");
    assert_int_equal(json_integer_value(json_object_get(view, "slots_used")), 1);
    json_decref(view);
    release(f, b, 0);
    wait_for(f, b, "exit.json");
    tick(f);
    assert_int_equal(state_of(f, b), JOB_SUCCEEDED);
    assert_int_equal(state_of(f, c), JOB_STARTING);
    assert_placed(f, c, "[{\"host\":\"h1\",\"ranks\":1}]", "h1 slots=1\n");
}

/* Job id's train.log says Open MPI lost `host`'s daemon; mpirun exits 255. */
static void lose_host(fixture *f, const char *id, const char *host)
{
    wait_for(f, id, "supervisor.json");
    char log[256];
    run_file(f, id, "train.log", log, sizeof log);
    FILE *fp = fopen(log, "a");
    assert_non_null(fp);
    fprintf(fp, "ssh: connect to host %s port 22: No route to host\n"
                "ORTE was unable to reliably start one or more daemons.\n", host);
    assert_int_equal(fclose(fp), 0);
    release(f, id, 255);
    wait_for(f, id, "exit.json");
}

static bool find_detail(double at, const char *from, const char *to, const char *detail,
                        void *arg)
{
    (void)at;
    const char **want = arg;
    if (detail && strcmp(from, "failed") == 0 && strcmp(to, "queued") == 0 &&
        strcmp(detail, *want) == 0)
        *want = NULL;
    return true;
}

/* A job that lost a host goes back to the queue by itself and starts on
 * the hosts left; once host_loss_retries requeues are spent it stays
 * failed. */
static void test_host_loss_requeue(void **state)
{
    fixture *f = *state;
    daemon_ctx *d = &f->d;
    use_hosts(f, "h1 slots=2\nh2 slots=2\nh3 slots=2\n");
    d->cfg.host_loss_retries = 1;
    char a[STORE_ID_LEN + 1];
    submit(f, a, "alice", 2, 0);
    tick(f);
    assert_placed(f, a, "[{\"host\":\"h1\",\"ranks\":2}]", "h1 slots=2\n");
    lose_host(f, a, "h1");
    tick(f);
    const char *want = "host h1 lost: requeued (1 of 1); no checkpoint was written, it "
                       "starts over";
    assert_int_equal(store_job_events(d->st, a, find_detail, &want), STORE_OK);
    assert_null(want);
    assert_logged(f, "host h1 lost: requeued");
    /* Queued again, and started at once on the hosts left. */
    tick(f);
    assert_int_equal(state_of(f, a), JOB_STARTING);
    assert_placed(f, a, "[{\"host\":\"h2\",\"ranks\":2}]", "h2 slots=2\n");
    lose_host(f, a, "h2");
    tick(f);
    assert_int_equal(state_of(f, a), JOB_FAILED);
    assert_logged(f, "not requeued: it was 1 times already");
}

/* A restarted daemon charges its re-adopted jobs to the slots their stored
 * allocations name, not to a fresh placement: with h1 grown to 3 slots, a
 * fresh packing would put a and b both on h1 and the next job on h2; the
 * stored one leaves h1 two free slots, where the next job goes. */
static void test_hosts_after_restart(void **state)
{
    fixture *f = *state;
    use_hosts(f, "h1 slots=1\nh2 slots=2\n");
    char a[STORE_ID_LEN + 1], b[STORE_ID_LEN + 1], c[STORE_ID_LEN + 1];
    submit(f, a, "alice", 2, 0);
    submit(f, b, "bob", 1, 0);
    tick(f);
    assert_placed(f, a, "[{\"host\":\"h2\",\"ranks\":2}]", "h2 slots=2\n");
    assert_placed(f, b, "[{\"host\":\"h1\",\"ranks\":1}]", "h1 slots=1\n");
    monitor_cleanup();
    use_hosts(f, "h1 slots=3\nh2 slots=2\n");
    submit(f, c, "carol", 1, 0);
    tick(f);
    assert_placed(f, c, "[{\"host\":\"h1\",\"ranks\":1}]", "h1 slots=1\n");
    json_t *view = cluster_json(f->d.cl);
    json_t *hosts = json_object_get(view, "hosts");
    assert_int_equal(json_integer_value(json_object_get(json_array_get(hosts, 0), "slots_used")),
                     2);
    assert_int_equal(json_integer_value(json_object_get(json_array_get(hosts, 1), "slots_used")),
                     2);
    json_decref(view);
}

static void submit_priority(fixture *f, char id[STORE_ID_LEN + 1], const char *owner,
                            int ranks, int priority)
{
    store_new_job nj = {.owner = owner, .name = "j", .trainer = "single", .spec = "{}",
                        .ranks = ranks, .workers = ranks, .threads = 1, .priority = priority,
                        .mem_per_rank = 1048576, .checkpoint_keep = 1};
    assert_int_equal(store_job_submit(f->d.st, &nj, 0, 0, id), STORE_OK);
}

static bool find_any(double at, const char *from, const char *to, const char *detail, void *arg)
{
    (void)at, (void)from, (void)to;
    const char **want = arg;
    if (*want && detail && strcmp(detail, *want) == 0)
        *want = NULL;
    return true;
}

static void assert_event(fixture *f, const char *id, const char *detail)
{
    const char *want = detail;
    assert_int_equal(store_job_events(f->d.st, id, find_any, &want), STORE_OK);
    if (want)
        fail_msg("job %s has no event \"%s\"", id, detail);
}

/* punchcardd restarted while a job it preempted is still ending: nothing of
 * the preemption is in the new process's memory, only the job's
 * preempted.json and the store. The restarted tick still shows the urgent
 * job waiting for the preemption, requeues the preempted job when it ends
 * (not failed), starts the urgent one, and says so when the preempted job
 * resumes from its checkpoint. */
static void test_preemption_across_restart(void **state)
{
    fixture *f = *state;
    char low[STORE_ID_LEN + 1], high[STORE_ID_LEN + 1];
    submit_priority(f, low, "bob", 4, 0);
    tick(f);
    wait_for(f, low, "supervisor.json");
    tick(f);
    assert_int_equal(state_of(f, low), JOB_RUNNING);
    submit_priority(f, high, "alice", 4, 5);
    /* What the previous process did before it stopped: the mark (its
     * SIGTERM is the stand-in's exit below) and the checkpoint written. */
    char dir[256], mark[128], err[256];
    run_file(f, low, NULL, dir, sizeof dir);
    snprintf(mark, sizeof mark, "{\"by\":\"%s\",\"priority\":5,\"at\":%f}", high,
             daemon_now());
    assert_true(rundir_write_atomic(dir, "preempted.json", mark, strlen(mark), err, sizeof err));
    char ckpt[256];
    run_file(f, low, "checkpoints", ckpt, sizeof ckpt);
    assert_int_equal(mkdir(ckpt, 0700), 0);
    assert_true(rundir_write_atomic(ckpt, "ckpt.bin", "x", 1, err, sizeof err));
    monitor_cleanup();
    assert_false(preemption_waiting(high));
    tick(f);
    assert_true(preemption_waiting(high));
    assert_int_equal(state_of(f, high), JOB_QUEUED);
    release(f, low, 1);
    wait_for(f, low, "exit.json");
    tick(f);
    assert_int_equal(state_of(f, low), JOB_QUEUED);
    char detail[64];
    snprintf(detail, sizeof detail, "preempted by %s (priority 5)", high);
    assert_event(f, low, detail);
    assert_false(exists(f, low, "preempted.json"));
    tick(f);
    assert_int_equal(state_of(f, high), JOB_STARTING);
    assert_false(preemption_waiting(high));
    release(f, high, 0);
    wait_for(f, high, "exit.json");
    tick(f);
    tick(f);
    assert_int_equal(state_of(f, high), JOB_SUCCEEDED);
    assert_int_equal(state_of(f, low), JOB_STARTING);
    assert_event(f, low, "resumed after preemption");
}

/* Without every active job the free resources are unknown, and without the
 * whole queue its order is: nothing starts that tick. */
static void test_fault_reading_jobs(void **state)
{
    fixture *f = *state;
    const char *faults[][2] = {
        {"state IN ('starting', 'running') ORDER BY seq", "cannot list the active jobs"},
        {"WHERE state = 'queued' ORDER BY", "cannot read the queue"},
    };
    char id[STORE_ID_LEN + 1];
    submit(f, id, "alice", 1, 0);
    for (size_t i = 0; i < sizeof faults / sizeof faults[0]; i++) {
        tick_faulty(f, faults[i][0], faults[i][1]);
        assert_int_equal(state_of(f, id), JOB_QUEUED);
        assert_false(exists(f, id, NULL));
    }
    tick(f);
    assert_int_equal(state_of(f, id), JOB_STARTING);
}

/* Every statement of leaving the queue: the spec read, the update, the
 * fair-share clock, the event, the commit. A failure leaves the job queued
 * (the transaction rolled back whole) and nothing launched. */
static void test_fault_leaving_queue(void **state)
{
    fixture *f = *state;
    const char *faults[] = {"SELECT spec FROM jobs", "SET state = 'starting'",
                            "UPDATE meta SET value = max(", "INSERT INTO events", "COMMIT"};
    char id[STORE_ID_LEN + 1];
    submit(f, id, "alice", 1, 0);
    for (size_t i = 0; i < sizeof faults / sizeof faults[0]; i++) {
        tick_faulty(f, faults[i], "left queued");
        store_job j = get(f, id);
        assert_int_equal(j.state, JOB_QUEUED);
        assert_true(isnan(j.started_at));
        store_job_clear(&j);
        assert_false(exists(f, id, NULL));
    }
    events e = {0};
    assert_int_equal(store_job_events(f->d.st, id, collect_event, &e), STORE_OK);
    assert_int_equal(e.n, 1);
    tick(f);
    assert_int_equal(state_of(f, id), JOB_STARTING);
}

/* The supervisor's identity fails to reach the store at launch, and again
 * when the next tick adopts it from supervisor.json: the job stays starting
 * (not failed as if its supervisor had vanished) until the store answers. */
static void test_fault_recording_supervisor(void **state)
{
    fixture *f = *state;
    char id[STORE_ID_LEN + 1];
    submit(f, id, "alice", 1, 0);
    fault_on(f, "SET supervisor_pid");
    tick(f);
    assert_logged(f, "adopting it next tick");
    wait_for(f, id, "supervisor.json");
    tick(f);
    fault_off(f);
    assert_logged(f, "could not record supervisor pid");
    expect_starting_unrecorded(f, id);
    tick(f);
    char path[256];
    run_file(f, id, NULL, path, sizeof path);
    rundir_supervisor sup;
    assert_true(rundir_read_supervisor(path, &sup));
    store_job j = get(f, id);
    assert_int_equal(j.state, JOB_RUNNING);
    assert_int_equal(j.supervisor_pid, sup.supervisor_pid);
    store_job_clear(&j);
    release(f, id, 0);
    wait_for(f, id, "exit.json");
    tick(f);
    assert_int_equal(state_of(f, id), JOB_SUCCEEDED);
}

static void test_fault_marking_running(void **state)
{
    fixture *f = *state;
    char id[STORE_ID_LEN + 1];
    start_launched(f, id, 1, 0);
    tick_faulty(f, "SET state = 'running'", "could not record it running");
    assert_int_equal(state_of(f, id), JOB_STARTING);
    tick(f);
    assert_int_equal(state_of(f, id), JOB_RUNNING);
}

/* The end of a job, failing at each statement of its transaction: the job
 * stays running (no half-recorded end), and the next tick records it from
 * the same exit.json. */
static void test_fault_recording_end(void **state)
{
    fixture *f = *state;
    char id[STORE_ID_LEN + 1];
    start_running(f, id, 0);
    release(f, id, 3);
    wait_for(f, id, "exit.json");
    const char *faults[] = {"SELECT state FROM jobs", "SET state = ?2", "INSERT INTO events",
                            "COMMIT"};
    for (size_t i = 0; i < sizeof faults / sizeof faults[0]; i++) {
        tick_faulty(f, faults[i], "ended failed but the store did not record it");
        store_job j = get(f, id);
        assert_int_equal(j.state, JOB_RUNNING);
        assert_true(isnan(j.finished_at));
        assert_false(j.has_exit_code);
        assert_null(j.error);
        store_job_clear(&j);
    }
    tick(f);
    store_job j = get(f, id);
    assert_int_equal(j.state, JOB_FAILED);
    assert_int_equal(j.exit_code, 3);
    /* The log's telling line is the supervisor's own: the stand-in says nothing. */
    assert_string_equal(j.error, "mpirun exited with code 3: punchcardd supervisor: mpirun "
                                 "ended: exit code 3, signal 0");
    store_job_clear(&j);
}

/* The time limit's stop request fails: nothing is signalled until it is
 * recorded, then the job is stopped and ends as timeout. */
static void test_fault_time_limit(void **state)
{
    fixture *f = *state;
    char id[STORE_ID_LEN + 1];
    start_running(f, id, 1);
    store_job j = get(f, id);
    while (daemon_now() < j.started_at + 1.2) {
        struct timespec ts = {0, 50 * 1000 * 1000};
        nanosleep(&ts, NULL);
    }
    store_job_clear(&j);
    tick_faulty(f, "SET stop_reason = coalesce", "could not record its time limit");
    j = get(f, id);
    assert_int_equal(j.state, JOB_RUNNING);
    assert_string_equal(j.stop_reason, "");
    store_job_clear(&j);
    assert_false(exists(f, id, "exit.json"));
    tick(f);
    assert_logged(f, "time limit of 1 s reached");
    wait_for(f, id, "exit.json");
    tick(f);
    j = get(f, id);
    assert_int_equal(j.state, JOB_TIMEOUT);
    assert_string_equal(j.error, "time limit of 1 s exceeded");
    store_job_clear(&j);
}

/* A cancel past the grace period: SIGKILL goes out although the store does
 * not record it, and the job still ends as cancelled. */
static void test_fault_recording_kill(void **state)
{
    fixture *f = *state;
    char path[128];
    snprintf(path, sizeof path, "%s/stubborn", f->dir);
    FILE *fp = fopen(path, "w");
    assert_non_null(fp);
    fclose(fp);
    f->d.cfg.kill_grace = 0;
    char id[STORE_ID_LEN + 1];
    start_running(f, id, 0);
    assert_int_equal(store_job_request_stop(f->d.st, id, "cancel", daemon_now()), STORE_OK);
    tick_faulty(f, "SET killed = 1", "SIGKILL to");
    assert_logged(f, "could not record the SIGKILL");
    store_job j = get(f, id);
    assert_false(j.killed);
    store_job_clear(&j);
    wait_for(f, id, "exit.json");
    tick(f);
    assert_int_equal(state_of(f, id), JOB_CANCELLED);
}

/* A queued job that no longer fits the cluster fails with the message a
 * submit would get; while that cannot be recorded it stays queued, and the
 * job behind it starts regardless. */
static void test_fault_failing_unfit_job(void **state)
{
    fixture *f = *state;
    char wide[STORE_ID_LEN + 1], narrow[STORE_ID_LEN + 1];
    submit(f, wide, "alice", 8, 0);
    submit(f, narrow, "bob", 1, 0);
    tick_faulty(f, "SET state = ?2", "could not fail it");
    assert_int_equal(state_of(f, wide), JOB_QUEUED);
    assert_int_equal(state_of(f, narrow), JOB_STARTING);
    tick(f);
    store_job j = get(f, wide);
    assert_int_equal(j.state, JOB_FAILED);
    assert_string_equal(j.error, "distributed.workers: the job needs 8 MPI ranks but this "
                                 "cluster has 4 slots; it could never run");
    store_job_clear(&j);
}

/* A job that left the queue but could not be launched, whose failure the
 * store does not record either: it stays starting without a supervisor,
 * neither relaunched nor failed early, within the launch grace period. */
static void test_fault_failing_start(void **state)
{
    fixture *f = *state;
    char runs[128], away[128];
    snprintf(runs, sizeof runs, "%s/runs", f->dir);
    snprintf(away, sizeof away, "%s/runs.away", f->dir);
    assert_int_equal(rename(runs, away), 0);
    FILE *fp = fopen(runs, "w"); /* a file where the run dirs go */
    assert_non_null(fp);
    fclose(fp);
    char id[STORE_ID_LEN + 1];
    submit(f, id, "alice", 1, 0);
    tick_faulty(f, "SET state = ?2", "could not start");
    assert_logged(f, "could not record the failure");
    expect_starting_unrecorded(f, id);
    tick(f);
    assert_int_equal(state_of(f, id), JOB_STARTING);
    assert_int_equal(unlink(runs), 0);
    assert_int_equal(rename(away, runs), 0);
}

/* A starting job with no supervisor anywhere (the daemon stopped between
 * leaving the queue and the fork, or as above) waits out the launch grace
 * period, then fails. */
static void test_launch_grace(void **state)
{
    fixture *f = *state;
    f->d.cfg.hold = true;
    char fresh[STORE_ID_LEN + 1], old[STORE_ID_LEN + 1];
    submit(f, fresh, "alice", 1, 0);
    submit(f, old, "alice", 1, 0);
    double now = daemon_now();
    assert_int_equal(store_job_mark_starting(f->d.st, fresh, NULL, NULL, now), STORE_OK);
    assert_int_equal(store_job_mark_starting(f->d.st, old, NULL, NULL, now - 60), STORE_OK);
    tick(f);
    assert_int_equal(state_of(f, fresh), JOB_STARTING);
    store_job j = get(f, old);
    assert_int_equal(j.state, JOB_FAILED);
    assert_string_equal(j.error, "supervisor ended without recording an exit status");
    store_job_clear(&j);
}

int main(int argc, char **argv)
{
    /* The launcher runs this binary as each job's supervisor. */
    if (argc >= 2 && strcmp(argv[1], "--supervise") == 0)
        return supervisor_main(argc - 2, argv + 2);
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_setup_teardown(test_runs_to_success, setup, teardown),
        cmocka_unit_test_setup_teardown(test_hosts, setup, teardown),
        cmocka_unit_test_setup_teardown(test_host_loss_requeue, setup, teardown),
        cmocka_unit_test_setup_teardown(test_hosts_after_restart, setup, teardown),
        cmocka_unit_test_setup_teardown(test_preemption_across_restart, setup, teardown),
        cmocka_unit_test_setup_teardown(test_fault_reading_jobs, setup, teardown),
        cmocka_unit_test_setup_teardown(test_fault_leaving_queue, setup, teardown),
        cmocka_unit_test_setup_teardown(test_fault_recording_supervisor, setup, teardown),
        cmocka_unit_test_setup_teardown(test_fault_marking_running, setup, teardown),
        cmocka_unit_test_setup_teardown(test_fault_recording_end, setup, teardown),
        cmocka_unit_test_setup_teardown(test_fault_time_limit, setup, teardown),
        cmocka_unit_test_setup_teardown(test_fault_recording_kill, setup, teardown),
        cmocka_unit_test_setup_teardown(test_fault_failing_unfit_job, setup, teardown),
        cmocka_unit_test_setup_teardown(test_fault_failing_start, setup, teardown),
        cmocka_unit_test_setup_teardown(test_launch_grace, setup, teardown),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
