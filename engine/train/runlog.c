/* runlog.c — progress.jsonl and history.json, as schema/rundir.md says. */
#include "train/runlog.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "io/tensorfile.h"
#include "timeutil/timeutil.h"

#define RUNLOG_JSON_FLAGS (JSON_COMPACT | JSON_REAL_PRECISION(13))

int run_history_init(run_history *h, int epochs)
{
    memset(h, 0, sizeof *h);
    h->cap = epochs > 0 ? epochs : 1;
    h->epochs = calloc((size_t)h->cap, sizeof *h->epochs);
    return h->epochs ? 0 : -1;
}

void run_history_free(run_history *h)
{
    free(h->epochs);
    h->epochs = NULL;
}

int runlog_event(const char *dir, json_t *event, char *err, size_t errlen)
{
    json_object_set_new(event, "time", json_real(timeutil_wall_s()));
    char *text = json_dumps(event, RUNLOG_JSON_FLAGS);
    json_decref(event);
    if (!text) {
        snprintf(err, errlen, "progress.jsonl: cannot encode event");
        return -1;
    }
    char path[4096];
    snprintf(path, sizeof path, "%s/progress.jsonl", dir);
    size_t len = strlen(text);
    text[len] = '\n'; /* replaces the terminator: one write for the whole line */
    int fd = open(path, O_WRONLY | O_APPEND | O_CREAT | O_CLOEXEC, 0644);
    ssize_t w = fd >= 0 ? write(fd, text, len + 1) : -1;
    int saved = errno;
    if (fd >= 0)
        close(fd);
    free(text);
    if (w != (ssize_t)(len + 1)) {
        snprintf(err, errlen, "%s: %s", path, w < 0 ? strerror(saved) : "short write");
        return -1;
    }
    return 0;
}

void runlog_put_metrics(json_t *obj, const spec_training *t, const char *prefix, double loss,
                        const double *metric)
{
    char key[64];
    snprintf(key, sizeof key, "%sloss", prefix);
    json_object_set_new(obj, key, json_real(loss));
    for (int i = 0; i < t->n_metrics; i++) {
        snprintf(key, sizeof key, "%s%s", prefix, spec_metric_name(t->metrics[i]));
        json_object_set_new(obj, key, json_real(metric[i]));
    }
}

/* An array of one field of every recorded epoch. */
static json_t *history_series(const run_history *h, size_t offset)
{
    json_t *a = json_array();
    for (int e = 0; a && e < h->n_epochs; e++) {
        const char *rec = (const char *)&h->epochs[e];
        double v;
        memcpy(&v, rec + offset, sizeof v);
        json_array_append_new(a, json_real(v));
    }
    return a;
}

static void history_put_series(json_t *obj, const run_history *h, const spec_training *t,
                               bool val)
{
    char key[64];
    size_t loss_off = val ? offsetof(epoch_record, val_loss) : offsetof(epoch_record, loss);
    size_t metric_off = val ? offsetof(epoch_record, val_metric) : offsetof(epoch_record, metric);
    const char *prefix = val ? "val_" : "";
    snprintf(key, sizeof key, "%sloss", prefix);
    json_object_set_new(obj, key, history_series(h, loss_off));
    for (int i = 0; i < t->n_metrics; i++) {
        snprintf(key, sizeof key, "%s%s", prefix, spec_metric_name(t->metrics[i]));
        json_object_set_new(obj, key,
                            history_series(h, metric_off + (size_t)i * sizeof(double)));
    }
}

void runlog_host_name(char *buf, size_t len)
{
    if (gethostname(buf, len) != 0 || len == 0)
        snprintf(buf, len, "unknown");
    buf[len - 1] = '\0'; /* gethostname may truncate without a terminator */
}

int runlog_write_history(const char *dir, const job_spec *spec, const run_history *h,
                         const char *host, char *err, size_t errlen)
{
    const spec_training *t = &spec->training;
    json_t *root = json_object();
    if (!root) {
        snprintf(err, errlen, "history.json: out of memory");
        return -1;
    }
    history_put_series(root, h, t, false);
    if (h->has_val)
        history_put_series(root, h, t, true);
    json_object_set_new(root, "lr", history_series(h, offsetof(epoch_record, lr)));
    json_object_set_new(root, "epoch_time_s", history_series(h, offsetof(epoch_record, time_s)));
    json_object_set_new(root, "samples_per_s",
                        history_series(h, offsetof(epoch_record, samples_per_s)));
    if (h->has_test) {
        json_t *test = json_object();
        runlog_put_metrics(test, t, "", h->test.loss, h->test.metric);
        json_object_set_new(test, "samples", json_integer(h->test.samples));
        json_object_set_new(root, "test", test);
    }
    json_object_set_new(root, "trainer", json_string(spec_trainer_name(spec->distributed.trainer)));
    json_object_set_new(root, "ranks", json_integer(1));
    json_object_set_new(root, "reproducible", json_boolean(h->not_reproducible == NULL));
    if (h->not_reproducible)
        json_object_set_new(root, "reproducible_reason", json_string(h->not_reproducible));
    json_t *worker = json_object();
    json_object_set_new(worker, "rank", json_integer(0));
    history_put_series(worker, h, t, false);
    json_t *workers = json_array();
    json_array_append_new(workers, worker);
    json_object_set_new(root, "workers", workers);
    json_t *hosts = json_array();
    json_array_append_new(hosts, json_string(host));
    json_object_set_new(root, "rank_hosts", hosts);

    char *text = json_dumps(root, JSON_INDENT(1) | JSON_REAL_PRECISION(13));
    json_decref(root);
    if (!text) {
        snprintf(err, errlen, "history.json: cannot encode");
        return -1;
    }
    char path[4096];
    snprintf(path, sizeof path, "%s/history.json", dir);
    int rc = atomic_write_file(path, text, strlen(text), err, errlen);
    free(text);
    return rc;
}
