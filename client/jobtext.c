/* jobtext.c — human views of jobs for `punch state` and `punch list`. */
#include "jobtext.h"

#include <math.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "jobhparams.h"
#include "jobmetrics.h"
#include "safetext.h"
#include "progress.h"

void jobtext_format_age(const json_t *when, double now, char *buf, size_t len)
{
    if (!json_is_number(when)) {
        snprintf(buf, len, "-");
        return;
    }
    double age = now - json_number_value(when);
    if (age < 0)
        age = 0;
    if (age < 60)
        snprintf(buf, len, "%.0fs ago", floor(age));
    else if (age < 3600)
        snprintf(buf, len, "%.0fm ago", floor(age / 60));
    else if (age < 86400)
        snprintf(buf, len, "%.0fh ago", floor(age / 3600));
    else
        snprintf(buf, len, "%.0fd ago", floor(age / 86400));
}

/* "2026-11-22 03:15:08 (2m ago)" in local time, or "-". */
static void jobtext_format_time(const json_t *when, double now, char *buf, size_t len)
{
    if (!json_is_number(when)) {
        snprintf(buf, len, "-");
        return;
    }
    double v = json_number_value(when);
    char stamp[64] = "?";
    /* A time no time_t holds (a broken server's) stays "?": converting it
     * would be undefined. */
    if (v > -1e15 && v < 1e15) {
        time_t t = (time_t)v;
        struct tm tm;
        if (localtime_r(&t, &tm) != NULL)
            strftime(stamp, sizeof stamp, "%Y-%m-%d %H:%M:%S", &tm);
    }
    char age[32];
    jobtext_format_age(when, now, age, sizeof age);
    snprintf(buf, len, "%s (%s)", stamp, age);
}

/* A job's string field made safe to print (safetext_clean), "-" if absent.
 * The copy lives in one of a few rotating buffers, enough for the fields
 * of one printf. */
static const char *jobtext_str(const json_t *job, const char *key)
{
    static char bufs[8][1024];
    static unsigned next;
    const char *s = json_string_value(json_object_get(job, key));
    if (!s)
        return "-";
    char *b = bufs[next++ % 8];
    snprintf(b, sizeof bufs[0], "%s", s);
    safetext_clean(b);
    return b;
}

void jobtext_format_summary(const json_t *job, char *buf, size_t len)
{
    const char *state = jobtext_str(job, "state");
    const json_t *result = json_object_get(job, "result");
    const char *error = json_string_value(json_object_get(job, "error"));
    if (error != NULL && strcmp(state, "succeeded") != 0) {
        snprintf(buf, len, "%s", error);
        safetext_clean(buf);
        return;
    }
    if (json_object_size(result) > 0) {
        size_t pos = 0;
        buf[0] = '\0';
        const char *key;
        const json_t *v;
        json_object_foreach((json_t *)result, key, v) {
            if (!json_is_number(v) || strcmp(key, "test_loss") == 0 || pos >= len)
                continue;
            pos += (size_t)snprintf(buf + pos, len - pos, "%s%s %.4f", pos ? " " : "", key,
                                    json_number_value(v));
        }
        if (pos == 0)
            snprintf(buf, len, "-");
        safetext_clean(buf);
        return;
    }
    const json_t *p = json_object_get(job, "progress");
    const json_t *pos = json_object_get(job, "queue_position");
    if (strcmp(state, "queued") == 0 && json_is_number(pos)) {
        snprintf(buf, len, "queue position %.0f", json_number_value(pos));
    } else if (json_is_number(json_object_get(p, "epoch"))) {
        snprintf(buf, len, "epoch %.0f/%.0f loss %.4f",
                 json_number_value(json_object_get(p, "epoch")),
                 json_number_value(json_object_get(p, "epochs")),
                 json_number_value(json_object_get(p, "loss")));
    } else {
        snprintf(buf, len, "-");
    }
}

void jobtext_print_detail(const json_t *job, double now, FILE *out)
{
    char buf[1024];
    fprintf(out, "job        %s\n", jobtext_str(job, "id"));
    fprintf(out, "name       %s\n", jobtext_str(job, "name"));
    fprintf(out, "owner      %s\n", jobtext_str(job, "owner"));
    fprintf(out, "state      %s\n", jobtext_str(job, "state"));
    const json_t *ranks = json_object_get(job, "ranks");
    const json_t *workers = json_object_get(job, "workers");
    fprintf(out, "trainer    %s, %lld worker(s), %lld rank(s)\n", jobtext_str(job, "trainer"),
            (long long)json_integer_value(workers), (long long)json_integer_value(ranks));
    const json_t *prio = json_object_get(job, "priority");
    if (json_is_integer(prio) && json_integer_value(prio) != 0)
        fprintf(out, "priority   %lld\n", (long long)json_integer_value(prio));
    const json_t *queue = json_object_get(job, "queue_position");
    if (json_is_number(queue))
        fprintf(out, "queue      position %.0f\n", json_number_value(queue));
    jobtext_format_time(json_object_get(job, "submitted_at"), now, buf, sizeof buf);
    fprintf(out, "submitted  %s\n", buf);
    jobtext_format_time(json_object_get(job, "started_at"), now, buf, sizeof buf);
    fprintf(out, "started    %s\n", buf);
    jobtext_format_time(json_object_get(job, "finished_at"), now, buf, sizeof buf);
    fprintf(out, "finished   %s\n", buf);
    const json_t *progress = json_object_get(job, "progress");
    if (json_object_size(progress) > 0) {
        json_t *running = json_pack("{s:s, s:O}", "state", "running", "progress", progress);
        if (running != NULL) {
            progress_format_line(running, buf, sizeof buf);
            fprintf(out, "progress   %s\n", buf);
            json_decref(running);
        }
    }
    const json_t *result = json_object_get(job, "result");
    if (json_object_size(result) > 0) {
        const char *key;
        const json_t *v;
        fprintf(out, "result    ");
        json_object_foreach((json_t *)result, key, v) {
            if (json_is_number(v)) {
                snprintf(buf, sizeof buf, "%s", key);
                safetext_clean(buf);
                fprintf(out, " %s %.4f", buf, json_number_value(v));
            }
        }
        fprintf(out, "\n");
    }
    const json_t *exit_code = json_object_get(job, "exit_code");
    if (json_is_integer(exit_code))
        fprintf(out, "exit code  %lld\n", (long long)json_integer_value(exit_code));
    if (json_is_string(json_object_get(job, "error")))
        fprintf(out, "error      %s\n", jobtext_str(job, "error"));
}

