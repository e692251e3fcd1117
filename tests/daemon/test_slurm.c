/* test_slurm.c — the sbatch command and batch script for a job, and
 * Slurm's answers read back (slurm.h), on text in the form Slurm 22.05
 * prints it (squeue and scontrol captured from Debian's 22.05.8 on this
 * machine): squeue's lines, `scontrol show job` for ended jobs and for one
 * Slurm forgot, `sbatch --parsable`, and the errors of a client whose
 * slurmctld is down. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cmocka.h>

#include "run/launcher.h"
#include "sched/slurm.h"

static size_t argv_len(char **v)
{
    size_t n = 0;
    while (v[n])
        n++;
    return n;
}

/* v is n arguments long, each want's where want has one (NULL: not
 * checked here). */
static void expect_argv(char **v, const char *const *want, size_t n)
{
    assert_int_equal(argv_len(v), n);
    for (size_t i = 0; i < n; i++)
        if (want[i])
            assert_string_equal(v[i], want[i]);
}

#define EXPECT_ARGV(v, ...)                                                                       \
    expect_argv((v), (const char *const[]){__VA_ARGS__},                                          \
                sizeof((const char *const[]){__VA_ARGS__}) / sizeof(const char *))

static void test_sbatch_argv_full(void **state)
{
    (void)state;
    slurm_site site = {"/opt/slurm/bin", "gpu", "ml-lab", "long", " --requeue  --mail-type=NONE "};
    slurm_job job = {"a1b2", "alice", "/shared/pc/runs/a1b2", 3, 2, 1, 3601, -2, 3000.5 * 1048576};
    char **v = slurm_sbatch_argv(&site, &job);
    assert_non_null(v);
    const char *want[] = {
        "/opt/slurm/bin/sbatch", "--parsable", "--job-name=pc-a1b2", "--ntasks=3",
        "--cpus-per-task=2", "--mem-per-cpu=1501M", "--gres=gpu:1", "--time=0-01:01:00", "--nice=200",
        "--output=/shared/pc/runs/a1b2/slurm.out", "--chdir=/shared/pc/runs/a1b2",
        "--comment=punchcard id=a1b2 user=alice", "--requeue", "--partition=gpu",
        "--account=ml-lab", "--qos=long", "--requeue", "--mail-type=NONE",
        "/shared/pc/runs/a1b2/slurm.sh",
    };
    expect_argv(v, want, sizeof want / sizeof want[0]);
    launcher_argv_free(v);
}

/* No site settings, no GPUs, no limit, priority at or above 0: only what
 * every job needs; sbatch from PATH. A day and more of time limit uses the
 * days field; an owner's control characters do not reach Slurm. */
static void test_sbatch_argv_minimal(void **state)
{
    (void)state;
    slurm_site site = {"", NULL, "", NULL, NULL};
    slurm_job job = {"j9", "bob\nx", "/d/j9", 1, 1, 0, 0, 5};
    char **v = slurm_sbatch_argv(&site, &job);
    assert_non_null(v);
    EXPECT_ARGV(v, "sbatch", NULL, NULL, "--ntasks=1", NULL, "--output=/d/j9/slurm.out", NULL,
                "--comment=punchcard id=j9 user=bob?x", "--requeue", "/d/j9/slurm.sh");
    for (size_t i = 0; v[i]; i++) {
        assert_null(strstr(v[i], "--nice"));
        assert_null(strstr(v[i], "--time"));
        assert_null(strstr(v[i], "--gres"));
        assert_null(strstr(v[i], "--mem"));
    }
    launcher_argv_free(v);
    job.time_limit_s = 2 * 86400 + 59;
    v = slurm_sbatch_argv(NULL, &job);
    assert_non_null(v);
    assert_string_equal(v[5], "--time=2-00:01:00");
    launcher_argv_free(v);
}

static void test_squeue_argv(void **state)
{
    (void)state;
    slurm_site site = {"/usr/local/bin", NULL, NULL, NULL, NULL};
    char **v = slurm_squeue_argv(&site);
    assert_non_null(v);
    EXPECT_ARGV(v, "/usr/local/bin/squeue", "--me", NULL, "--states=all", "--format=%i|%T|%j|%r");
    launcher_argv_free(v);
}

/* Write `text` to a file and run it with bash under `env` ("" or
 * "NAME=value "); its stdout into out. */
