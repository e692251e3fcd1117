/* test_launcher.c — the mpirun command a job runs (launcher_mpirun_argv):
 * on the local host shared memory only and no hostfile, as always; with a
 * cluster hostfile the job's own RUNDIR/hostfile filled in order
 * (--map-by slot) and TCP between hosts; mpirun_args appended after the
 * daemon's arguments and before the engine, and a btl they set replacing
 * the daemon's (Open MPI refuses a parameter given twice). Signals: a
 * process and a session are signalled only while their pid still names the
 * process that started at the recorded time. */
#include <setjmp.h>
#include <signal.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cmocka.h>

#include "run/launcher.h"

/* Index of the first argument equal to a, then b (b NULL: a alone); -1. */
static int find(char **argv, const char *a, const char *b)
{
    for (int i = 0; argv[i]; i++)
        if (strcmp(argv[i], a) == 0 && (!b || (argv[i + 1] && strcmp(argv[i + 1], b) == 0)))
            return i;
    return -1;
}

static int count(char **argv, const char *a)
{
    int n = 0;
    for (int i = 0; argv[i]; i++)
        n += strcmp(argv[i], a) == 0;
    return n;
}

static void test_local_host(void **state)
{
    (void)state;
    launcher_config lc = {"/self", "/usr/bin/mpirun", "/bin/punch-train", "", "/data", "", ""};
    char **argv = launcher_mpirun_argv(&lc, "/runs/abc", 3, 1, NULL, 0, NULL);
    assert_non_null(argv);
    assert_string_equal(argv[0], "/usr/bin/mpirun");
    assert_true(find(argv, "-np", "3") > 0);
    int btl = find(argv, "btl", "self,vader");
    assert_true(btl > 0);
    assert_string_equal(argv[btl - 1], "--mca");
    assert_int_equal(find(argv, "--hostfile", NULL), -1);
    /* Root jobs only when punchcardd was told to allow them. */
    assert_int_equal(find(argv, "--allow-run-as-root", NULL), -1);
    launcher_argv_free(argv);
    lc.root_jobs = true;
    argv = launcher_mpirun_argv(&lc, "/runs/abc", 3, 1, NULL, 0, NULL);
    assert_true(find(argv, "--allow-run-as-root", NULL) > 0);
    lc.root_jobs = false;
    assert_int_equal(find(argv, "--map-by", NULL), -1);
    launcher_argv_free(argv);
}

static void test_hosts(void **state)
{
    (void)state;
    launcher_config lc = {"/self", "mpirun", "/bin/punch-train", "/etc/hosts.all", "/data", "",
                          NULL};
    char **argv = launcher_mpirun_argv(&lc, "/runs/abc", 4, 2, NULL, 0, NULL);
    assert_non_null(argv);
    /* The job's allocation, not the cluster's hostfile. */
    assert_true(find(argv, "--hostfile", "/runs/abc/hostfile") > 0);
    assert_int_equal(find(argv, "/etc/hosts.all", NULL), -1);
    assert_true(find(argv, "--map-by", "slot") > 0);
    assert_true(find(argv, "btl", "self,vader,tcp") > 0);
    launcher_argv_free(argv);
}

static void test_mpirun_args(void **state)
{
    (void)state;
    launcher_config lc = {"/self", "mpirun", "/bin/punch-train", "/h", "/data", "",
                          "  --mca btl_tcp_if_include 10.231.0.0/24\t-x  FOO "};
    char **argv = launcher_mpirun_argv(&lc, "/r", 2, 1, "0,1", 0, NULL);
    assert_non_null(argv);
    int extra = find(argv, "btl_tcp_if_include", "10.231.0.0/24");
    assert_true(extra > 0);
    assert_string_equal(argv[extra - 1], "--mca");
    /* After the daemon's own arguments, before the engine. */
    assert_true(find(argv, "--map-by", "slot") < extra);
    assert_true(find(argv, "-x", "CUDA_VISIBLE_DEVICES") < extra);
    assert_true(find(argv, "-x", "FOO") > extra);
    assert_true(find(argv, "/bin/punch-train", NULL) > find(argv, "-x", "FOO"));
    assert_true(find(argv, "btl", "self,vader,tcp") > 0);
    launcher_argv_free(argv);
    /* A btl of their own: the daemon passes none. */
    lc.mpirun_args = "--mca btl self,tcp";
    argv = launcher_mpirun_argv(&lc, "/r", 2, 1, NULL, 0, NULL);
    assert_non_null(argv);
    assert_int_equal(count(argv, "btl"), 1);
    assert_true(find(argv, "btl", "self,tcp") > 0);
    launcher_argv_free(argv);
    /* btl as another parameter's value is not a btl setting. */
    lc.mpirun_args = "-x btl";
    argv = launcher_mpirun_argv(&lc, "/r", 2, 1, NULL, 0, NULL);
    assert_true(find(argv, "btl", "self,vader,tcp") > 0);
    launcher_argv_free(argv);
}

/* Every rank of a CPU job carries its share of the job's ceiling to any host
 * (-x PUNCH_RANK_MEMORY_MAX=BYTES, before the engine); a GPU job's and a
 * job without a ceiling carry none. */
