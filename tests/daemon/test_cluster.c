/* test_cluster.c — the host table (cluster.h): the hostfile read into hosts
 * and slots (comments, a line without slots=, a repeated host, bad names,
 * no hosts), the local host without one, a host marked down and what
 * GET /api/v1/cluster shows of it, the probe's state machine run with real
 * child processes (a failing probe keeps the host down, one past its
 * timeout is killed and fails, one that succeeds brings the host up; %h is
 * the host; nothing is probed before the interval), hosts of a job that
 * failed without naming one probed at once, and the default probe command. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cmocka.h>

#include "cluster/cluster.h"
#include "scratch.h"

static char hostfile[SCRATCH_DIR_LEN + 16];

static void write_hostfile(const char *dir, const char *text)
{
    snprintf(hostfile, sizeof hostfile, "%s/hosts", dir);
    FILE *f = fopen(hostfile, "w");
    assert_non_null(f);
    assert_true(fputs(text, f) >= 0);
    assert_int_equal(fclose(f), 0);
}

static void test_hostfile(void **state)
{
    (void)state;
    char dir[SCRATCH_DIR_LEN], err[512];
    assert_true(scratch_create(dir, "cluster"));
    write_hostfile(dir, "# cluster\nnode1 slots=4\nnode2 slots=8 max_slots=8\nnode3\n\n"
                        "node1 slots=2\n");
    cluster *c = cluster_open(hostfile, 99, 2, err, sizeof err);
    assert_non_null(c);
    assert_int_equal(cluster_hosts(c), 3);
    assert_int_equal(cluster_total_slots(c), 15);
    assert_string_equal(cluster_names(c)[2], "node3");
    placement_cluster cap;
    cluster_capacity(c, &cap, true);
    assert_int_equal(cap.n_hosts, 3);
    assert_int_equal(cap.slots[0], 6); /* node1 twice: its slots add up */
    assert_int_equal(cap.slots[2], 1);
    assert_int_equal(cap.gpus[1], 2);
    cluster_close(c);
    write_hostfile(dir, "# nothing\n");
    assert_null(cluster_open(hostfile, 1, 0, err, sizeof err));
    assert_non_null(strstr(err, "no hosts"));
    write_hostfile(dir, "good slots=1\nbad;rm slots=1\n");
    assert_null(cluster_open(hostfile, 1, 0, err, sizeof err));
    assert_non_null(strstr(err, ":2:"));
    assert_null(cluster_open("/nonexistent/hosts", 1, 0, err, sizeof err));
    assert_non_null(strstr(err, "/nonexistent/hosts"));
    assert_true(scratch_remove(dir));
}

static void test_local_and_down(void **state)
{
    (void)state;
    char err[256];
    cluster *c = cluster_open(NULL, 3, 1, err, sizeof err);
    assert_non_null(c);
    assert_int_equal(cluster_hosts(c), 1);
    assert_string_equal(cluster_names(c)[0], "localhost");
    placement_cluster free_cap = {.n_hosts = 1, .slots = {1}, .gpus = {1}};
    cluster_set_used(c, &free_cap);
    assert_true(cluster_mark_down(c, "localhost", "job x: lost", 100.0));
    assert_false(cluster_mark_down(c, "localhost", "again", 101.0));
    assert_false(cluster_mark_down(c, "elsewhere", "unknown", 101.0));
    placement_cluster cap;
    cluster_capacity(c, &cap, true);
    assert_true(cap.down[0]);
    cluster_capacity(c, &cap, false);
    assert_false(cap.down[0]);
    json_t *j = cluster_json(c);
    assert_non_null(j);
    json_t *h = json_array_get(json_object_get(j, "hosts"), 0);
    assert_string_equal(json_string_value(json_object_get(h, "host")), "localhost");
    assert_int_equal(json_integer_value(json_object_get(h, "slots")), 3);
    assert_int_equal(json_integer_value(json_object_get(h, "slots_used")), 2);
    assert_int_equal(json_integer_value(json_object_get(h, "gpus_used")), 0);
    assert_string_equal(json_string_value(json_object_get(h, "state")), "down");
    assert_true(json_real_value(json_object_get(h, "down_since")) == 100.0);
    assert_string_equal(json_string_value(json_object_get(h, "reason")), "job x: lost");
    assert_int_equal(json_integer_value(json_object_get(j, "slots")), 3);
    assert_int_equal(json_integer_value(json_object_get(j, "slots_used")), 2);
    json_decref(j);
    cluster_close(c);
}

/* Run one probe to its end: wait for the only child and hand it over. */
static void reap_probe(cluster *c, double now)
{
    int status;
    pid_t pid = waitpid(-1, &status, 0);
    assert_true(pid > 0);
    assert_true(cluster_probe_reaped(c, pid, status, now));
}