/* The widest PROGRESS / RESULT cell of a table row. */
#define JOBTEXT_SUMMARY_MAX 72

/* A trial's params as one cell: compact JSON, made safe and cut to cap. */
static void jobtext_params(const json_t *job, char *buf, size_t cap)
{
    char *p = json_dumps(json_object_get(job, "params"), JSON_COMPACT | JSON_REAL_PRECISION(6));
    snprintf(buf, cap, "%s", p ? p : "-");
    free(p);
    safetext_clean(buf);
}

void jobtext_print_table(const json_t *jobs, double now, FILE *out)
{
    jobtext_print_table_wide(jobs, now, false, out);
}

void jobtext_print_table_wide(const json_t *jobs, double now, bool wide, FILE *out)
{
    if (json_array_size(jobs) == 0) {
        fprintf(out, "no jobs\n");
        return;
    }
    /* Names vary in length; size the column to the longest (within reason). */
    int name_w = 4, owner_w = 5;
    size_t i;
    const json_t *job;
    const char *first_owner = NULL;
    bool owners = false; /* several: an admin's list, which gets an OWNER column */
    bool sweeps = false; /* a sweep's trial among them: a SWEEP column */
    json_array_foreach(jobs, i, job) {
        int n = (int)strlen(jobtext_str(job, "name"));
        if (n > name_w)
            name_w = n > 32 ? 32 : n;
        const char *owner = jobtext_str(job, "owner");
        n = (int)strlen(owner);
        if (n > owner_w)
            owner_w = n > 24 ? 24 : n;
        if (!first_owner)
            first_owner = owner;
        owners |= strcmp(owner, first_owner) != 0;
        sweeps |= json_is_string(json_object_get(job, "sweep"));
    }
    fprintf(out, "%-12s  ", "ID");
    if (owners)
        fprintf(out, "%-*s  ", owner_w, "OWNER");
    fprintf(out, "%-*s  %-9s  %-9s  ", name_w, "NAME", "STATE", "SUBMITTED");
    if (sweeps)
        fprintf(out, "%-12s  ", "SWEEP");
    /* PARAMS comes last, after the widest summary. */
    int summary_w = 17;
    json_array_foreach(jobs, i, job) {
        char summary[256];
        jobtext_format_summary(job, summary, sizeof summary);
        int n = (int)strlen(summary);
        summary_w = n > summary_w ? (n > JOBTEXT_SUMMARY_MAX ? JOBTEXT_SUMMARY_MAX : n)
                                  : summary_w;
    }
    jobmetrics metrics;
    jobmetrics_collect(jobs, &metrics);
    jobhparams hparams;
    jobhparams_collect(jobs, &hparams);
    if (wide) {
        jobhparams_print_header(&hparams, out);
        fprintf(out, "%-*s  ", summary_w, "PROGRESS / RESULT");
        jobmetrics_print_header(&metrics, out);
        fprintf(out, "%s\n", sweeps ? "PARAMS" : "");
    } else {
        fprintf(out, "%s\n", "PROGRESS / RESULT");
    }
    json_array_foreach(jobs, i, job) {
        char age[32], summary[256], params[512];
        jobtext_format_age(json_object_get(job, "submitted_at"), now, age, sizeof age);
        jobtext_format_summary(job, summary, sizeof summary);
        /* One row a job: a long error is cut; punch state ID has it all. */
        if (strlen(summary) > JOBTEXT_SUMMARY_MAX)
            strcpy(summary + JOBTEXT_SUMMARY_MAX - 3, "...");
        fprintf(out, "%-12s  ", jobtext_str(job, "id"));
        if (owners)
            fprintf(out, "%-*.*s  ", owner_w, owner_w, jobtext_str(job, "owner"));
        fprintf(out, "%-*.*s  %-9s  %-9s  ", name_w, name_w, jobtext_str(job, "name"),
                jobtext_str(job, "state"), age);
        bool trial = json_is_string(json_object_get(job, "sweep"));
        if (sweeps)
            fprintf(out, "%-12.12s  ", trial ? jobtext_str(job, "sweep") : "-");
        if (wide) {
            jobhparams_print_row(&hparams, job, out);
            fprintf(out, "%-*s  ", summary_w, summary);
            jobmetrics_print_row(&metrics, job, out);
            if (sweeps && trial)
                jobtext_params(job, params, sizeof params);
            fprintf(out, "%s\n", !sweeps ? "" : trial ? params : "-");
        } else {
            fprintf(out, "%s\n", summary);
        }
    }
}