static void test_rank_memory_max(void **state)
{
    (void)state;
    const double gib = 1024.0 * 1024 * 1024;
    assert_true(launcher_rank_memory_max(12 * gib, 3, NULL) == 4 * gib);
    assert_true(launcher_rank_memory_max(12 * gib, 3, "") == 4 * gib);
    /* At least 2 GiB: libraries and OpenBLAS's buffers count too. */
    assert_true(launcher_rank_memory_max(3 * gib, 3, NULL) == 2 * gib);
    assert_true(launcher_rank_memory_max(1 * gib, 3, NULL) == 1 * gib);
    assert_true(launcher_rank_memory_max(12 * gib, 3, "0") == 0);
    assert_true(launcher_rank_memory_max(0, 3, NULL) == 0);
    launcher_config lc = {"/self", "mpirun", "/bin/punch-train", "/h", "/data", "", ""};
    char **argv = launcher_mpirun_argv(&lc, "/r", 3, 1, NULL, 2147483648.0, NULL);
    assert_non_null(argv);
    int at = find(argv, "-x", "PUNCH_RANK_MEMORY_MAX=2147483648");
    assert_true(at > 0);
    assert_true(find(argv, "/bin/punch-train", NULL) > at);
    launcher_argv_free(argv);
    argv = launcher_mpirun_argv(&lc, "/r", 3, 1, NULL, 0, NULL);
    assert_non_null(argv);
    for (int i = 0; argv[i]; i++)
        assert_null(strstr(argv[i], "PUNCH_RANK_MEMORY_MAX"));
    launcher_argv_free(argv);
}

/* OpenBLAS's own thread server never starts in a rank (found on a 16-core
 * GPU host, where it held 2.2 GB of data and a CPU job crashed under its
 * 2 GiB RLIMIT_DATA share): every job, with or without a ceiling, GPU or
 * not, hands -x OPENBLAS_NUM_THREADS=1 to its ranks before the engine. */
static void test_openblas_one_thread(void **state)
{
    (void)state;
    launcher_config lc = {"/self", "mpirun", "/bin/punch-train", "/h", "/data", "", ""};
    const double ceilings[] = {0, 2147483648.0};
    const char *gpus[] = {NULL, "0"};
    for (int c = 0; c < 2; c++)
        for (int g = 0; g < 2; g++) {
            char **argv = launcher_mpirun_argv(&lc, "/r", 3, 1, gpus[g], ceilings[c], NULL);
            assert_non_null(argv);
            int at = find(argv, "-x", "OPENBLAS_NUM_THREADS=1");
            assert_true(at > 0);
            assert_true(find(argv, "/bin/punch-train", NULL) > at);
            launcher_argv_free(argv);
        }
}

/* A child in a session of its own, with a second process in it; its start time. */
static pid_t session_child(long long *start)
{
    int ready[2];
    assert_int_equal(pipe(ready), 0);
    pid_t pid = fork();
    assert_true(pid >= 0);
    if (pid == 0) {
        setsid();
        if (fork() == 0) {
            close(ready[0]);
            close(ready[1]);
            pause();
            _exit(0);
        }
        close(ready[0]);
        if (write(ready[1], "x", 1) != 1)
            _exit(1);
        pause();
        _exit(0);
    }
    close(ready[1]);
    char c;
    assert_int_equal(read(ready[0], &c, 1), 1);
    close(ready[0]);
    char st;
    assert_true(launcher_proc_stat(pid, start, &st, NULL));
    return pid;
}

static void test_signals_need_the_start_time(void **state)
{
    (void)state;
    long long start;
    pid_t pid = session_child(&start);
    /* The same pid with another start time: a stranger, left alone. */
    assert_int_equal(launcher_signal_session(pid, start + 1, SIGKILL), -1);
    assert_false(launcher_signal_verified(pid, start + 1, SIGKILL));
    assert_int_equal(launcher_signal_session(pid, -1, SIGKILL), -1);
    assert_true(launcher_alive(pid, start));
    /* Its own start time: the leader and the other member of its session. */
    assert_true(launcher_signal_verified(pid, start, 0));
    assert_int_equal(launcher_signal_session(pid, start, SIGKILL), 2);
    int status;
    assert_int_equal(waitpid(pid, &status, 0), pid);
    assert_true(WIFSIGNALED(status) && WTERMSIG(status) == SIGKILL);
    /* Reaped: nothing holds the number any more. */
    assert_int_equal(launcher_signal_session(pid, start, SIGKILL), -1);
    assert_false(launcher_signal_verified(pid, start, SIGKILL));
}

/* A parameter-server job runs under --enable-recovery (its server trains
 * on without a dead worker); an allreduce job, and one without a trainer
 * name, do not. */
static void test_recovery_for_async_trainers(void **state)
{
    (void)state;
    launcher_config lc = {"/self", "mpirun", "/bin/punch-train", "", "/data", "", ""};
    const char *trainers[] = {"downpour", "eamsgd", "allreduce", "single", NULL};
    for (int i = 0; i < 5; i++) {
        char **argv = launcher_mpirun_argv(&lc, "/runs/abc", 3, 1, NULL, 0, trainers[i]);
        assert_non_null(argv);
        assert_int_equal(find(argv, "--enable-recovery", NULL) > 0, i < 2);
        launcher_argv_free(argv);
    }
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_local_host),
        cmocka_unit_test(test_hosts),
        cmocka_unit_test(test_mpirun_args),
        cmocka_unit_test(test_rank_memory_max),
        cmocka_unit_test(test_openblas_one_thread),
        cmocka_unit_test(test_signals_need_the_start_time),
        cmocka_unit_test(test_recovery_for_async_trainers),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