static bool is_down(cluster *c)
{
    placement_cluster cap;
    cluster_capacity(c, &cap, true);
    return cap.down[1];
}

static void test_probe(void **state)
{
    (void)state;
    char dir[SCRATCH_DIR_LEN], err[512];
    assert_true(scratch_create(dir, "probe"));
    write_hostfile(dir, "h1 slots=1\nh2 slots=1\n");
    cluster *c = cluster_open(hostfile, 0, 0, err, sizeof err);
    assert_non_null(c);
    /* Nothing is down: nothing is probed. */
    cluster_probe_tick(c, "true", 5, 1000.0);
    assert_int_equal(waitpid(-1, NULL, WNOHANG), -1);
    assert_true(cluster_mark_down(c, "h2", "lost", 1000.0));
    /* Before the interval: no probe yet. */
    cluster_probe_tick(c, "true", 5, 1004.0);
    assert_int_equal(waitpid(-1, NULL, WNOHANG), -1);
    /* A failing probe: still down. */
    cluster_probe_tick(c, "exit 3", 5, 1005.0);
    reap_probe(c, 1006.0);
    assert_true(is_down(c));
    /* One past its timeout is killed, and fails. */
    cluster_probe_tick(c, "sleep 60", 5, 1010.0);
    cluster_probe_tick(c, "sleep 60", 5, 1010.0 + CLUSTER_PROBE_TIMEOUT_S);
    reap_probe(c, 1021.0);
    assert_true(is_down(c));
    /* %h is the host: this probe succeeds for h2 only, and brings it up. */
    cluster_probe_tick(c, "test %h = h2", 5, 1030.0);
    reap_probe(c, 1031.0);
    assert_false(is_down(c));
    /* A child that is not a probe is not the cluster's. */
    assert_false(cluster_probe_reaped(c, 1, 0, 1032.0));
    cluster_close(c);
    assert_true(scratch_remove(dir));
}

/* Hosts of a job that failed without naming one are probed at once: the
 * one that does not answer goes down, the other stays up. */
static void test_suspect(void **state)
{
    (void)state;
    char dir[SCRATCH_DIR_LEN], err[512];
    assert_true(scratch_create(dir, "suspect"));
    write_hostfile(dir, "h1 slots=1\nh2 slots=1\n");
    cluster *c = cluster_open(hostfile, 0, 0, err, sizeof err);
    assert_non_null(c);
    assert_true(cluster_suspect(c, "h1", "job j: orted lost"));
    assert_true(cluster_suspect(c, "h2", "job j: orted lost"));
    assert_false(cluster_suspect(c, "h2", "again"));
    assert_false(cluster_suspect(c, "h9", "unknown"));
    /* Probed now, not after the interval: only h1 answers. */
    cluster_probe_tick(c, "test %h = h1", 600, 1000.0);
    reap_probe(c, 1001.0);
    reap_probe(c, 1001.0);
    assert_true(is_down(c));
    placement_cluster cap;
    cluster_capacity(c, &cap, true);
    assert_false(cap.down[0]);
    json_t *j = cluster_json(c);
    assert_non_null(j);
    json_t *h2 = json_array_get(json_object_get(j, "hosts"), 1);
    assert_string_equal(json_string_value(json_object_get(h2, "reason")), "job j: orted lost");
    json_decref(j);
    /* A down host is not suspect: it waits for its interval. */
    assert_false(cluster_suspect(c, "h2", "again"));
    cluster_probe_tick(c, "true", 600, 1002.0);
    assert_int_equal(waitpid(-1, NULL, WNOHANG), -1);
    cluster_close(c);
    assert_true(scratch_remove(dir));
}

static void test_probe_command(void **state)
{
    (void)state;
    char cmd[256];
    cluster_probe_command("ping -c1 %h", "/x/agent", cmd, sizeof cmd);
    assert_string_equal(cmd, "ping -c1 %h");
    cluster_probe_command("", " /x/agent -q : rsh", cmd, sizeof cmd);
    assert_string_equal(cmd, "/x/agent -q %h true");
    cluster_probe_command(NULL, NULL, cmd, sizeof cmd);
    assert_string_equal(cmd, "ssh -o BatchMode=yes -o ConnectTimeout=5 %h true");
    cluster_probe_command("", " ", cmd, sizeof cmd);
    assert_string_equal(cmd, "ssh -o BatchMode=yes -o ConnectTimeout=5 %h true");
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_hostfile),
        cmocka_unit_test(test_local_and_down),
        cmocka_unit_test(test_probe),
        cmocka_unit_test(test_suspect),
        cmocka_unit_test(test_probe_command),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
