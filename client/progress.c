/* progress.c — formatting of live progress and epoch summaries. Metrics are
 * whatever numeric keys the engine reports (accuracy, mse, mae and their
 * val_ forms), so a new metric shows up without a client change. */
#include "progress.h"

#include <math.h>
#include <stdbool.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>

/* Keys of a progress object that are not metrics. */
static const char *const progress_bookkeeping[] = {
    "event", "time", "epoch", "epochs", "step", "steps", "samples_per_s", "elapsed_s",
    "eta_s", "lr", "samples", "ranks", "trainer", "status", "error",
};

static bool progress_is_bookkeeping(const char *key)
{
    for (size_t i = 0; i < sizeof progress_bookkeeping / sizeof progress_bookkeeping[0]; i++)
        if (strcmp(key, progress_bookkeeping[i]) == 0)
            return true;
    return false;
}

/* Append to buf at *pos, never past len; a full buffer stays NUL-terminated. */
__attribute__((format(printf, 4, 5)))
static void progress_append(char *buf, size_t len, size_t *pos, const char *fmt, ...)
{
    if (*pos >= len)
        return;
    va_list ap;
    va_start(ap, fmt);
    int n = vsnprintf(buf + *pos, len - *pos, fmt, ap);
    va_end(ap);
    if (n < 0)
        return;
    *pos += (size_t)n;
    if (*pos >= len)
        *pos = len - 1;
}

static void progress_format_value(double v, char *buf, size_t len)
{
    if (!isfinite(v))
        snprintf(buf, len, "%s", isnan(v) ? "nan" : (v > 0 ? "inf" : "-inf"));
    else if (fabs(v) >= 1000.0 || (v != 0.0 && fabs(v) < 0.0001))
        snprintf(buf, len, "%.4g", v);
    else
        snprintf(buf, len, "%.4f", v);
}

void progress_format_duration(double seconds, char *buf, size_t len)
{
    if (!isfinite(seconds) || seconds < 0) {
        snprintf(buf, len, "?");
        return;
    }
    long s = lround(seconds);
    if (s >= 3600)
        snprintf(buf, len, "%ld:%02ld:%02ld", s / 3600, s / 60 % 60, s % 60);
    else
        snprintf(buf, len, "%ld:%02ld", s / 60, s % 60);
}

void progress_format_rate(double per_s, char *buf, size_t len)
{
    if (!isfinite(per_s) || per_s < 0)
        snprintf(buf, len, "?");
    else if (per_s >= 1e6)
        snprintf(buf, len, "%.2fM", per_s / 1e6);
    else if (per_s >= 1e4)
        snprintf(buf, len, "%.1fk", per_s / 1e3);
    else
        snprintf(buf, len, "%.0f", per_s);
}

static bool progress_number(const json_t *obj, const char *key, double *out)
{
    const json_t *v = json_object_get(obj, key);
    if (!json_is_number(v))
        return false;
    *out = json_number_value(v);
    return true;
}

/* " loss 0.5123 accuracy 0.8100 ..." for every metric in a progress object. */
static void progress_append_metrics(const json_t *progress, const char *sep, char *buf,
                                    size_t len, size_t *pos)
{
    const char *key;
    const json_t *value;
    json_object_foreach((json_t *)progress, key, value) {
        if (!json_is_number(value) || progress_is_bookkeeping(key))
            continue;
        char v[32];
        progress_format_value(json_number_value(value), v, sizeof v);
        progress_append(buf, len, pos, " %s%s%s", key, sep, v);
    }
}

/* The non-running states read the same as a bar or a line. Returns true
 * when it wrote the text. */
static bool progress_format_waiting(const json_t *job, char *buf, size_t len)
{
    const char *state = json_string_value(json_object_get(job, "state"));
    if (state == NULL) {
        snprintf(buf, len, "unknown state");
        return true;
    }
    double position;
    if (strcmp(state, "queued") == 0 && progress_number(job, "queue_position", &position)) {
        snprintf(buf, len, "queued (position %.0f)", position);
        return true;
    }
    const json_t *progress = json_object_get(job, "progress");
    double epoch;
    if (strcmp(state, "running") == 0 && !progress_number(progress, "epoch", &epoch)) {
        snprintf(buf, len, "running (no progress report yet)");
        return true;
    }
    if (strcmp(state, "running") != 0) {
        snprintf(buf, len, "%s", state);
        return true;
    }
    return false;
}

/* What a running job's progress object reports; has_* say which of the
 * optional numbers it carried. */
typedef struct progress_report {
    const json_t *progress;
    double epoch, epochs;
    double step, steps;
    bool has_step, has_steps;
    double rate, eta;
    bool has_rate, has_eta;
} progress_report;

/* The start of a bar and of a line alike: a job that is not running with a
 * report gets its waiting text in buf and false; otherwise *r is filled. */
