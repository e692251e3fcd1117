/* api_datasets.c — /api/v1/datasets[/{name}]: a user's uploaded datasets.
 *
 * An upload streams to a temporary file beside its final place (the body
 * is never held in memory), hashed with SHA-256 as it arrives; once whole
 * it is fsynced, checked (datasets_check), then renamed over NAME inside
 * the store transaction that records it, so a reader sees the old file or
 * the new one, never a part. Limits: cfg.upload_max per upload (413, from
 * Content-Length before a byte is read, or once a chunked body passes
 * it), cfg.upload_quota per user (507, checked in that transaction). A
 * dataset a queued or running job names cannot be replaced or deleted
 * (409): the job reads the file when it starts. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "api/api.h"
#include "api/datasets.h"
#include "api/sitelist.h"
#include "onnx/onnx_import.h"
#include "log.h"

api_stream *api_datasets_stream_open(api_request *r)
{
    api_stream *s = api_stream_new(r->d->cfg.upload_max);
    if (!s)
        return NULL;
    const char *why = NULL;
    if (!datasets_name_ok(r->name, &why)) {
        api_stream_refuse(s, MHD_HTTP_BAD_REQUEST, "dataset name \"%.80s\" %s", r->name, why);
        return s;
    }
    const char *cl = MHD_lookup_connection_value(r->conn, MHD_HEADER_KIND,
                                                 MHD_HTTP_HEADER_CONTENT_LENGTH);
    long long declared = cl ? strtoll(cl, NULL, 10) : -1;
    if (declared > r->d->cfg.upload_max) {
        api_stream_refuse(s, MHD_HTTP_CONTENT_TOO_LARGE,
                          "upload of %lld bytes is over the limit of %ld bytes (upload_max)",
                          declared, r->d->cfg.upload_max);
        return s;
    }
    if (declared > r->d->cfg.upload_quota) {
        api_stream_refuse(s, MHD_HTTP_INSUFFICIENT_STORAGE,
                          "upload of %lld bytes is over %s's quota of %ld bytes (upload_quota)",
                          declared, r->caller.identity, r->d->cfg.upload_quota);
        return s;
    }
    char dir[4096], top[4096];
    snprintf(top, sizeof top, "%s/uploads", r->d->cfg.data_dir);
    if (!datasets_owner_dir(r->d->cfg.data_dir, r->caller.identity, dir, sizeof dir)) {
        api_stream_refuse(s, MHD_HTTP_INTERNAL_SERVER_ERROR, "upload path too long");
        return s;
    }
    if (mkdir(top, 0700) != 0 && errno != EEXIST)
        log_error("datasets: cannot create %s: %s", top, strerror(errno));
    api_stream_open_in(s, dir, "upload_max");
    return s;
}

/* ---- replies ---------------------------------------------------------------- */

static json_t *api_dataset_json(const store_dataset *ds, bool owner, bool full)
{
    json_t *o = json_pack("{s:s, s:s, s:I, s:s, s:f}", "name", ds->name, "format", ds->format,
                          "bytes", (json_int_t)ds->bytes, "sha256", ds->sha256, "created_at",
                          ds->created_at);
    if (!o)
        return NULL;
    if (owner)
        json_object_set_new(o, "owner", json_string(ds->owner));
    if (full) {
        json_object_set_new(o, "records",
                            ds->records >= 0 ? json_integer(ds->records) : json_null());
        json_t *shapes = json_loads(ds->shapes ? ds->shapes : "{}", 0, NULL);
        json_object_set_new(o, "shapes", shapes ? shapes : json_object());
    }
    return o;
}

static bool api_dataset_add(const store_dataset *ds, void *arg)
{
    json_t *o = api_dataset_json(ds, true, false);
    return o && json_array_append_new(arg, o) == 0;
}

/* ?site=1: the admin's datasets under the `datasets` roots, the same for
 * every caller, at most ?limit=N (SITELIST_DEFAULT_LIMIT). */
