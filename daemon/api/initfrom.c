/* initfrom.c — training.init_from resolved and checked at submit
 * (initfrom.h). The check runs the engine itself (engine_run.c), the one
 * place that knows the model's tensor names and shapes, on a copy of the
 * spec in DATA_DIR/tmp/; it builds the model on one CPU thread and reads
 * the weights file, so it costs about what loading the weights costs. */
#include "api/initfrom.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <jansson.h>

#include "api/datasets.h"
#include "run/engine_run.h"
#include "io/tensorfile.h"
#include "run/rundir.h"

#define INITFROM_CHECK_TIMEOUT_S 60

static int initfrom_fail(json_t *spec, char *msg, size_t msglen, const char *fmt,
                         const char *a, const char *b)
{
    snprintf(msg, msglen, fmt, a, b);
    json_decref(spec);
    return -1;
}

int initfrom_resolve(daemon_ctx *d, const char *owner, const char *spec_text, char **out,
                     const char **field, char *msg, size_t msglen)
{
    *out = NULL;
    json_t *spec = json_loads(spec_text, JSON_REJECT_DUPLICATES, NULL);
    json_t *init = json_object_get(json_object_get(spec, "training"), "init_from");
    if (!json_is_object(init)) {
        json_decref(spec);
        return 0;
    }
    const char *job = json_string_value(json_object_get(init, "job"));
    const char *ds = json_string_value(json_object_get(init, "dataset"));
    char path[4200];
    if (job) {
        *field = "training.init_from.job";
        store_job j;
        store_status rs = store_job_get(d->st, job, &j);
        bool mine = rs == STORE_OK && strcmp(j.owner, owner) == 0;
        bool done = mine && j.state == JOB_SUCCEEDED;
        if (rs == STORE_OK)
            store_job_clear(&j);
        if (!mine)
            return initfrom_fail(spec, msg, msglen, "%s: you have no job %s", *field, job);
        if (!done)
            return initfrom_fail(spec, msg, msglen, "%s: job %s has not succeeded; a warm "
                                 "start needs its final weights", *field, job);
        char file[4096];
        struct stat st;
        if (!rundir_path(file, sizeof file, d->cfg.data_dir, job, "weights.safetensors") ||
            stat(file, &st) != 0)
            return initfrom_fail(spec, msg, msglen, "%s: job %s has no weights.safetensors",
                                 *field, job);
        snprintf(path, sizeof path, "@%s", file);
        json_object_set_new(init, "path", json_string(path));
    } else if (ds && ds[0] == '@' && ds[1] != '/') {
        *field = "training.init_from.dataset";
        store_dataset up;
        store_status rs = store_dataset_get(d->st, owner, ds + 1, &up);
        if (rs != STORE_OK)
            return initfrom_fail(spec, msg, msglen, "%s: you have no uploaded dataset \"%s\"",
                                 *field, ds + 1);
        store_dataset_clear(&up);
        if (!datasets_ref(d->cfg.data_dir, owner, ds + 1, path, sizeof path))
            return initfrom_fail(spec, msg, msglen, "%s: %s", *field, "path too long");
        path[strlen(path) - 1] = '\0'; /* the ref is quoted */
        json_object_set_new(init, "dataset", json_string(path + 1));
    } else {
        *field = "training.init_from";
        return initfrom_fail(spec, msg, msglen, "%s: %s", *field,
                             "name a job of yours or an upload as \"@NAME\"");
    }
    *out = json_dumps(spec, JSON_COMPACT);
    json_decref(spec);
    if (!*out) {
        snprintf(msg, msglen, "out of memory");
        return -1;
    }
    *field = NULL;
    return 1;
}

int initfrom_check(daemon_ctx *d, const char *spec_text, char *msg, size_t msglen)
{
    char dir[4096], file[4200];
    snprintf(dir, sizeof dir, "%s/tmp", d->cfg.data_dir);
    if (mkdir(dir, 0700) != 0 && errno != EEXIST) {
        snprintf(msg, msglen, "cannot create %s: %s", dir, strerror(errno));
        return -1;
    }
    snprintf(file, sizeof file, "%s/check-XXXXXX", dir);
    int fd = mkstemp(file);
    if (fd < 0) {
        snprintf(msg, msglen, "cannot write a temporary spec: %s", strerror(errno));
        return -1;
    }
    size_t len = strlen(spec_text);
    bool ok = write(fd, spec_text, len) == (ssize_t)len;
    close(fd);
    int rc = -1;
    if (!ok) {
        snprintf(msg, msglen, "cannot write a temporary spec: %s", strerror(errno));
    } else {
        char *argv[] = {d->engine, (char *)"--validate", file, NULL};
        rc = engine_run(argv, INITFROM_CHECK_TIMEOUT_S, msg, msglen) == 0 ? 0 : -1;
    }
    unlink(file);
    return rc;
}
