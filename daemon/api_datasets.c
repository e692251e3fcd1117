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
#include <fcntl.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "api.h"
#include "crypto/sha256.h"
#include "datasets.h"
#include "log.h"

/* A client streaming past a refusal is cut off after this much more. */
#define API_STREAM_DISCARD_MAX (8LL << 20)

struct api_stream {
    int fd;
    char tmp[4096];          /* "" once placed or removed */
    char final[4096];
    sha256_ctx sha;
    long long bytes, limit, discarded;
    int status;              /* a refusal's HTTP status; 0: none */
    char error[300];
};

static void api_stream_refuse(api_stream *s, int status, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));

static void api_stream_refuse(api_stream *s, int status, const char *fmt, ...)
{
    if (s->status)
        return;
    s->status = status;
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(s->error, sizeof s->error, fmt, ap);
    va_end(ap);
    if (s->fd >= 0) {
        close(s->fd);
        s->fd = -1;
    }
    if (s->tmp[0]) {
        unlink(s->tmp);
        s->tmp[0] = 0;
    }
}

static bool api_mkdir(const char *path)
{
    return mkdir(path, 0700) == 0 || errno == EEXIST;
}

api_stream *api_datasets_stream_open(api_request *r)
{
    api_stream *s = calloc(1, sizeof *s);
    if (!s)
        return NULL;
    s->fd = -1;
    s->limit = r->d->cfg.upload_max;
    sha256_init(&s->sha);
    const char *why = NULL;
    if (!datasets_name_ok(r->name, &why)) {
        api_stream_refuse(s, MHD_HTTP_BAD_REQUEST, "dataset name \"%.80s\" %s", r->name, why);
        return s;
    }
    const char *cl = MHD_lookup_connection_value(r->conn, MHD_HEADER_KIND,
                                                 MHD_HTTP_HEADER_CONTENT_LENGTH);
    long long declared = cl ? strtoll(cl, NULL, 10) : -1;
    if (declared > s->limit) {
        api_stream_refuse(s, MHD_HTTP_CONTENT_TOO_LARGE,
                          "upload of %lld bytes is over the limit of %lld bytes (upload_max)",
                          declared, s->limit);
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
    if (!datasets_owner_dir(r->d->cfg.data_dir, r->caller.identity, dir, sizeof dir) ||
        !datasets_path(r->d->cfg.data_dir, r->caller.identity, r->name, s->final,
                       sizeof s->final) ||
        snprintf(s->tmp, sizeof s->tmp, "%s/.upload-XXXXXX", dir) >= (int)sizeof s->tmp) {
        s->tmp[0] = 0;
        api_stream_refuse(s, MHD_HTTP_INTERNAL_SERVER_ERROR, "upload path too long");
        return s;
    }
    if (!api_mkdir(top) || !api_mkdir(dir) || (s->fd = mkostemp(s->tmp, O_CLOEXEC)) < 0) {
        log_error("datasets: cannot create a temporary file in %s: %s", dir, strerror(errno));
        s->tmp[0] = 0;
        api_stream_refuse(s, MHD_HTTP_INTERNAL_SERVER_ERROR,
                          "cannot store the upload; see the server log");
    }
    return s;
}

bool api_stream_write(api_stream *s, const char *data, size_t n)
{
    if (!s->status && s->bytes + (long long)n > s->limit)
        api_stream_refuse(s, MHD_HTTP_CONTENT_TOO_LARGE,
                          "upload is over the limit of %lld bytes (upload_max)", s->limit);
    if (s->status) {
        s->discarded += (long long)n;
        return s->discarded <= API_STREAM_DISCARD_MAX;
    }
    sha256_update(&s->sha, data, n);
    s->bytes += (long long)n;
    for (size_t done = 0; done < n;) {
        ssize_t w = write(s->fd, data + done, n - done);
        if (w < 0 && errno == EINTR)
            continue;
        if (w < 0) {
            int e = errno;
            log_error("datasets: writing %s: %s", s->tmp, strerror(e));
            api_stream_refuse(s, e == ENOSPC ? MHD_HTTP_INSUFFICIENT_STORAGE
                                             : MHD_HTTP_INTERNAL_SERVER_ERROR,
                              "cannot store the upload: %s", strerror(e));
            return true;
        }
        done += (size_t)w;
    }
    return true;
}

bool api_stream_refused(const api_stream *s)
{
    return s->status != 0;
}

void api_stream_free(api_stream *s)
{
    if (!s)
        return;
    if (s->fd >= 0)
        close(s->fd);
    if (s->tmp[0])
        unlink(s->tmp);
    free(s);
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

enum MHD_Result api_datasets_list(api_request *r)
{
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
    if (!datasets_ref(r->d->cfg.data_dir, ds.owner, ds.name, ref, sizeof ref) ||
        !datasets_path(r->d->cfg.data_dir, ds.owner, ds.name, path, sizeof path)) {
        store_dataset_clear(&ds);
        return api_reply_error(r, MHD_HTTP_INTERNAL_SERVER_ERROR, NULL, "path too long");
    }
    store_status rs = store_dataset_delete(r->d->st, ds.owner, ds.name, ref);
    if (rs != STORE_OK) {
        store_dataset_clear(&ds);
        if (rs == STORE_CONFLICT)
            return api_reply_error(r, MHD_HTTP_CONFLICT, NULL,
                                   "dataset %s is used by a queued or running job; cancel "
                                   "it or wait for it to end", r->name);
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

/* Put the checked temporary file in place (inside the store transaction). */
static bool api_stream_place(void *arg)
{
    api_stream *s = arg;
    if (rename(s->tmp, s->final) != 0) {
        log_error("datasets: renaming %s to %s: %s", s->tmp, s->final, strerror(errno));
        return false;
    }
    s->tmp[0] = 0;
    char dir[4096];
    snprintf(dir, sizeof dir, "%s", s->final);
    char *slash = strrchr(dir, '/');
    if (slash)
        *slash = 0;
    int dfd = open(dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
    if (dfd >= 0) {
        fsync(dfd);
        close(dfd);
    }
    return true;
}

enum MHD_Result api_dataset_put(api_request *r)
{
    api_stream *s = r->stream;
    if (!s)
        return api_reply_error(r, MHD_HTTP_INTERNAL_SERVER_ERROR, NULL, "no upload stream");
    if (s->status)
        return api_reply_error(r, s->status, NULL, "%s", s->error);
    if (fsync(s->fd) != 0)
        return api_reply_error(r, MHD_HTTP_INTERNAL_SERVER_ERROR, NULL,
                               "cannot store the upload: %s", strerror(errno));
    datasets_info info;
    char why[600];
    if (datasets_check(s->fd, &info, why, sizeof why) != 0)
        return api_reply_error(r, MHD_HTTP_BAD_REQUEST, NULL, "%s", why);
    uint8_t digest[SHA256_DIGEST_LEN];
    store_dataset ds;
    memset(&ds, 0, sizeof ds);
    snprintf(ds.owner, sizeof ds.owner, "%s", r->caller.identity);
    snprintf(ds.name, sizeof ds.name, "%s", r->name);
    snprintf(ds.format, sizeof ds.format, "%s", info.format);
    ds.bytes = s->bytes;
    sha256_final(&s->sha, digest);
    sha256_hex(digest, ds.sha256);
    ds.records = info.records;
    ds.shapes = json_dumps(info.shapes, JSON_COMPACT);
    ds.created_at = daemon_now();
    char ref[4200];
    bool replaced = false;
    store_status rs = STORE_ERROR;
    if (ds.shapes && datasets_ref(r->d->cfg.data_dir, ds.owner, ds.name, ref, sizeof ref))
        rs = store_dataset_put(r->d->st, &ds, ref, r->d->cfg.upload_quota, api_stream_place, s,
                               &replaced);
    enum MHD_Result ret;
    if (rs == STORE_CONFLICT) {
        ret = api_reply_error(r, MHD_HTTP_CONFLICT, NULL,
                              "dataset %s is used by a queued or running job; it cannot be "
                              "replaced until that job ends", ds.name);
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
