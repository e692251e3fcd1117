/* cluster.c — the host table, its use and health, and host probes
 * (contract in cluster.h). */
#include "cluster/cluster.h"

#include <ctype.h>
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#include "log.h"

#define CLUSTER_NAME_LEN 256

typedef struct cluster_host {
    char name[CLUSTER_NAME_LEN];
    int slots, gpus;
    /* Under the mutex: */
    int slots_used, gpus_used;
    bool down;
    bool suspect; /* up, but a job on it failed without naming a host: probe now */
    double down_since;
    char reason[320];
    pid_t probe_pid;      /* 0: no probe running */
    double probe_started; /* of the running probe, else of the last one */
} cluster_host;

struct cluster {
    pthread_mutex_t mu;
    int n;
    int total_slots;
    const char *names[PLACEMENT_MAX_HOSTS];
    cluster_host host[PLACEMENT_MAX_HOSTS];
};

static bool cluster_name_ok(const char *s)
{
    if (!*s)
        return false;
    for (; *s; s++)
        if (!isalnum((unsigned char)*s) && !strchr(".-_:", *s))
            return false;
    return true;
}

/* Add slots to host `name`, appending it if new. */
static bool cluster_add(cluster *c, const char *name, int slots, int gpus, char *err,
                        size_t errlen)
{
    for (int i = 0; i < c->n; i++)
        if (strcmp(c->host[i].name, name) == 0) {
            c->host[i].slots += slots;
            return true;
        }
    if (c->n == PLACEMENT_MAX_HOSTS || strlen(name) >= CLUSTER_NAME_LEN ||
        !cluster_name_ok(name)) {
        snprintf(err, errlen, "host \"%.60s\": %s", name,
                 c->n == PLACEMENT_MAX_HOSTS ? "too many hosts" : "not a host name");
        return false;
    }
    cluster_host *h = &c->host[c->n];
    snprintf(h->name, sizeof h->name, "%s", name);
    h->slots = slots;
    h->gpus = gpus;
    c->names[c->n] = h->name;
    c->n++;
    return true;
}

/* Read "NAME [slots=N] ..." lines; # starts a comment. */
static bool cluster_read_hostfile(cluster *c, const char *path, int gpus, char *err,
                                  size_t errlen)
{
    FILE *f = fopen(path, "r");
    if (!f) {
        snprintf(err, errlen, "--hostfile %s: %s", path, strerror(errno));
        return false;
    }
    char line[1024], why[400];
    int lineno = 0;
    bool ok = true;
    while (ok && fgets(line, sizeof line, f)) {
        lineno++;
        line[strcspn(line, "#")] = '\0';
        char *save = NULL, *name = strtok_r(line, " \t\r\n", &save);
        if (!name)
            continue;
        int slots = 1;
        for (char *tok = strtok_r(NULL, " \t\r\n", &save); tok;
             tok = strtok_r(NULL, " \t\r\n", &save))
            if (strncmp(tok, "slots=", 6) == 0)
                slots = atoi(tok + 6) > 0 ? atoi(tok + 6) : 1;
        ok = cluster_add(c, name, slots, gpus, why, sizeof why);
        if (!ok)
            snprintf(err, errlen, "--hostfile %s:%d: %s", path, lineno, why);
    }
    fclose(f);
    if (ok && c->n == 0) {
        snprintf(err, errlen, "--hostfile %s: no hosts", path);
        ok = false;
    }
    return ok;
}

cluster *cluster_open(const char *hostfile, int slots, int gpus, char *err, size_t errlen)
{
    cluster *c = calloc(1, sizeof *c);
    if (!c) {
        snprintf(err, errlen, "out of memory");
        return NULL;
    }
    bool ok = hostfile && hostfile[0] ? cluster_read_hostfile(c, hostfile, gpus, err, errlen)
                                      : cluster_add(c, "localhost", slots, gpus, err, errlen);
    if (!ok || pthread_mutex_init(&c->mu, NULL) != 0) {
        if (ok)
            snprintf(err, errlen, "pthread_mutex_init failed");
        free(c);
        return NULL;
    }
    for (int i = 0; i < c->n; i++)
        c->total_slots += c->host[i].slots;
    return c;
}

void cluster_close(cluster *c)
{
    if (!c)
        return;
    pthread_mutex_destroy(&c->mu);
    free(c);
}

int cluster_hosts(const cluster *c) { return c->n; }

int cluster_total_slots(const cluster *c) { return c->total_slots; }

