/* cgroup.c — a per-job memory cgroup, v2 or v1 (contract in cgroup.h). */
#include "run/cgroup.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

/* Write text to dir/file; false on any error. */
static bool cgroup_write(const char *dir, const char *file, const char *text)
{
    char path[4200];
    if (snprintf(path, sizeof path, "%s/%s", dir, file) >= (int)sizeof path)
        return false;
    int fd = open(path, O_WRONLY | O_CLOEXEC);
    if (fd < 0)
        return false;
    size_t len = strlen(text);
    bool ok = write(fd, text, len) == (ssize_t)len;
    return close(fd) == 0 && ok;
}

/* Does dir/file hold the word `word`, space-separated? */
static bool cgroup_has_word(const char *dir, const char *file, const char *word)
{
    char path[4200], buf[512];
    if (snprintf(path, sizeof path, "%s/%s", dir, file) >= (int)sizeof path)
        return false;
    FILE *f = fopen(path, "re");
    if (!f)
        return false;
    bool found = false;
    while (!found && fscanf(f, "%511s", buf) == 1)
        found = strcmp(buf, word) == 0;
    fclose(f);
    return found;
}

bool cgroup_parse_self_line(const char *text, int version, char *out, size_t cap)
{
    char line[4200];
    if (snprintf(line, sizeof line, "%s", text) >= (int)sizeof line)
        return false;
    line[strcspn(line, "\n")] = '\0';
    char *c1 = strchr(line, ':'), *c2 = c1 ? strchr(c1 + 1, ':') : NULL;
    if (!c2)
        return false;
    /* Both colons end their fields: "0::/path" is hierarchy "0" with no
     * controllers (cgroup v2). */
    *c1 = '\0';
    *c2 = '\0';
    char *ctrls = c1 + 1;
    bool found = false;
    if (version == 2)
        found = strcmp(line, "0") == 0 && ctrls[0] == '\0';
    else
        for (char *save = NULL, *t = strtok_r(ctrls, ",", &save); t && !found;
             t = strtok_r(NULL, ",", &save))
            found = strcmp(t, "memory") == 0;
    return found && snprintf(out, cap, "%s", c2 + 1) < (int)cap;
}

/* The calling process's cgroup path for the hierarchy of `version` (1:
 * the one with the memory controller) from /proc/self/cgroup. */
static bool cgroup_self_path(int version, char *out, size_t cap)
{
    FILE *f = fopen("/proc/self/cgroup", "re");
    if (!f)
        return false;
    char line[4200];
    bool found = false;
    while (!found && fgets(line, sizeof line, f))
        found = cgroup_parse_self_line(line, version, out, cap);
    fclose(f);
    return found;
}

/* Where the hierarchy of `version` is mounted, and the cgroup path its root
 * is (a container may see a subtree), from /proc/self/mountinfo. */
static bool cgroup_mount(int version, char *mnt, size_t mcap, char *root, size_t rcap)
{
    FILE *f = fopen("/proc/self/mountinfo", "re");
    if (!f)
        return false;
    char line[4200];
    bool found = false;
    while (!found && fgets(line, sizeof line, f)) {
        char r[2048], m[2048];
        const char *dash = strstr(line, " - ");
        if (!dash || sscanf(line, "%*s %*s %*s %2047s %2047s", r, m) != 2)
            continue;
        char type[64], opts[1024];
        if (sscanf(dash + 3, "%63s %*s %1023s", type, opts) != 2)
            continue;
        if (version == 2)
            found = strcmp(type, "cgroup2") == 0;
        else if (strcmp(type, "cgroup") == 0)
            for (char *save = NULL, *t = strtok_r(opts, ",", &save); t && !found;
                 t = strtok_r(NULL, ",", &save))
                found = strcmp(t, "memory") == 0;
        if (found)
            found = snprintf(mnt, mcap, "%s", m) < (int)mcap &&
                    snprintf(root, rcap, "%s", r) < (int)rcap;
    }
    fclose(f);
    return found;
}

/* The directory of the calling process's own cgroup in hierarchy `version`. */
static bool cgroup_self_dir(int version, char *dir, size_t cap)
{
    char mnt[2048], root[2048], path[2048];
    if (!cgroup_mount(version, mnt, sizeof mnt, root, sizeof root) ||
        !cgroup_self_path(version, path, sizeof path))
        return false;
    size_t rl = strcmp(root, "/") == 0 ? 0 : strlen(root);
    if (rl && strncmp(path, root, rl) != 0)
        return false;
    return snprintf(dir, cap, "%s%s", mnt, path + rl) < (int)cap;
}