static void run_script(const char *text, const char *env, char *out, size_t outlen)
{
    char path[] = "/tmp/test_slurm_XXXXXX";
    int fd = mkstemp(path);
    assert_true(fd >= 0);
    FILE *f = fdopen(fd, "w");
    assert_non_null(f);
    fputs(text, f);
    assert_int_equal(fclose(f), 0);
    char run[256];
    snprintf(run, sizeof run, "env %s bash %s", env, path);
    FILE *p = popen(run, "r");
    assert_non_null(p);
    size_t n = fread(out, 1, outlen - 1, p);
    out[n] = '\0';
    assert_int_equal(pclose(p), 0);
    unlink(path);
}

/* The script execs the command word by word, quoted so a run directory or
 * an argument with spaces and quotes reaches it unchanged: bash runs it
 * and prints the words back. */
static void test_batch_script_quotes(void **state)
{
    (void)state;
    slurm_job job = {"q1", "carol", "/tmp", 1, 1, 0, 0, 0};
    char *cmd[] = {"printf", "<%s>", "it's", "a b", "$HOME", "`x`", NULL};
    char *text = slurm_batch_script(&job, cmd);
    assert_non_null(text);
    assert_memory_equal(text, "#!/bin/bash\n", 12);
    assert_non_null(strstr(text, "cd '/tmp' || exit 1\n"));
    assert_non_null(strstr(text, "exec 'printf' '<%s>' 'it'\\''s'"));
    char out[256] = "";
    run_script(text, "", out, sizeof out);
    assert_string_equal(out, "<it's><a b><$HOME><`x`>");
    free(text);
}

/* Run again after a requeue, the command gets --resume when the run
 * directory holds a checkpoint, and not on a first run or without one. */
static void test_batch_script_resume(void **state)
{
    (void)state;
    char dir[] = "/tmp/test_slurm_run_XXXXXX";
    assert_non_null(mkdtemp(dir));
    slurm_job job = {"q2", "carol", dir, 1, 1, 0, 0, 0};
    char *cmd[] = {"printf", "<%s>", "train", NULL};
    char *text = slurm_batch_script(&job, cmd);
    assert_non_null(text);
    char out[256] = "";
    run_script(text, "SLURM_RESTART_COUNT=1", out, sizeof out);
    assert_string_equal(out, "<train>");
    char ckpt[256];
    snprintf(ckpt, sizeof ckpt, "%s/checkpoints", dir);
    assert_int_equal(mkdir(ckpt, 0700), 0);
    snprintf(ckpt, sizeof ckpt, "%s/" SLURM_CHECKPOINT, dir);
    FILE *f = fopen(ckpt, "w");
    assert_non_null(f);
    assert_int_equal(fclose(f), 0);
    run_script(text, "SLURM_RESTART_COUNT=0", out, sizeof out);
    assert_string_equal(out, "<train>");
    run_script(text, "SLURM_RESTART_COUNT=2", out, sizeof out);
    assert_string_equal(out, "<train><--resume>");
    assert_int_equal(unlink(ckpt), 0);
    snprintf(ckpt, sizeof ckpt, "%s/checkpoints", dir);
    assert_int_equal(rmdir(ckpt), 0);
    assert_int_equal(rmdir(dir), 0);
    free(text);
}

static void test_parse_submit(void **state)
{
    (void)state;
    assert_int_equal(slurm_parse_submit("42\n"), 42);
    assert_int_equal(slurm_parse_submit("1187;cluster\n"), 1187);
    assert_int_equal(slurm_parse_submit(""), 0);
    assert_int_equal(slurm_parse_submit("sbatch: error: Batch job submission failed\n"), 0);
    assert_int_equal(slurm_parse_submit("12abc\n"), 0);
}

static void test_unreachable(void **state)
{
    (void)state;
    assert_true(slurm_unreachable(
        "sbatch: error: Batch job submission failed: Unable to contact slurm controller "
        "(connect failure)\n"));
    assert_true(slurm_unreachable(
        "slurm_load_jobs error: Unable to contact slurm controller (connect failure)\n"));
    assert_true(slurm_unreachable(
        "squeue: error: Munge encode failed: Failed to access \"/run/munge/munge.socket.2\": "
        "No such file or directory\n"));
    assert_false(slurm_unreachable(
        "sbatch: error: Batch job submission failed: Requested node configuration is not "
        "available\n"));
    assert_false(slurm_unreachable("slurm_load_jobs error: Invalid job id specified\n"));
}