static bool progress_read_report(const json_t *job, char *buf, size_t len, progress_report *r)
{
    if (len == 0 || progress_format_waiting(job, buf, len))
        return false;
    const json_t *p = json_object_get(job, "progress");
    *r = (progress_report){.progress = p};
    progress_number(p, "epoch", &r->epoch);
    progress_number(p, "epochs", &r->epochs);
    r->has_step = progress_number(p, "step", &r->step);
    r->has_steps = progress_number(p, "steps", &r->steps);
    r->has_rate = progress_number(p, "samples_per_s", &r->rate);
    r->has_eta = progress_number(p, "eta_s", &r->eta);
    return true;
}

/* Cut the line in buf at width columns (none when width <= 0), so a
 * narrow terminal never wraps, whatever the server sent. */
static void progress_cut(char *buf, size_t len, int width)
{
    if (len > 0 && width > 0 && strlen(buf) > (size_t)width)
        buf[width] = '\0';
}

void progress_format_bar(const json_t *job, int width, char *buf, size_t len)
{
    progress_report r;
    if (!progress_read_report(job, buf, len, &r)) {
        progress_cut(buf, len, width);
        return;
    }
    char prefix[64];
    snprintf(prefix, sizeof prefix, "epoch %.0f/%.0f ", r.epoch, r.epochs);
    char suffix[512];
    size_t pos = 0;
    if (r.steps > 0)
        progress_append(suffix, sizeof suffix, &pos, " %.0f/%.0f", r.step, r.steps);
    if (r.has_rate) {
        char rate[32];
        progress_format_rate(r.rate, rate, sizeof rate);
        progress_append(suffix, sizeof suffix, &pos, " %s samples/s", rate);
    }
    progress_append_metrics(r.progress, " ", suffix, sizeof suffix, &pos);
    if (r.has_eta) {
        char eta[32];
        progress_format_duration(r.eta, eta, sizeof eta);
        progress_append(suffix, sizeof suffix, &pos, " ETA %s", eta);
    }
    if (pos == 0)
        suffix[0] = '\0';

    /* The bar takes what the text leaves, within [10, 30] cells; then the
     * whole line is cut at width. */
    int cells = width - (int)strlen(prefix) - (int)strlen(suffix) - 2;
    cells = cells < 10 ? 10 : cells > 30 ? 30 : cells;
    double fraction = r.steps > 0 ? r.step / r.steps : 0.0;
    fraction = fraction < 0 ? 0 : fraction > 1 ? 1 : fraction;
    int filled = (int)(fraction * cells);
    char bar[40];
    for (int i = 0; i < cells; i++)
        bar[i] = i < filled ? '=' : (i == filled ? '>' : ' ');
    bar[cells] = '\0';
    snprintf(buf, len, "%s[%s]%s", prefix, bar, suffix);
    progress_cut(buf, len, width);
}

void progress_format_line(const json_t *job, char *buf, size_t len)
{
    progress_report r;
    if (!progress_read_report(job, buf, len, &r))
        return;
    size_t pos = 0;
    progress_append(buf, len, &pos, "epoch %.0f/%.0f", r.epoch, r.epochs);
    if (r.has_step && r.has_steps)
        progress_append(buf, len, &pos, " step %.0f/%.0f", r.step, r.steps);
    progress_append_metrics(r.progress, "=", buf, len, &pos);
    if (r.has_rate) {
        char rate[32];
        progress_format_rate(r.rate, rate, sizeof rate);
        progress_append(buf, len, &pos, " samples/s=%s", rate);
    }
    if (r.has_eta) {
        char eta[32];
        progress_format_duration(r.eta, eta, sizeof eta);
        progress_append(buf, len, &pos, " eta=%s", eta);
    }
}

size_t progress_history_epochs(const json_t *history)
{
    return json_array_size(json_object_get(history, "loss"));
}

void progress_format_epoch(const json_t *history, size_t i, int epochs, char *buf,
                           size_t len)
{
    if (len == 0)
        return;
    size_t pos = 0;
    progress_append(buf, len, &pos, "epoch %zu/%d:", i + 1, epochs);
    const char *key;
    const json_t *series;
    json_object_foreach((json_t *)history, key, series) {
        const json_t *v = json_array_get(series, i);
        if (!json_is_number(v) || progress_is_bookkeeping(key) ||
            strcmp(key, "epoch_time_s") == 0)
            continue;
        char s[32];
        progress_format_value(json_number_value(v), s, sizeof s);
        progress_append(buf, len, &pos, " %s %s", key, s);
    }
    const json_t *lr = json_array_get(json_object_get(history, "lr"), i);
    if (json_is_number(lr))
        progress_append(buf, len, &pos, " lr %.3g", json_number_value(lr));
    const json_t *t = json_array_get(json_object_get(history, "epoch_time_s"), i);
    if (json_is_number(t))
        progress_append(buf, len, &pos, " (%.1fs)", json_number_value(t));
}
