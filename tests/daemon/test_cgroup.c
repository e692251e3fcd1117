/* test_cgroup.c — cgroup v2 delegation (cgroup.h): on a plain directory laid
 * out like cgroupfs, which files punchcardd writes and in which order (move
 * itself into OWN/daemon, then +memory in OWN/cgroup.subtree_control), that
 * it undoes the move when the kernel refuses the controller, and that jobs'
 * cgroups go beside the daemon's leaf with their memory.max. With
 * `--kernel` it does the same on a real cgroup2 hierarchy mounted in a
 * private mount namespace (root, and the memory controller on v2), or exits
 * 77 saying why not. */
#include <errno.h>
#include <fcntl.h>
#include <sched.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mount.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cmocka.h>

#include "run/cgroup.h"
#include "scratch.h"

/* Write text to dir/file, creating it (the fake tree's "kernel"). */
static void put(const char *dir, const char *file, const char *text)
{
    char path[512];
    snprintf(path, sizeof path, "%s/%s", dir, file);
    FILE *f = fopen(path, "w");
    assert_non_null(f);
    fputs(text, f);
    assert_int_equal(fclose(f), 0);
}

/* The contents of dir/file ("" when absent). */
static const char *get(const char *dir, const char *file)
{
    static char buf[256];
    char path[512];
    snprintf(path, sizeof path, "%s/%s", dir, file);
    buf[0] = '\0';
    FILE *f = fopen(path, "r");
    if (f) {
        size_t n = fread(buf, 1, sizeof buf - 1, f);
        buf[n] = '\0';
        fclose(f);
    }
    return buf;
}

/* A cgroup directory as the kernel makes it: its interface files. */
static void fake_cgroup(const char *dir, const char *controllers)
{
    assert_true(mkdir(dir, 0755) == 0 || errno == EEXIST);
    put(dir, "cgroup.controllers", controllers);
    put(dir, "cgroup.subtree_control", "");
    put(dir, "cgroup.procs", "");
}

static void test_delegate_moves_then_enables(void **state)
{
    (void)state;
    char own[SCRATCH_DIR_LEN], leaf[128], err[512];
    assert_true(scratch_create(own, "cgroup"));
    fake_cgroup(own, "cpu io memory pids\n");
    snprintf(leaf, sizeof leaf, "%s/daemon", own);
    fake_cgroup(leaf, "");
    assert_true(cgroup_v2_delegate(own, 4242, err, sizeof err));
    assert_string_equal(get(leaf, "cgroup.procs"), "4242");
    assert_string_equal(get(own, "cgroup.subtree_control"), "+memory");
    assert_string_equal(get(own, "cgroup.procs"), ""); /* not moved back */

    /* Jobs go beside the leaf, with their ceiling. */
    put(own, "cgroup.subtree_control", "memory\n"); /* as the kernel reads back */
    char parent[256];
    assert_true(cgroup_v2_job_parent(leaf, parent, sizeof parent));
    assert_string_equal(parent, own);
    char job[128];
    snprintf(job, sizeof job, "%s/job-abc", own);
    fake_cgroup(job, "memory\n");
    put(job, "memory.max", "");
    put(job, "memory.swap.max", "");
    cgroup_job cg;
    assert_true(cgroup_v2_job_create(&cg, leaf, "abc", 1073741824.0));
    assert_string_equal(cg.dir, job);
    assert_int_equal(cg.version, 2);
    assert_string_equal(get(job, "memory.max"), "1073741824");
    assert_string_equal(get(job, "memory.swap.max"), "0");
    /* Once delegated, a second start writes nothing. */
    put(leaf, "cgroup.procs", "");
    assert_true(cgroup_v2_delegate(own, 99, err, sizeof err));
    assert_string_equal(get(leaf, "cgroup.procs"), "");
    assert_true(scratch_remove(own));
}

