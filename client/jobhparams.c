/* jobhparams.c — the hyperparameter columns of `punch list --wide`, made
 * from the rows the list already has (jobhparams.h). */
#include "jobhparams.h"

#include <stdbool.h>
#include <string.h>

#include "safetext.h"

typedef struct jobhparams_column {
    const char *head;
    const char *key;
    bool in_row; /* a field of the job object itself, not of its "hparams" */
    int min, max;
} jobhparams_column;

static const jobhparams_column jobhparams_columns[JOBHPARAMS_COLUMNS] = {
    {"MODEL", "model", false, 5, 16},      {"OPT", "optimizer", false, 3, 8},
    {"LR", "lr", false, 6, 10},            {"BATCH", "batch_size", false, 5, 7},
    {"EPOCHS", "epochs", false, 6, 6},     {"TRAINER", "trainer", true, 7, 12},
    {"RANKS", "ranks", true, 5, 5},
};

/* Column c of job as text: "-" when the job lacks it. */
static void jobhparams_cell(const json_t *job, int c, char *buf, size_t cap)
{
    const jobhparams_column *col = &jobhparams_columns[c];
    const json_t *from = col->in_row ? job : json_object_get(job, "hparams");
    const json_t *v = json_object_get(from, col->key);
    if (json_is_string(v))
        snprintf(buf, cap, "%s", json_string_value(v));
    else if (json_is_integer(v))
        snprintf(buf, cap, "%lld", (long long)json_integer_value(v));
    else if (json_is_number(v))
        snprintf(buf, cap, "%.4g", json_number_value(v));
    else
        snprintf(buf, cap, "-");
    safetext_clean(buf);
}

void jobhparams_collect(const json_t *jobs, jobhparams *h)
{
    for (int c = 0; c < JOBHPARAMS_COLUMNS; c++)
        h->width[c] = jobhparams_columns[c].min;
    size_t i;
    const json_t *job;
    json_array_foreach(jobs, i, job) {
        for (int c = 0; c < JOBHPARAMS_COLUMNS; c++) {
            char cell[64];
            jobhparams_cell(job, c, cell, sizeof cell);
            int n = (int)strlen(cell), max = jobhparams_columns[c].max;
            if (n > h->width[c])
                h->width[c] = n > max ? max : n;
        }
    }
}

void jobhparams_print_header(const jobhparams *h, FILE *out)
{
    for (int c = 0; c < JOBHPARAMS_COLUMNS; c++)
        fprintf(out, "%-*s  ", h->width[c], jobhparams_columns[c].head);
}

void jobhparams_print_row(const jobhparams *h, const json_t *job, FILE *out)
{
    for (int c = 0; c < JOBHPARAMS_COLUMNS; c++) {
        char cell[64];
        jobhparams_cell(job, c, cell, sizeof cell);
        fprintf(out, "%-*.*s  ", h->width[c], h->width[c], cell);
    }
}