/* Does dir/file exist (a cgroup's interface file)? */
static bool cgroup_has_file(const char *dir, const char *file)
{
    char path[4200];
    return snprintf(path, sizeof path, "%s/%s", dir, file) < (int)sizeof path &&
           access(path, F_OK) == 0;
}

/* Is `own` already a CGROUP_DAEMON_LEAF (systemd's DelegateSubgroup=daemon,
 * or an earlier move) whose parent hands, or now can hand, memory down? */
static bool cgroup_v2_in_leaf(const char *own)
{
    const char *slash = strrchr(own, '/');
    char parent[4096];
    if (!slash || strcmp(slash + 1, CGROUP_DAEMON_LEAF) != 0 ||
        snprintf(parent, sizeof parent, "%.*s", (int)(slash - own), own) >= (int)sizeof parent ||
        !cgroup_has_word(parent, "cgroup.controllers", "memory"))
        return false;
    return cgroup_has_word(parent, "cgroup.subtree_control", "memory") ||
           cgroup_write(parent, "cgroup.subtree_control", "+memory");
}

bool cgroup_v2_delegate(const char *own, long pid, char *err, size_t cap)
{
    if (cgroup_v2_in_leaf(own))
        return true;
    if (!cgroup_has_word(own, "cgroup.controllers", "memory")) {
        snprintf(err, cap, "the memory controller is not available in %s", own);
        return false;
    }
    if (cgroup_has_word(own, "cgroup.subtree_control", "memory"))
        return true; /* already handed down: jobs go beside the daemon */
    char leaf[4200], text[32];
    snprintf(text, sizeof text, "%ld", pid);
    if (snprintf(leaf, sizeof leaf, "%s/" CGROUP_DAEMON_LEAF, own) >= (int)sizeof leaf ||
        (mkdir(leaf, 0755) != 0 && errno != EEXIST)) {
        snprintf(err, cap, "cannot make %s: %s", leaf, strerror(errno));
        return false;
    }
    if (!cgroup_write(leaf, "cgroup.procs", text)) {
        snprintf(err, cap, "cannot move into %s: %s", leaf, strerror(errno));
        rmdir(leaf);
        return false;
    }
    if (cgroup_write(own, "cgroup.subtree_control", "+memory"))
        return true;
    /* Other processes share the cgroup (a login shell's, say): undo. */
    int e = errno;
    cgroup_write(own, "cgroup.procs", text);
    rmdir(leaf);
    snprintf(err, cap, "cannot enable the memory controller for %s's children: %s", own,
             strerror(e));
    return false;
}

bool cgroup_daemon_setup(char *dir, size_t dcap, char *err, size_t cap)
{
    char own[4096];
    if (!cgroup_self_dir(2, own, sizeof own) || !cgroup_has_file(own, "cgroup.controllers")) {
        snprintf(err, cap, "no cgroup v2 hierarchy for this process");
        return false;
    }
    if (!cgroup_v2_delegate(own, (long)getpid(), err, cap))
        return false;
    /* Where jobs go: own, or its parent when own was already the leaf. */
    if (!cgroup_self_dir(2, own, sizeof own) || !cgroup_v2_job_parent(own, dir, dcap)) {
        snprintf(err, cap, "cannot read back this process's cgroup");
        return false;
    }
    return true;
}

bool cgroup_v2_job_parent(const char *own, char *parent, size_t cap)
{
    const char *slash = strrchr(own, '/');
    if (slash && strcmp(slash + 1, CGROUP_DAEMON_LEAF) == 0) {
        int len = (int)(slash - own);
        if (snprintf(parent, cap, "%.*s", len, own) >= (int)cap)
            return false;
        if (cgroup_has_word(parent, "cgroup.subtree_control", "memory"))
            return true;
    }
    return snprintf(parent, cap, "%s", own) < (int)cap;
}

