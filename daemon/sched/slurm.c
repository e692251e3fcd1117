/* slurm.c — sbatch's command and batch script, squeue's and scontrol's
 * answers (contract in slurm.h). */
#include "sched/slurm.h"

#include <ctype.h>
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "grow/grow.h"
#include "run/launcher.h"

bool slurm_command(const slurm_site *site, const char *cmd, char *out, size_t cap)
{
    const char *dir = site && site->bin_dir ? site->bin_dir : "";
    int n = dir[0] ? snprintf(out, cap, "%s/%s", dir, cmd) : snprintf(out, cap, "%s", cmd);
    return n > 0 && (size_t)n < cap;
}

/* A growing NULL-terminated argv of heap strings. */
typedef struct argv_buf {
    char **v;
    size_t n, cap;
    bool failed;
} argv_buf;

static void slurm_push(argv_buf *a, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

static void slurm_push(argv_buf *a, const char *fmt, ...)
{
    if (a->failed)
        return;
    if (!grow_reserve((void **)&a->v, &a->cap, a->n + 2, sizeof *a->v)) {
        a->failed = true;
        return;
    }
    va_list ap;
    va_start(ap, fmt);
    char *s = NULL;
    int n = vasprintf(&s, fmt, ap);
    va_end(ap);
    if (n < 0) {
        a->failed = true;
        return;
    }
    a->v[a->n++] = s;
    a->v[a->n] = NULL;
}

/* Each whitespace-separated word of words, as one argument. */
static void slurm_push_words(argv_buf *a, const char *words)
{
    for (const char *s = words ? words : ""; *s;) {
        while (*s && isspace((unsigned char)*s))
            s++;
        size_t len = 0;
        while (s[len] && !isspace((unsigned char)s[len]))
            len++;
        if (len)
            slurm_push(a, "%.*s", (int)len, s);
        s += len;
    }
}

static char **slurm_argv_done(argv_buf *a)
{
    if (a->failed || !a->v) {
        if (a->v) {
            a->v[a->n] = NULL;
            launcher_argv_free(a->v);
        }
        return NULL;
    }
    return a->v;
}

static bool slurm_given(const char *s)
{
    return s && s[0];
}

char **slurm_sbatch_argv(const slurm_site *site, const slurm_job *job)
{
    argv_buf a = {0};
    char path[1200];
    if (!slurm_command(site, "sbatch", path, sizeof path))
        return NULL;
    char owner[256];
    snprintf(owner, sizeof owner, "%s", job->owner);
    for (char *c = owner; *c; c++)
        if ((unsigned char)*c < 0x20 || (unsigned char)*c >= 0x7f)
            *c = '?';
    slurm_push(&a, "%s", path);
    slurm_push(&a, "--parsable");
    slurm_push(&a, "--job-name=pc-%s", job->id);
    slurm_push(&a, "--ntasks=%d", job->ranks > 0 ? job->ranks : 1);
    slurm_push(&a, "--cpus-per-task=%d", job->threads > 0 ? job->threads : 1);
    if (job->mem_per_rank > 0) {
        /* A task is a rank: its memory spread over its CPUs, so Slurm
         * (with memory a consumable resource) reserves the estimate. */
        double mib = job->mem_per_rank / (job->threads > 0 ? job->threads : 1) / 1048576.0;
        slurm_push(&a, "--mem-per-cpu=%.0fM", ceil(mib));
    }
    if (job->gpus_per_worker > 0)
        slurm_push(&a, "--gres=gpu:%d", job->gpus_per_worker);
    if (job->time_limit_s > 0) {
        /* Slurm counts whole minutes: round up, never cut a job short. */
        long m = (job->time_limit_s + 59) / 60;
        slurm_push(&a, "--time=%ld-%02ld:%02ld:00", m / 1440, m / 60 % 24, m % 60);
    }
    if (job->priority < 0)
        slurm_push(&a, "--nice=%d", -job->priority * 100);
    slurm_push(&a, "--output=%s/" SLURM_OUTPUT, job->rundir);
    slurm_push(&a, "--chdir=%s", job->rundir);
    slurm_push(&a, "--comment=punchcard id=%s user=%s", job->id, owner);
    /* A node lost under the job: Slurm runs it again (the script resumes
     * from the checkpoint) whatever the site's JobRequeue; slurm-args'
     * --no-requeue, pushed later, still wins. */
    slurm_push(&a, "--requeue");
    if (site && slurm_given(site->partition))
        slurm_push(&a, "--partition=%s", site->partition);
    if (site && slurm_given(site->account))
        slurm_push(&a, "--account=%s", site->account);
    if (site && slurm_given(site->qos))
        slurm_push(&a, "--qos=%s", site->qos);
    slurm_push_words(&a, site ? site->args : NULL);
    slurm_push(&a, "%s/" SLURM_SCRIPT, job->rundir);
    return slurm_argv_done(&a);
}

char **slurm_squeue_argv(const slurm_site *site)
{
    argv_buf a = {0};
    char path[1200];
    if (!slurm_command(site, "squeue", path, sizeof path))
        return NULL;
    slurm_push(&a, "%s", path);
    slurm_push(&a, "--me");
    slurm_push(&a, "--noheader");
    slurm_push(&a, "--states=all");
    slurm_push(&a, "--format=%%i|%%T|%%j|%%r");
    return slurm_argv_done(&a);
}

/* Append s to the script in single quotes ('\'' for a quote inside). */
static bool slurm_quote(FILE *f, const char *s)
{
    if (fputc('\'', f) == EOF)
        return false;
    for (; *s; s++)
        if ((*s == '\'' ? fputs("'\\''", f) : fputc(*s, f)) == EOF)
            return false;
    return fputc('\'', f) != EOF;
}

char *slurm_batch_script(const slurm_job *job, char *const *command)
{
    char *text = NULL;
    size_t len = 0;
    FILE *f = open_memstream(&text, &len);
    if (!f)
        return NULL;
    bool ok = fprintf(f,
                      "#!/bin/bash\n"
                      "# punchcard job %s: written by punchcardd (scheduler = slurm).\n"
                      "# The supervisor runs mpirun, which takes its hosts from this\n"
                      "# allocation, and records supervisor.json and exit.json here.\n"
                      "cd ",
                      job->id) > 0 &&
              slurm_quote(f, job->rundir) &&
              fputs(" || exit 1\n"
                    "# Requeued by Slurm (preemption, node failure, scontrol requeue):\n"
                    "# continue from the checkpoint the stopped run wrote.\n"
                    "set --\n"
                    "if [ \"${SLURM_RESTART_COUNT:-0}\" -gt 0 ] && [ -f " SLURM_CHECKPOINT " ]; then\n"
                    "    set -- --resume\n"
                    "fi\n"
                    "exec",
                    f) != EOF;
    for (size_t i = 0; ok && command[i]; i++)
        ok = fputc(' ', f) != EOF && slurm_quote(f, command[i]);
    ok = ok && fputs(" \"$@\"\n", f) != EOF;
    if (fclose(f) != 0 || !ok) {
        free(text);
        return NULL;
    }
    return text;
}

long slurm_parse_submit(const char *out)
{
    while (*out && isspace((unsigned char)*out))
        out++;
    char *end;
    long id = strtol(out, &end, 10);
    if (end == out || id <= 0 || (*end && *end != ';' && !isspace((unsigned char)*end)))
        return 0;
    return id;
}

bool slurm_unreachable(const char *err_text)
{
    static const char *const signs[] = {
        "Unable to contact slurm controller",
        "Socket timed out on send/recv",
        "Zero Bytes were transmitted or received",
        "Munge encode failed",
        "Protocol authentication error",
    };
    for (size_t i = 0; i < sizeof signs / sizeof signs[0]; i++)
        if (strstr(err_text, signs[i]))
            return true;
    return false;
}

slurm_phase slurm_state_map(const char *state, job_state *final)
{
    static const struct {
        const char *word;
        slurm_phase phase;
        job_state final;
    } table[] = {
        {"PENDING", SLURM_WAITING, JOB_QUEUED},
        {"CONFIGURING", SLURM_WAITING, JOB_QUEUED},
        {"REQUEUED", SLURM_WAITING, JOB_QUEUED},
        {"REQUEUE_HOLD", SLURM_WAITING, JOB_QUEUED},
        {"REQUEUE_FED", SLURM_WAITING, JOB_QUEUED},
        {"RESV_DEL_HOLD", SLURM_WAITING, JOB_QUEUED},
        {"RUNNING", SLURM_ACTIVE, JOB_RUNNING},
        {"COMPLETING", SLURM_ACTIVE, JOB_RUNNING},
        {"SUSPENDED", SLURM_ACTIVE, JOB_RUNNING},
        {"STOPPED", SLURM_ACTIVE, JOB_RUNNING},
        {"SIGNALING", SLURM_ACTIVE, JOB_RUNNING},
        {"STAGE_OUT", SLURM_ACTIVE, JOB_RUNNING},
        {"RESIZING", SLURM_ACTIVE, JOB_RUNNING},
        {"COMPLETED", SLURM_ENDED, JOB_SUCCEEDED},
        {"CANCELLED", SLURM_ENDED, JOB_CANCELLED},
        {"TIMEOUT", SLURM_ENDED, JOB_TIMEOUT},
        {"DEADLINE", SLURM_ENDED, JOB_TIMEOUT},
        {"FAILED", SLURM_ENDED, JOB_FAILED},
        {"NODE_FAIL", SLURM_ENDED, JOB_FAILED},
        {"PREEMPTED", SLURM_ENDED, JOB_FAILED},
        {"OUT_OF_MEMORY", SLURM_ENDED, JOB_FAILED},
        {"BOOT_FAIL", SLURM_ENDED, JOB_FAILED},
        {"SPECIAL_EXIT", SLURM_ENDED, JOB_FAILED},
        {"REVOKED", SLURM_ENDED, JOB_FAILED},
    };
    size_t len = 0;
    while (state[len] && (isupper((unsigned char)state[len]) || state[len] == '_'))
        len++;
    for (size_t i = 0; i < sizeof table / sizeof table[0]; i++)
        if (strlen(table[i].word) == len && strncmp(table[i].word, state, len) == 0) {
            if (final)
                *final = table[i].final;
            return table[i].phase;
        }
    return SLURM_UNKNOWN;
}

/* Copy the field [s, s+len) into out, "" for Slurm's "None" / "(null)". */
static void slurm_field(const char *s, size_t len, char *out, size_t cap)
{
    if ((len == 4 && !strncmp(s, "None", 4)) || (len == 6 && !strncmp(s, "(null)", 6)))
        len = 0;
    snprintf(out, cap, "%.*s", (int)len, s);
}

size_t slurm_parse_squeue(const char *text, slurm_status *out, size_t cap)
{
    size_t n = 0;
    for (const char *line = text; *line && n < cap;) {
        size_t len = strcspn(line, "\n");
        /* ID|STATE|NAME|REASON: the name may hold '|', the others do not. */
        const char *bar1 = memchr(line, '|', len);
        const char *bar2 = bar1 ? memchr(bar1 + 1, '|', len - (size_t)(bar1 + 1 - line)) : NULL;
        const char *bar3 = NULL;
        for (const char *p = line + len; bar2 && p > bar2 + 1 && !bar3; p--)
            if (p[-1] == '|')
                bar3 = p - 1;
        char *end;
        long id = strtol(line, &end, 10);
        if (bar3 && end == bar1 && id > 0) {
            slurm_status *s = &out[n++];
            s->job_id = id;
            slurm_field(bar1 + 1, (size_t)(bar2 - bar1 - 1), s->state, sizeof s->state);
            slurm_field(bar2 + 1, (size_t)(bar3 - bar2 - 1), s->name, sizeof s->name);
            size_t rlen = len - (size_t)(bar3 + 1 - line);
            while (rlen && isspace((unsigned char)bar3[rlen]))
                rlen--;
            slurm_field(bar3 + 1, rlen, s->reason, sizeof s->reason);
            s->exit_code = s->exit_signal = -1;
        }
        line += len;
        if (*line)
            line++;
    }
    return n;
}

/* The value of "KEY=" in scontrol's text (up to the next space or line
 * end), or NULL. Keys start a line or follow a space. */
static const char *slurm_value(const char *text, const char *key, size_t *len)
{
    size_t klen = strlen(key);
    for (const char *p = strstr(text, key); p; p = strstr(p + 1, key)) {
        if ((p == text || isspace((unsigned char)p[-1])) && p[klen] == '=') {
            const char *v = p + klen + 1;
            *len = strcspn(v, " \t\n");
            return v;
        }
    }
    return NULL;
}

bool slurm_parse_scontrol(const char *text, slurm_status *out)
{
    size_t len;
    const char *v = slurm_value(text, "JobId", &len);
    if (!v)
        return false;
    memset(out, 0, sizeof *out);
    out->job_id = strtol(v, NULL, 10);
    out->exit_code = out->exit_signal = -1;
    if ((v = slurm_value(text, "JobState", &len)))
        slurm_field(v, len, out->state, sizeof out->state);
    if ((v = slurm_value(text, "Reason", &len)))
        slurm_field(v, len, out->reason, sizeof out->reason);
    if ((v = slurm_value(text, "ExitCode", &len)) &&
        sscanf(v, "%d:%d", &out->exit_code, &out->exit_signal) != 2)
        out->exit_code = out->exit_signal = -1;
    return out->job_id > 0 && out->state[0];
}

void slurm_error_line(const slurm_status *s, char *out, size_t cap)
{
    int n = snprintf(out, cap, "Slurm: %s", s->state);
    if (n < 0 || (size_t)n >= cap)
        return;
    size_t used = (size_t)n;
    if (s->reason[0]) {
        n = snprintf(out + used, cap - used, " (%s)", s->reason);
        if (n < 0 || (size_t)n >= cap - used)
            return;
        used += (size_t)n;
    }
    if (s->exit_signal > 0)
        snprintf(out + used, cap - used, ", signal %d", s->exit_signal);
    else if (s->exit_code > 0)
        snprintf(out + used, cap - used, ", exit code %d", s->exit_code);
}