const char *const *cluster_names(const cluster *c) { return c->names; }

void cluster_capacity(cluster *c, placement_cluster *out, bool with_down)
{
    out->n_hosts = c->n;
    for (int i = 0; i < c->n; i++) {
        out->slots[i] = c->host[i].slots;
        out->gpus[i] = c->host[i].gpus;
        out->down[i] = false;
        out->mem[i] = -1;
    }
    if (!with_down)
        return;
    pthread_mutex_lock(&c->mu);
    for (int i = 0; i < c->n; i++)
        out->down[i] = c->host[i].down;
    pthread_mutex_unlock(&c->mu);
}

void cluster_set_used(cluster *c, const placement_cluster *free_cap)
{
    pthread_mutex_lock(&c->mu);
    for (int i = 0; i < c->n && i < free_cap->n_hosts; i++) {
        c->host[i].slots_used = c->host[i].slots - free_cap->slots[i];
        c->host[i].gpus_used = c->host[i].gpus - free_cap->gpus[i];
    }
    pthread_mutex_unlock(&c->mu);
}

static cluster_host *cluster_find(cluster *c, const char *name)
{
    for (int i = 0; i < c->n; i++)
        if (strcmp(c->host[i].name, name) == 0)
            return &c->host[i];
    return NULL;
}

bool cluster_mark_down(cluster *c, const char *name, const char *reason, double now)
{
    pthread_mutex_lock(&c->mu);
    cluster_host *h = cluster_find(c, name);
    bool changed = h && !h->down;
    if (changed) {
        h->down = true;
        h->down_since = now;
        /* The interval counts from now: the host just failed. */
        h->probe_started = now;
        snprintf(h->reason, sizeof h->reason, "%s", reason);
    }
    pthread_mutex_unlock(&c->mu);
    return changed;
}

bool cluster_suspect(cluster *c, const char *name, const char *reason)
{
    pthread_mutex_lock(&c->mu);
    cluster_host *h = cluster_find(c, name);
    bool changed = h && !h->down && !h->suspect && h->probe_pid == 0;
    if (changed) {
        h->suspect = true;
        snprintf(h->reason, sizeof h->reason, "%s", reason);
    }
    pthread_mutex_unlock(&c->mu);
    return changed;
}

bool cluster_host_health(cluster *c, const char *name, bool *down, bool *checking)
{
    pthread_mutex_lock(&c->mu);
    cluster_host *h = cluster_find(c, name);
    if (h) {
        *down = h->down;
        *checking = h->suspect;
    }
    pthread_mutex_unlock(&c->mu);
    return h != NULL;
}

/* cmd with every %h replaced by host (heap; NULL when out of memory). */
static char *cluster_expand(const char *cmd, const char *host)
{
    size_t n = 1;
    for (const char *p = cmd; *p; p++)
        n += (p[0] == '%' && p[1] == 'h') ? strlen(host) : 1;
    char *out = malloc(n);
    if (!out)
        return NULL;
    char *o = out;
    for (const char *p = cmd; *p; p++) {
        if (p[0] == '%' && p[1] == 'h') {
            o = stpcpy(o, host);
            p++;
        } else {
            *o++ = *p;
        }
    }
    *o = '\0';
    return out;
}

/* Fork `sh -c cmd` in its own process group, output discarded. */
static pid_t cluster_spawn(const char *cmd)
{
    pid_t pid = fork();
    if (pid != 0)
        return pid;
    /* Child of a multithreaded process: async-signal-safe calls only. */
    setpgid(0, 0);
    int null = open("/dev/null", O_RDWR);
    if (null < 0)
        _exit(126);
    dup2(null, STDIN_FILENO);
    dup2(null, STDOUT_FILENO);
    dup2(null, STDERR_FILENO);
    syscall(SYS_close_range, 3U, ~0U, 0U);
    sigset_t none;
    sigemptyset(&none);
    sigprocmask(SIG_SETMASK, &none, NULL);
    execl("/bin/sh", "sh", "-c", cmd, (char *)NULL);
    _exit(127);
}

