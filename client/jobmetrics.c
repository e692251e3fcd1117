/* jobmetrics.c — the final-metric columns of `punch list --wide`, made from
 * the rows the list already has: no request per job. */
#include "jobmetrics.h"

#include <ctype.h>
#include <stdbool.h>
#include <string.h>

#include "safetext.h"

/* Progress keys that are counters and timings, not metrics. */
static const char *const jobmetrics_not_metric[] = {
    "epoch", "epochs", "step", "steps", "lr", "samples", "samples_per_s", "elapsed_s", "eta_s",
    "commits", "mean_staleness", "ranks", "workers", "parameters", "epochs_run", "test_samples",
};

/* Columns read loss first, then the train metrics, then validation's and
 * test's the same way. */
static int jobmetrics_rank(const char *key)
{
    int base = strncmp(key, "val_", 4) == 0 ? 2 : strncmp(key, "test_", 5) == 0 ? 4 : 0;
    const char *bare = key + (base == 2 ? 4 : base == 4 ? 5 : 0);
    return base + (strcmp(bare, "loss") != 0);
}

static bool jobmetrics_is_metric(const char *key, const json_t *v)
{
    if (!json_is_number(v))
        return false;
    for (size_t i = 0; i < sizeof jobmetrics_not_metric / sizeof *jobmetrics_not_metric; i++)
        if (strcmp(key, jobmetrics_not_metric[i]) == 0)
            return false;
    return true;
}

static void jobmetrics_add(jobmetrics *m, const char *key, const json_t *v)
{
    if (!jobmetrics_is_metric(key, v))
        return;
    for (int i = 0; i < m->n; i++)
        if (strcmp(m->key[i], key) == 0)
            return;
    int rank = jobmetrics_rank(key), at = m->n;
    while (at > 0 && jobmetrics_rank(m->key[at - 1]) > rank)
        at--;
    if (m->n == JOBMETRICS_MAX) { /* full: a key of a later kind gives way */
        if (at == m->n)
            return;
        m->n--;
    }
    memmove(&m->key[at + 1], &m->key[at], (size_t)(m->n - at) * sizeof *m->key);
    m->key[at] = key;
    m->n++;
}

/* The value of key for job: from its result (test_), else its progress. */
static const json_t *jobmetrics_value(const json_t *job, const char *key)
{
    const json_t *v = json_object_get(json_object_get(job, "result"), key);
    return v ? v : json_object_get(json_object_get(job, "progress"), key);
}

void jobmetrics_collect(const json_t *jobs, jobmetrics *m)
{
    *m = (jobmetrics){0};
    size_t i;
    const json_t *job;
    const char *key;
    const json_t *v;
    json_array_foreach(jobs, i, job) {
        json_object_foreach((json_t *)json_object_get(job, "progress"), key, v)
            jobmetrics_add(m, key, v);
        json_object_foreach((json_t *)json_object_get(job, "result"), key, v)
            jobmetrics_add(m, key, v);
    }
    for (int c = 0; c < m->n; c++) {
        int w = (int)strlen(m->key[c]);
        m->width[c] = w < 7 ? 7 : w > 24 ? 24 : w;
    }
}

void jobmetrics_print_header(const jobmetrics *m, FILE *out)
{
    fprintf(out, "%-7s  ", "EPOCH");
    for (int c = 0; c < m->n; c++) {
        char head[32];
        snprintf(head, sizeof head, "%s", m->key[c]);
        safetext_clean(head);
        for (char *p = head; *p; p++)
            *p = (char)toupper((unsigned char)*p);
        fprintf(out, "%-*.*s  ", m->width[c], m->width[c], head);
    }
}

void jobmetrics_print_row(const jobmetrics *m, const json_t *job, FILE *out)
{
    const json_t *p = json_object_get(job, "progress");
    const json_t *epoch = json_object_get(p, "epoch"), *epochs = json_object_get(p, "epochs");
    char cell[32] = "-";
    if (json_is_number(epoch) && json_is_number(epochs))
        snprintf(cell, sizeof cell, "%.0f/%.0f", json_number_value(epoch),
                 json_number_value(epochs));
    fprintf(out, "%-7s  ", cell);
    for (int c = 0; c < m->n; c++) {
        const json_t *v = jobmetrics_value(job, m->key[c]);
        if (json_is_number(v))
            snprintf(cell, sizeof cell, "%.4f", json_number_value(v));
        else
            snprintf(cell, sizeof cell, "-");
        fprintf(out, "%-*s  ", m->width[c], cell);
    }
}