static void test_state_map(void **state)
{
    (void)state;
    static const struct {
        const char *word;
        slurm_phase phase;
        job_state final;
    } cases[] = {
        {"PENDING", SLURM_WAITING, JOB_QUEUED},     {"REQUEUED", SLURM_WAITING, JOB_QUEUED},
        {"CONFIGURING", SLURM_WAITING, JOB_QUEUED}, {"RUNNING", SLURM_ACTIVE, JOB_RUNNING},
        {"COMPLETING", SLURM_ACTIVE, JOB_RUNNING},  {"COMPLETED", SLURM_ENDED, JOB_SUCCEEDED},
        {"FAILED", SLURM_ENDED, JOB_FAILED},        {"CANCELLED", SLURM_ENDED, JOB_CANCELLED},
        {"CANCELLED+", SLURM_ENDED, JOB_CANCELLED}, {"CANCELLED by 0", SLURM_ENDED, JOB_CANCELLED},
        {"TIMEOUT", SLURM_ENDED, JOB_TIMEOUT},      {"DEADLINE", SLURM_ENDED, JOB_TIMEOUT},
        {"NODE_FAIL", SLURM_ENDED, JOB_FAILED},     {"PREEMPTED", SLURM_ENDED, JOB_FAILED},
        {"OUT_OF_MEMORY", SLURM_ENDED, JOB_FAILED}, {"BOOT_FAIL", SLURM_ENDED, JOB_FAILED},
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        job_state final = JOB_STATE_COUNT;
        assert_int_equal(slurm_state_map(cases[i].word, &final), cases[i].phase);
        assert_int_equal(final, cases[i].final);
    }
    assert_int_equal(slurm_state_map("PEND", NULL), SLURM_UNKNOWN);
    assert_int_equal(slurm_state_map("RUNNINGX", NULL), SLURM_UNKNOWN);
    assert_int_equal(slurm_state_map("", NULL), SLURM_UNKNOWN);
}

/* squeue --me --noheader --states=all --format=%i|%T|%j|%r (captured
 * from slurmctld 22.05.8, this machine): a pending job behind another, a
 * running one, finished ones still remembered; an array member, and a job
 * whose name holds the separator. */
static const char squeue_text[] =
    "37|PENDING|pc-k3x9|Priority\n"
    "36|PENDING|wrap|Resources\n"
    "35|RUNNING|pc-a|b|None\n"
    "34|TIMEOUT|pc-t0|TimeLimit\n"
    "33|COMPLETED|pc-ok|None\n"
    "32_1|COMPLETED|arr|None\n"
    "31|FAILED|pc-f|NonZeroExitCode";

static void test_parse_squeue(void **state)
{
    (void)state;
    slurm_status s[8];
    assert_int_equal(slurm_parse_squeue(squeue_text, s, 8), 6);
    assert_int_equal(s[0].job_id, 37);
    assert_string_equal(s[0].state, "PENDING");
    assert_string_equal(s[0].reason, "Priority");
    assert_string_equal(s[0].name, "pc-k3x9");
    assert_string_equal(s[2].name, "pc-a|b");
    assert_string_equal(s[1].reason, "Resources");
    assert_int_equal(s[2].job_id, 35);
    assert_string_equal(s[2].state, "RUNNING");
    assert_string_equal(s[2].reason, "");
    assert_string_equal(s[3].reason, "TimeLimit");
    assert_int_equal(s[3].exit_code, -1);
    assert_int_equal(s[5].job_id, 31);
    assert_string_equal(s[5].reason, "NonZeroExitCode");
    assert_int_equal(slurm_parse_squeue(squeue_text, s, 2), 2);
    assert_int_equal(slurm_parse_squeue("", s, 8), 0);
    assert_int_equal(slurm_parse_squeue("garbage\n|x|y|z\n12|RUNNING|None\n", s, 8), 0);
}