static void test_refused_controller_moves_back(void **state)
{
    (void)state;
    char own[SCRATCH_DIR_LEN], leaf[128], err[512];
    assert_true(scratch_create(own, "cgroup"));
    fake_cgroup(own, "memory\n");
    snprintf(leaf, sizeof leaf, "%s/daemon", own);
    fake_cgroup(leaf, "");
    /* The kernel refuses the write (EBUSY with other processes): here, a
     * subtree_control that cannot be opened for writing. */
    char sc[128];
    snprintf(sc, sizeof sc, "%s/cgroup.subtree_control", own);
    assert_int_equal(unlink(sc), 0);
    assert_int_equal(mkdir(sc, 0755), 0);
    assert_false(cgroup_v2_delegate(own, 4242, err, sizeof err));
    assert_non_null(strstr(err, "cannot enable the memory controller"));
    assert_string_equal(get(own, "cgroup.procs"), "4242");
    assert_int_equal(rmdir(sc), 0);
    /* A job's parent stays the process's own cgroup. */
    char parent[256];
    assert_true(cgroup_v2_job_parent(own, parent, sizeof parent));
    assert_string_equal(parent, own);
    assert_true(scratch_remove(own));
}

static void test_no_memory_controller_changes_nothing(void **state)
{
    (void)state;
    char own[SCRATCH_DIR_LEN], leaf[128], err[512];
    assert_true(scratch_create(own, "cgroup"));
    fake_cgroup(own, "cpu io pids\n");
    assert_false(cgroup_v2_delegate(own, 4242, err, sizeof err));
    assert_non_null(strstr(err, "memory controller is not available"));
    snprintf(leaf, sizeof leaf, "%s/daemon", own);
    assert_int_equal(access(leaf, F_OK), -1);
    assert_string_equal(get(own, "cgroup.subtree_control"), "");
    cgroup_job cg;
    assert_false(cgroup_v2_job_create(&cg, own, "abc", 1e9));
    assert_string_equal(cg.dir, "");
    assert_true(scratch_remove(own));
}

/* systemd >= 254's DelegateSubgroup=daemon starts punchcardd in the leaf:
 * it only enables the controller above it, and moves nothing. */
static void test_started_in_leaf(void **state)
{
    (void)state;
    char own[SCRATCH_DIR_LEN], leaf[128], err[512], parent[256];
    assert_true(scratch_create(own, "cgroup"));
    fake_cgroup(own, "memory\n");
    snprintf(leaf, sizeof leaf, "%s/daemon", own);
    fake_cgroup(leaf, "");
    assert_true(cgroup_v2_delegate(leaf, 4242, err, sizeof err));
    assert_string_equal(get(own, "cgroup.subtree_control"), "+memory");
    assert_string_equal(get(leaf, "cgroup.procs"), "");
    char nested[160];
    snprintf(nested, sizeof nested, "%s/daemon", leaf);
    assert_int_equal(access(nested, F_OK), -1);
    put(own, "cgroup.subtree_control", "memory\n");
    assert_true(cgroup_v2_job_parent(leaf, parent, sizeof parent));
    assert_string_equal(parent, own);
    assert_true(scratch_remove(own));
}

static void test_leaf_without_delegation_is_own(void **state)
{
    (void)state;
    char own[SCRATCH_DIR_LEN], leaf[128], parent[256];
    assert_true(scratch_create(own, "cgroup"));
    fake_cgroup(own, "memory\n");
    snprintf(leaf, sizeof leaf, "%s/daemon", own);
    fake_cgroup(leaf, "memory\n");
    /* A cgroup merely named "daemon" whose parent hands nothing down. */
    assert_true(cgroup_v2_job_parent(leaf, parent, sizeof parent));
    assert_string_equal(parent, leaf);
    assert_true(scratch_remove(own));
}

/* /proc/self/cgroup's lines. Until 2026-11-26 "0::/path" was never taken
 * as the v2 hierarchy (the first colon stayed in the ID), so on a pure v2
 * host (an Ubuntu 24.04 GPU machine) punchcardd never found its own cgroup
 * and no job got a memory ceiling. */
static void test_self_line(void **state)
{
    (void)state;
    char out[256];
    assert_true(cgroup_parse_self_line("0::/process_api/9b65\n", 2, out, sizeof out));
    assert_string_equal(out, "/process_api/9b65");
    assert_true(cgroup_parse_self_line("0::/", 2, out, sizeof out));
    assert_string_equal(out, "/");
    assert_false(cgroup_parse_self_line("0::/x", 1, out, sizeof out));
    assert_false(cgroup_parse_self_line("1:name=systemd:/x", 2, out, sizeof out));
    assert_false(cgroup_parse_self_line("10::/x", 2, out, sizeof out));
    assert_true(cgroup_parse_self_line("4:memory:/user.slice", 1, out, sizeof out));
    assert_string_equal(out, "/user.slice");
    assert_true(cgroup_parse_self_line("7:cpu,memory,pids:/a:b", 1, out, sizeof out));
    assert_string_equal(out, "/a:b");
    assert_false(cgroup_parse_self_line("5:cpu,cpuacct:/a", 1, out, sizeof out));
    assert_false(cgroup_parse_self_line("garbage", 2, out, sizeof out));
    assert_false(cgroup_parse_self_line("0::/much/too/long", 2, out, 4));
}

