/* initfrom.c — training.init_from resolved at submit (initfrom.h), on the
 * spec's parsed tree; lib/jobspec's spec_tensors_check_file then checks the
 * file against the model's tensors, in this process. */
#include "api/initfrom.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include <jansson.h>

#include "api/datasets.h"
#include "run/rundir.h"

static int initfrom_fail(char *msg, size_t msglen, const char *fmt, const char *a,
                         const char *b)
{
    snprintf(msg, msglen, fmt, a, b);
    return -1;
}

int initfrom_resolve(daemon_ctx *d, const char *owner, json_t *spec, const char **field,
                     char *msg, size_t msglen)
{
    json_t *init = json_object_get(json_object_get(spec, "training"), "init_from");
    if (!json_is_object(init))
        return 0;
    /* "path" and "optimizer" name files by absolute path; only the daemon
     * writes them (a job's weights, a PBT donor's checkpoint), never a
     * user, whose spec could otherwise point them at another user's run. */
    if (json_object_get(init, "path") || json_object_get(init, "optimizer")) {
        *field = json_object_get(init, "path") ? "training.init_from.path"
                                                : "training.init_from.optimizer";
        return initfrom_fail(msg, msglen, "%s: %s", *field,
                             "is written by punchcardd; do not give it");
    }
    const char *job = json_string_value(json_object_get(init, "job"));
    const char *ds = json_string_value(json_object_get(init, "dataset"));
    char path[4200];
    json_t *value = NULL;
    const char *key = NULL;
    if (job) {
        *field = "training.init_from.job";
        store_job j;
        store_status rs = store_job_get(d->st, job, &j);
        bool mine = rs == STORE_OK && strcmp(j.owner, owner) == 0;
        bool done = mine && j.state == JOB_SUCCEEDED;
        if (rs == STORE_OK)
            store_job_clear(&j);
        if (!mine)
            return initfrom_fail(msg, msglen, "%s: you have no job %s", *field, job);
        if (!done)
            return initfrom_fail(msg, msglen, "%s: job %s has not succeeded; a warm start "
                                 "needs its final weights", *field, job);
        char file[4096];
        struct stat st;
        if (!rundir_path(file, sizeof file, d->cfg.data_dir, job, "weights.safetensors") ||
            stat(file, &st) != 0)
            return initfrom_fail(msg, msglen, "%s: job %s has no weights.safetensors", *field,
                                 job);
        snprintf(path, sizeof path, "@%s", file);
        key = "path";
        value = json_string(path);
    } else if (ds && ds[0] == '@' && ds[1] != '/') {
        *field = "training.init_from.dataset";
        store_dataset up;
        store_status rs = store_dataset_get(d->st, owner, ds + 1, &up);
        if (rs != STORE_OK)
            return initfrom_fail(msg, msglen, "%s: you have no uploaded dataset \"%s\"",
                                 *field, ds + 1);
        store_dataset_clear(&up);
        if (!datasets_ref(d->cfg.data_dir, owner, ds + 1, path, sizeof path))
            return initfrom_fail(msg, msglen, "%s: %s", *field, "path too long");
        path[strlen(path) - 1] = '\0'; /* the ref is quoted */
        key = "dataset";
        value = json_string(path + 1);
    } else {
        *field = "training.init_from";
        return initfrom_fail(msg, msglen, "%s: %s", *field,
                             "name a job of yours or an upload as \"@NAME\"");
    }
    if (json_object_set_new(init, key, value) != 0) {
        snprintf(msg, msglen, "out of memory");
        return -1;
    }
    *field = NULL;
    return 1;
}