bool cgroup_v2_job_create(cgroup_job *cg, const char *own, const char *name, double limit_bytes)
{
    char parent[4096], limit[32];
    snprintf(limit, sizeof limit, "%.0f", limit_bytes);
    cg->dir[0] = '\0';
    /* The parent must hand the memory controller to its children. */
    if (!cgroup_v2_job_parent(own, parent, sizeof parent) ||
        !cgroup_has_word(parent, "cgroup.controllers", "memory") ||
        (!cgroup_has_word(parent, "cgroup.subtree_control", "memory") &&
         !cgroup_write(parent, "cgroup.subtree_control", "+memory")) ||
        snprintf(cg->dir, sizeof cg->dir, "%s/job-%s", parent, name) >= (int)sizeof cg->dir ||
        (mkdir(cg->dir, 0700) != 0 && errno != EEXIST)) {
        cg->dir[0] = '\0';
        return false;
    }
    cg->version = 2;
    if (cgroup_write(cg->dir, "memory.max", limit) &&
        cgroup_write(cg->dir, "memory.swap.max", "0"))
        return true;
    if (cgroup_has_word(cg->dir, "memory.max", limit))
        return true; /* a host without swap accounting */
    rmdir(cg->dir);
    cg->dir[0] = '\0';
    return false;
}

bool cgroup_job_create(cgroup_job *cg, const char *name, double limit_bytes, char *err,
                       size_t cap)
{
    char parent[4096], limit[32], v2[4096] = "";
    snprintf(limit, sizeof limit, "%.0f", limit_bytes);
    if (cgroup_self_dir(2, parent, sizeof parent)) {
        if (cgroup_v2_job_create(cg, parent, name, limit_bytes))
            return true;
        snprintf(v2, sizeof v2, "%s", parent);
    }
    cg->dir[0] = '\0';
    if (cgroup_self_dir(1, parent, sizeof parent) &&
        snprintf(cg->dir, sizeof cg->dir, "%s/%s", parent, name) < (int)sizeof cg->dir &&
        (mkdir(cg->dir, 0700) == 0 || errno == EEXIST)) {
        cg->version = 1;
        /* memsw (memory + swap) only exists with swap accounting; set
         * after the memory limit, which it may not undercut. */
        if (cgroup_write(cg->dir, "memory.limit_in_bytes", limit)) {
            cgroup_write(cg->dir, "memory.memsw.limit_in_bytes", limit);
            return true;
        }
        rmdir(cg->dir);
    }
    /* errno is not reported: the last call that failed says little about
     * which of the two hierarchies was missing. */
    if (v2[0])
        snprintf(err, cap, "no writable memory cgroup: the memory controller is not "
                           "delegated to this process's cgroup v2 %s (nor a v1 memory "
                           "hierarchy writable)", v2);
    else
        snprintf(err, cap, "no writable memory cgroup (cgroup v2 with the memory controller "
                           "delegated, or v1's memory hierarchy) under this process's own");
    cg->dir[0] = '\0';
    return false;
}

bool cgroup_job_enter(const cgroup_job *cg)
{
    return cg->dir[0] && cgroup_write(cg->dir, "cgroup.procs", "0");
}

long cgroup_job_oom_kills(const cgroup_job *cg)
{
    if (!cg->dir[0])
        return 0;
    char path[4200], key[64];
    snprintf(path, sizeof path, "%s/%s", cg->dir,
             cg->version == 2 ? "memory.events" : "memory.oom_control");
    FILE *f = fopen(path, "re");
    if (!f)
        return 0;
    long n = 0, v;
    while (fscanf(f, "%63s %ld", key, &v) == 2)
        if (strcmp(key, "oom_kill") == 0)
            n = v;
    fclose(f);
    return n;
}

/* The value of key in a "key value" file (key NULL: its first number);
 * -1 when absent. */
static double cgroup_read_value(const char *dir, const char *file, const char *key)
{
    char path[4200], k[64];
    snprintf(path, sizeof path, "%s/%s", dir, file);
    FILE *f = fopen(path, "re");
    if (!f)
        return -1;
    double v = -1, x;
    if (!key) {
        if (fscanf(f, "%lf", &x) == 1)
            v = x;
    } else {
        while (fscanf(f, "%63s %lf", k, &x) == 2)
            if (strcmp(k, key) == 0)
                v = x;
    }
    fclose(f);
    return v;
}

void cgroup_job_usage(const cgroup_job *cg, double *cpu_s, double *peak_bytes)
{
    *cpu_s = *peak_bytes = -1;
    if (!cg->dir[0])
        return;
    if (cg->version == 2) {
        double usec = cgroup_read_value(cg->dir, "cpu.stat", "usage_usec");
        *cpu_s = usec >= 0 ? usec / 1e6 : -1;
        *peak_bytes = cgroup_read_value(cg->dir, "memory.peak", NULL);
    } else {
        *peak_bytes = cgroup_read_value(cg->dir, "memory.max_usage_in_bytes", NULL);
    }
}

void cgroup_job_remove(cgroup_job *cg)
{
    if (cg->dir[0])
        rmdir(cg->dir);
    cg->dir[0] = '\0';
}