/* ---- the real kernel ---------------------------------------------------- */

static int kernel_skip(const char *why)
{
    printf("SKIP: %s\n", why);
    return 77;
}

/* In a child in cgroup T of a private cgroup2 mount: delegate, then make a
 * job's cgroup; exit 0 if the kernel shows what cgroup.h promises. */
static int kernel_child(const char *t)
{
    char err[512], leaf[512], job[512], buf[64];
    if (!cgroup_v2_delegate(t, (long)getpid(), err, sizeof err)) {
        fprintf(stderr, "delegate: %s\n", err);
        return 1;
    }
    snprintf(leaf, sizeof leaf, "%s/daemon", t);
    snprintf(buf, sizeof buf, "%ld\n", (long)getpid());
    cgroup_job cg;
    if (strcmp(get(leaf, "cgroup.procs"), buf) != 0 ||
        !strstr(get(t, "cgroup.subtree_control"), "memory") ||
        !cgroup_v2_job_create(&cg, leaf, "k", 64.0 * 1048576)) {
        fprintf(stderr, "not delegated: procs %s, subtree %s\n", get(leaf, "cgroup.procs"),
                get(t, "cgroup.subtree_control"));
        return 1;
    }
    snprintf(job, sizeof job, "%s/job-k", t);
    bool ok = strcmp(cg.dir, job) == 0 && strcmp(get(job, "memory.max"), "67108864\n") == 0;
    if (!ok)
        fprintf(stderr, "job cgroup %s, memory.max %s\n", cg.dir, get(job, "memory.max"));
    cgroup_job_remove(&cg);
    return ok ? 0 : 1;
}

static int kernel_test(void)
{
    if (geteuid() != 0)
        return kernel_skip("needs root to mount a cgroup2 hierarchy");
    if (unshare(CLONE_NEWNS) != 0)
        return kernel_skip("cannot make a private mount namespace (unshare)");
    if (mount(NULL, "/", NULL, MS_REC | MS_PRIVATE, NULL) != 0)
        return kernel_skip("cannot make mounts private");
    char root[SCRATCH_DIR_LEN];
    if (!scratch_create(root, "cgroup2"))
        return kernel_skip("no scratch directory");
    if (mount("none", root, "cgroup2", 0, NULL) != 0) {
        rmdir(root);
        return kernel_skip("the kernel refuses to mount cgroup2 here");
    }
    int rc;
    char t[256];
    snprintf(t, sizeof t, "%s/punch-test-%ld", root, (long)getpid());
    if (!strstr(get(root, "cgroup.controllers"), "memory")) {
        rc = kernel_skip("the memory controller is bound to cgroup v1 on this host");
    } else if (mkdir(t, 0755) != 0) {
        rc = kernel_skip("cannot make a cgroup in the v2 root");
    } else {
        pid_t child = fork();
        if (child == 0) {
            char pid[32];
            snprintf(pid, sizeof pid, "%ld", (long)getpid());
            put(t, "cgroup.procs", pid);
            _exit(kernel_child(t));
        }
        int st = 0;
        rc = child > 0 && waitpid(child, &st, 0) == child && WIFEXITED(st) &&
                     WEXITSTATUS(st) == 0
                 ? 0
                 : 1;
        char leaf[300];
        snprintf(leaf, sizeof leaf, "%s/daemon", t);
        rmdir(leaf);
        rmdir(t);
        printf("%s: delegation on a real cgroup2 hierarchy\n", rc == 0 ? "PASS" : "FAIL");
    }
    umount(root);
    rmdir(root);
    return rc;
}

int main(int argc, char **argv)
{
    if (argc > 1 && strcmp(argv[1], "--kernel") == 0)
        return kernel_test();
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_delegate_moves_then_enables),
        cmocka_unit_test(test_refused_controller_moves_back),
        cmocka_unit_test(test_no_memory_controller_changes_nothing),
        cmocka_unit_test(test_started_in_leaf),
        cmocka_unit_test(test_leaf_without_delegation_is_own),
        cmocka_unit_test(test_self_line),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