/* scontrol show job, captured from slurmctld 22.05.8 on this machine. */
static const char scontrol_failed[] =
    "JobId=31 JobName=pc-x\n"
    "   UserId=root(0) GroupId=root(0) MCS_label=N/A\n"
    "   Priority=4294901759 Nice=0 Account=(null) QOS=(null)\n"
    "   JobState=FAILED Reason=NonZeroExitCode Dependency=(null)\n"
    "   Requeue=1 Restarts=0 BatchFlag=1 Reboot=0 ExitCode=1:0\n"
    "   RunTime=00:00:03 TimeLimit=00:01:00 TimeMin=N/A\n"
    "   SubmitTime=2026-11-25T14:14:18 EligibleTime=2026-11-25T14:14:18\n"
    "   AccrueTime=Unknown\n"
    "   StartTime=Unknown EndTime=Unknown Deadline=N/A\n"
    "   Partition=main AllocNode:Sid=localhost:3303\n"
    "   ReqNodeList=(null) ExcNodeList=(null)\n"
    "   NodeList=\n"
    "   NumNodes=1 NumCPUs=1 NumTasks=1 CPUs/Task=1 ReqB:S:C:T=0:0:*:*\n"
    "   Command=run1/s.sh\n"
    "   WorkDir=/tmp/slurmhelper/exp/run1\n"
    "   Comment=punchcard id=x user=alice \n"
    "   StdErr=/tmp/slurmhelper/exp/run1/slurm.out\n"
    "   StdOut=/tmp/slurmhelper/exp/run1/slurm.out\n"
    "   Power=\n";

static const char scontrol_timeout[] =
    "JobId=34 JobName=pc-t0\n"
    "   JobState=TIMEOUT Reason=TimeLimit Dependency=(null)\n"
    "   Requeue=1 Restarts=0 BatchFlag=1 Reboot=0 ExitCode=0:15\n";

static const char scontrol_cancelled[] =
    "JobId=36 JobName=pc-c1\n"
    "   JobState=CANCELLED Reason=None Dependency=(null)\n"
    "   Requeue=1 Restarts=0 BatchFlag=1 Reboot=0 ExitCode=0:15\n";

static void test_parse_scontrol(void **state)
{
    (void)state;
    slurm_status s;
    assert_true(slurm_parse_scontrol(scontrol_failed, &s));
    assert_int_equal(s.job_id, 31);
    assert_string_equal(s.state, "FAILED");
    assert_string_equal(s.reason, "NonZeroExitCode");
    assert_int_equal(s.exit_code, 1);
    assert_int_equal(s.exit_signal, 0);
    char line[200];
    slurm_error_line(&s, line, sizeof line);
    assert_string_equal(line, "Slurm: FAILED (NonZeroExitCode), exit code 1");

    assert_true(slurm_parse_scontrol(scontrol_timeout, &s));
    job_state final;
    assert_int_equal(slurm_state_map(s.state, &final), SLURM_ENDED);
    assert_int_equal(final, JOB_TIMEOUT);
    slurm_error_line(&s, line, sizeof line);
    assert_string_equal(line, "Slurm: TIMEOUT (TimeLimit), signal 15");

    assert_true(slurm_parse_scontrol(scontrol_cancelled, &s));
    assert_string_equal(s.reason, "");
    slurm_error_line(&s, line, sizeof line);
    assert_string_equal(line, "Slurm: CANCELLED, signal 15");

    assert_false(slurm_parse_scontrol("slurm_load_jobs error: Invalid job id specified\n", &s));
    assert_false(slurm_parse_scontrol("", &s));
}

/* An error line never overflows, however small the buffer. */
static void test_error_line_truncates(void **state)
{
    (void)state;
    slurm_status s = {.job_id = 7, .state = "OUT_OF_MEMORY", .reason = "OutOfMemory",
                      .exit_code = 0, .exit_signal = 9};
    char line[12];
    slurm_error_line(&s, line, sizeof line);
    assert_string_equal(line, "Slurm: OUT_");
    char full[80];
    slurm_error_line(&s, full, sizeof full);
    assert_string_equal(full, "Slurm: OUT_OF_MEMORY (OutOfMemory), signal 9");
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_sbatch_argv_full),   cmocka_unit_test(test_sbatch_argv_minimal),
        cmocka_unit_test(test_squeue_argv),
        cmocka_unit_test(test_batch_script_quotes),
        cmocka_unit_test(test_batch_script_resume),
        cmocka_unit_test(test_parse_submit),       cmocka_unit_test(test_unreachable),
        cmocka_unit_test(test_state_map),          cmocka_unit_test(test_parse_squeue),
        cmocka_unit_test(test_parse_scontrol),     cmocka_unit_test(test_error_line_truncates),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