void cluster_probe_tick(cluster *c, const char *probe_cmd, int interval_s, double now)
{
    pthread_mutex_lock(&c->mu);
    for (int i = 0; i < c->n; i++) {
        cluster_host *h = &c->host[i];
        if (!h->down && !h->suspect)
            continue;
        if (h->probe_pid > 0) {
            if (now >= h->probe_started + CLUSTER_PROBE_TIMEOUT_S) {
                /* Reaped by the monitor, which reports a failed probe. */
                kill(-h->probe_pid, SIGKILL);
                kill(h->probe_pid, SIGKILL);
            }
            continue;
        }
        if (h->down && now < h->probe_started + interval_s)
            continue;
        char *cmd = cluster_expand(probe_cmd, h->name);
        pid_t pid = cmd ? cluster_spawn(cmd) : -1;
        free(cmd);
        h->probe_started = now;
        if (pid < 0) {
            log_error("host %s: cannot start its probe: %s", h->name, strerror(errno));
            continue;
        }
        h->probe_pid = pid;
        log_debug("host %s: probe started (pid %d)", h->name, (int)pid);
    }
    pthread_mutex_unlock(&c->mu);
}

/* The probe of a suspect host ended: down when it failed, else up as it was. */
static void cluster_suspect_settled(cluster_host *h, bool ok, double now)
{
    h->suspect = false;
    if (ok) {
        log_info("host %s: answers its probe; it stays up", h->name);
        h->reason[0] = '\0';
        return;
    }
    h->down = true;
    h->down_since = now;
    h->probe_started = now;
    log_warn("host %s: down (%s; its probe failed); no job is placed there until it answers",
             h->name, h->reason);
}

bool cluster_probe_reaped(cluster *c, pid_t pid, int status, double now)
{
    bool found = false;
    pthread_mutex_lock(&c->mu);
    for (int i = 0; i < c->n && !found; i++) {
        cluster_host *h = &c->host[i];
        if (h->probe_pid != pid)
            continue;
        found = true;
        h->probe_pid = 0;
        bool ok = WIFEXITED(status) && WEXITSTATUS(status) == 0;
        if (h->suspect) {
            cluster_suspect_settled(h, ok, now);
        } else if (ok) {
            h->down = false;
            h->reason[0] = '\0';
            log_info("host %s: probe succeeded; up again after %.0f s", h->name,
                     now - h->down_since);
        } else {
            log_info("host %s: probe failed (%s %d); still down", h->name,
                     WIFEXITED(status) ? "exit" : "signal",
                     WIFEXITED(status) ? WEXITSTATUS(status) : WTERMSIG(status));
        }
    }
    pthread_mutex_unlock(&c->mu);
    return found;
}

void cluster_probe_command(const char *configured, const char *rsh_agent, char *out,
                           size_t cap)
{
    if (configured && configured[0]) {
        snprintf(out, cap, "%s", configured);
        return;
    }
    if (rsh_agent) {
        while (isspace((unsigned char)*rsh_agent))
            rsh_agent++;
        size_t n = strcspn(rsh_agent, ":");
        while (n > 0 && isspace((unsigned char)rsh_agent[n - 1]))
            n--;
        if (n > 0) {
            snprintf(out, cap, "%.*s %%h true", (int)n, rsh_agent);
            return;
        }
    }
    snprintf(out, cap, "ssh -o BatchMode=yes -o ConnectTimeout=5 %%h true");
}

json_t *cluster_json(cluster *c)
{
    json_t *hosts = json_array(), *o = json_object();
    if (!hosts || !o) {
        json_decref(hosts);
        json_decref(o);
        return NULL;
    }
    long slots = 0, slots_used = 0, gpus = 0, gpus_used = 0;
    pthread_mutex_lock(&c->mu);
    for (int i = 0; i < c->n; i++) {
        const cluster_host *h = &c->host[i];
        json_t *e = json_pack("{s:s, s:i, s:i, s:i, s:i, s:s}", "host", h->name, "slots",
                              h->slots, "slots_used", h->slots_used, "gpus", h->gpus,
                              "gpus_used", h->gpus_used, "state", h->down ? "down" : "up");
        if (e && h->down) {
            json_object_set_new(e, "down_since", json_real(h->down_since));
            json_object_set_new(e, "reason", json_string(h->reason));
        }
        json_array_append_new(hosts, e);
        slots += h->slots;
        slots_used += h->slots_used;
        gpus += h->gpus;
        gpus_used += h->gpus_used;
    }
    pthread_mutex_unlock(&c->mu);
    json_object_set_new(o, "hosts", hosts);
    json_object_set_new(o, "slots", json_integer(slots));
    json_object_set_new(o, "slots_used", json_integer(slots_used));
    json_object_set_new(o, "gpus", json_integer(gpus));
    json_object_set_new(o, "gpus_used", json_integer(gpus_used));
    return o;
}