static enum MHD_Result api_datasets_site(api_request *r)
{
    const char *lim = MHD_lookup_connection_value(r->conn, MHD_GET_ARGUMENT_KIND, "limit");
    long limit = SITELIST_DEFAULT_LIMIT;
    if (lim) {
        char *end;
        limit = strtol(lim, &end, 10);
        if (end == lim || *end || limit < 1 || limit > SITELIST_MAX_LIMIT)
            return api_reply_error(r, MHD_HTTP_BAD_REQUEST, "limit",
                                   "limit must be 1 to %d", SITELIST_MAX_LIMIT);
    }
    bool truncated = false;
    json_t *list = sitelist_scan(r->d->cfg.datasets, (int)limit, &truncated);
    if (!list)
        return api_reply_error(r, MHD_HTTP_INTERNAL_SERVER_ERROR, NULL, "out of memory");
    return api_reply_json(r, MHD_HTTP_OK,
                          json_pack("{s:o, s:b}", "datasets", list, "truncated", truncated));
}

enum MHD_Result api_datasets_list(api_request *r)
{
    const char *site = MHD_lookup_connection_value(r->conn, MHD_GET_ARGUMENT_KIND, "site");
    if (site && strcmp(site, "0") != 0)
        return api_datasets_site(r);
    bool admin = r->caller.role == AUTH_ROLE_ADMIN;
    json_t *list = json_array();
    if (!list || store_dataset_list(r->d->st, admin ? NULL : r->caller.identity,
                                    api_dataset_add, list) != STORE_OK) {
        json_decref(list);
        return api_reply_error(r, MHD_HTTP_INTERNAL_SERVER_ERROR, NULL, "store error");
    }
    if (!admin) {
        size_t i;
        json_t *o;
        json_array_foreach(list, i, o) json_object_del(o, "owner");
    }
    json_int_t used = store_dataset_usage(r->d->st, r->caller.identity);
    return api_reply_json(r, MHD_HTTP_OK,
                          json_pack("{s:o, s:I, s:I}", "datasets", list, "used_bytes",
                                    used < 0 ? (json_int_t)0 : used, "quota_bytes",
                                    (json_int_t)r->d->cfg.upload_quota));
}

/* " (job ID)", naming the job that holds a dataset for a 409, or "" when
 * the store cannot say (it ended meanwhile, or a store error). */
static void api_dataset_user(api_request *r, const char *owner, const char *ref, char *buf,
                             size_t len)
{
    char id[STORE_ID_LEN + 1];
    if (store_dataset_user(r->d->st, owner, ref, id) == STORE_OK)
        snprintf(buf, len, " (job %s)", id);
    else
        buf[0] = '\0';
}

/* The dataset the path names, of the caller; false with the reply queued
 * (400 for a bad name, 404, 500). */
static bool api_dataset_load(api_request *r, store_dataset *ds, enum MHD_Result *ret)
{
    const char *why = NULL;
    if (!datasets_name_ok(r->name, &why)) {
        *ret = api_reply_error(r, MHD_HTTP_BAD_REQUEST, NULL, "dataset name \"%.80s\" %s",
                               r->name, why);
        return false;
    }
    store_status rs = store_dataset_get(r->d->st, r->caller.identity, r->name, ds);
    if (rs == STORE_OK)
        return true;
    *ret = rs == STORE_NOT_FOUND
               ? api_reply_error(r, MHD_HTTP_NOT_FOUND, NULL, "no dataset %s", r->name)
               : api_reply_error(r, MHD_HTTP_INTERNAL_SERVER_ERROR, NULL, "store error");
    return false;
}

enum MHD_Result api_dataset_get(api_request *r)
{
    store_dataset ds;
    enum MHD_Result ret;
    if (!api_dataset_load(r, &ds, &ret))
        return ret;
    json_t *o = api_dataset_json(&ds, false, true);
    store_dataset_clear(&ds);
    return api_reply_json(r, MHD_HTTP_OK, o);
}

enum MHD_Result api_dataset_delete(api_request *r)
{
    store_dataset ds;
    enum MHD_Result ret;
    if (!api_dataset_load(r, &ds, &ret))
        return ret;
    char ref[4200], path[4096];
    if (!datasets_use_ref(r->d->cfg.data_dir, ds.owner, ds.name, ref, sizeof ref) ||
        !datasets_path(r->d->cfg.data_dir, ds.owner, ds.name, path, sizeof path)) {
        store_dataset_clear(&ds);
        return api_reply_error(r, MHD_HTTP_INTERNAL_SERVER_ERROR, NULL, "path too long");
    }
    store_status rs = store_dataset_delete(r->d->st, ds.owner, ds.name, ref);
    if (rs != STORE_OK) {
        store_dataset_clear(&ds);
        if (rs == STORE_CONFLICT) {
            char user[48];
            api_dataset_user(r, ds.owner, ref, user, sizeof user);
            return api_reply_error(r, MHD_HTTP_CONFLICT, NULL,
                                   "dataset %s is used by a queued or running job%s; cancel "
                                   "it or wait for it to end", r->name, user);
        }
        if (rs == STORE_NOT_FOUND)
            return api_reply_error(r, MHD_HTTP_NOT_FOUND, NULL, "no dataset %s", r->name);
        return api_reply_error(r, MHD_HTTP_INTERNAL_SERVER_ERROR, NULL, "store error");
    }
    if (unlink(path) != 0 && errno != ENOENT)
        log_error("datasets: removing %s: %s", path, strerror(errno));
    log_info("dataset %s (%s): deleted", ds.name, ds.owner);
    json_t *o = api_dataset_json(&ds, false, false);
    store_dataset_clear(&ds);
    json_object_set_new(o, "deleted", json_true());
    return api_reply_json(r, MHD_HTTP_OK, o);
}

typedef struct api_put {
    api_stream *s;
    const char *final;
} api_put;

/* Put the checked temporary file in place (inside the store transaction). */
static bool api_put_place(void *arg)
{
    const api_put *p = arg;
    return api_stream_place(p->s, p->final);
}

enum MHD_Result api_dataset_put(api_request *r)
{
    api_stream *s = r->stream;
    if (!s)
        return api_reply_error(r, MHD_HTTP_INTERNAL_SERVER_ERROR, NULL, "no upload stream");
    const char *refusal;
    int status = api_stream_status(s, &refusal);
    if (status)
        return api_reply_error(r, status, NULL, "%s", refusal);
    datasets_info info;
    char why[600], final[4096];
    if (!datasets_path(r->d->cfg.data_dir, r->caller.identity, r->name, final, sizeof final))
        return api_reply_error(r, MHD_HTTP_INTERNAL_SERVER_ERROR, NULL, "path too long");
    if ((onnx_path_is_model(r->name) ? datasets_check_model : datasets_check)(
            api_stream_fd(s), &info, why, sizeof why) != 0)
        return api_reply_error(r, MHD_HTTP_BAD_REQUEST, NULL, "%s", why);
    store_dataset ds;
    memset(&ds, 0, sizeof ds);
    snprintf(ds.owner, sizeof ds.owner, "%s", r->caller.identity);
    snprintf(ds.name, sizeof ds.name, "%s", r->name);
    snprintf(ds.format, sizeof ds.format, "%s", info.format);
    ds.bytes = api_stream_bytes(s);
    api_stream_sha256(s, ds.sha256);
    ds.records = info.records;
    ds.shapes = json_dumps(info.shapes, JSON_COMPACT);
    ds.created_at = daemon_now();
    char ref[4200];
    bool replaced = false;
    store_status rs = STORE_ERROR;
    if (ds.shapes && datasets_use_ref(r->d->cfg.data_dir, ds.owner, ds.name, ref, sizeof ref))
        rs = store_dataset_put(r->d->st, &ds, ref, r->d->cfg.upload_quota, api_put_place,
                               &(api_put){s, final}, &replaced);
    enum MHD_Result ret;
    if (rs == STORE_CONFLICT) {
        char user[48];
        api_dataset_user(r, ds.owner, ref, user, sizeof user);
        ret = api_reply_error(r, MHD_HTTP_CONFLICT, NULL,
                              "dataset %s is used by a queued or running job%s; it cannot be "
                              "replaced until that job ends", ds.name, user);
    } else if (rs == STORE_LIMIT) {
        ret = api_reply_error(r, MHD_HTTP_INSUFFICIENT_STORAGE, NULL,
                              "%s's uploads would exceed the quota of %ld bytes "
                              "(upload_quota); delete some datasets first",
                              ds.owner, r->d->cfg.upload_quota);
    } else if (rs != STORE_OK) {
        ret = api_reply_error(r, MHD_HTTP_INTERNAL_SERVER_ERROR, NULL,
                              "could not store the dataset; see the server log");
    } else {
        log_info("dataset %s (%s): %s, %lld bytes, %s", ds.name, ds.owner, ds.format, ds.bytes,
                 replaced ? "replaced" : "new");
        json_t *o = api_dataset_json(&ds, false, true);
        ret = api_reply_json(r, replaced ? MHD_HTTP_OK : MHD_HTTP_CREATED, o);
    }
    free(ds.shapes);
    datasets_info_clear(&info);
    return ret;
}
