/* api_files.c — /api/v1/jobs/{id}/files[/{path}]: every file of a job's run
 * directory (checkpoints, ensemble members, evaluation.json, ...), listed
 * and downloaded.
 *
 * The run directory is written by the job's own engine, which the job's
 * owner controls through the spec, so nothing in it is trusted: the walk
 * and the download go through openat() one component at a time with
 * O_NOFOLLOW from the run directory's descriptor, so a symlink (planted or
 * not) is never followed, ".." and "." components are refused, and only
 * regular files are served. */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "api/api.h"
#include "log.h"
#include "run/rundir.h"

/* Bounds on a listing: a run directory is small; a job that fills its own
 * with millions of files gets a truncated listing, not a stalled thread. */
#define API_FILES_MAX 10000
#define API_FILES_DEPTH 8

typedef struct files_walk {
    json_t *list;
    int count;
    bool truncated;
} files_walk;

static void api_files_walk(int dfd, const char *prefix, int depth, files_walk *w)
{
    DIR *dir = fdopendir(dfd);
    if (!dir) {
        close(dfd);
        return;
    }
    struct dirent *e;
    while ((e = readdir(dir)) != NULL) {
        if (strcmp(e->d_name, ".") == 0 || strcmp(e->d_name, "..") == 0)
            continue;
        if (w->count >= API_FILES_MAX) {
            w->truncated = true;
            break;
        }
        char path[1024];
        if (snprintf(path, sizeof path, "%s%s", prefix, e->d_name) >= (int)sizeof path)
            continue;
        struct stat st;
        if (fstatat(dirfd(dir), e->d_name, &st, AT_SYMLINK_NOFOLLOW) != 0)
            continue;
        if (S_ISREG(st.st_mode)) {
            json_array_append_new(
                w->list, json_pack("{s:s, s:I, s:f}", "path", path, "bytes",
                                   (json_int_t)st.st_size, "mtime",
                                   (double)st.st_mtim.tv_sec + st.st_mtim.tv_nsec / 1e9));
            w->count++;
        } else if (S_ISDIR(st.st_mode) && depth < API_FILES_DEPTH) {
            int sub = openat(dirfd(dir), e->d_name,
                             O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
            char next[1024];
            if (sub >= 0 && snprintf(next, sizeof next, "%s/", path) < (int)sizeof next)
                api_files_walk(sub, next, depth + 1, w);
            else if (sub >= 0)
                close(sub);
        }
    }
    closedir(dir);
}

static int api_files_cmp(const void *a, const void *b)
{
    const char *pa = json_string_value(json_object_get(*(json_t *const *)a, "path"));
    const char *pb = json_string_value(json_object_get(*(json_t *const *)b, "path"));
    return strcmp(pa, pb);
}

enum MHD_Result api_reply_files_removed(api_request *r)
{
    return api_reply_error(r, MHD_HTTP_GONE, NULL,
                           "job %s's files were removed by retention (retention_days %d after it "
                           "ended); its record and events are kept",
                           r->job->id, r->d->cfg.retention_days);
}

bool api_job_final_weights(api_request *r, char *spec, char *weights, const char *use,
                           enum MHD_Result *reply)
{
    const store_job *job = r->job;
    const char *data_dir = r->d->cfg.data_dir;
    struct stat st;
    if (job->files_removed) {
        *reply = api_reply_files_removed(r);
        return false;
    }
    if (!rundir_path(spec, 4096, data_dir, job->id, "job.json") ||
        !rundir_path(weights, 4096, data_dir, job->id, "weights.safetensors")) {
        *reply = api_reply_error(r, MHD_HTTP_INTERNAL_SERVER_ERROR, NULL, "path too long");
        return false;
    }
    if (job->state != JOB_SUCCEEDED || stat(weights, &st) != 0) {
        *reply = api_reply_error(r, MHD_HTTP_CONFLICT, NULL,
                                 "job %s has no final weights to %s (it is %s)", job->id, use,
                                 job_state_name(job->state));
        return false;
    }
    return true;
}

enum MHD_Result api_job_files(api_request *r)
{
    if (r->job->files_removed)
        return api_reply_files_removed(r);
    char dir[4096];
    if (!rundir_path(dir, sizeof dir, r->d->cfg.data_dir, r->job->id, NULL))
        return api_reply_error(r, MHD_HTTP_INTERNAL_SERVER_ERROR, NULL, "path too long");
    files_walk w = {json_array(), 0, false};
    int dfd = open(dir, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
    if (dfd >= 0)
        api_files_walk(dfd, "", 0, &w);
    /* Sorted by path, so a client can diff two listings. */
    size_t n = json_array_size(w.list);
    json_t **items = malloc((n ? n : 1) * sizeof *items);
    json_t *sorted = json_array();
    if (!items || !sorted) {
        free(items);
        json_decref(sorted);
        json_decref(w.list);
        return api_reply_error(r, MHD_HTTP_INTERNAL_SERVER_ERROR, NULL, "out of memory");
    }
    for (size_t i = 0; i < n; i++)
        items[i] = json_array_get(w.list, i);
    qsort(items, n, sizeof *items, api_files_cmp);
    for (size_t i = 0; i < n; i++)
        json_array_append(sorted, items[i]);
    free(items);
    json_decref(w.list);
    return api_reply_json(r, MHD_HTTP_OK,
                          json_pack("{s:o, s:b}", "files", sorted, "truncated", w.truncated));
}

/* Open rel under the directory dfd one component at a time, never
 * following a symlink; -1 (errno set) for a missing file, a symlink, an
 * empty, "." or ".." component, or a final component that is not a
 * regular file. */
static int api_files_open(int dfd, const char *rel, struct stat *st)
{
    char *copy = strdup(rel), *save = NULL;
    if (!copy)
        return -1;
    int cur = dup(dfd), fd = -1;
    size_t len = strlen(rel);
    bool bad = len == 0 || rel[0] == '/' || rel[len - 1] == '/' || strstr(rel, "//");
    for (char *c = bad ? NULL : strtok_r(copy, "/", &save); c && cur >= 0;
         c = strtok_r(NULL, "/", &save)) {
        if (strcmp(c, ".") == 0 || strcmp(c, "..") == 0) {
            bad = true;
            break;
        }
        bool last = save == NULL || *save == '\0';
        int next = openat(cur, c, O_RDONLY | O_NOFOLLOW | O_CLOEXEC | (last ? 0 : O_DIRECTORY));
        close(cur);
        cur = next;
        if (last && cur >= 0) {
            fd = cur;
            cur = -1;
        }
    }
    if (cur >= 0)
        close(cur);
    free(copy);
    if (fd >= 0 && (bad || fstat(fd, st) != 0 || !S_ISREG(st->st_mode))) {
        close(fd);
        fd = -1;
    }
    if (bad || fd < 0)
        errno = ENOENT;
    return fd;
}

enum MHD_Result api_job_file(api_request *r)
{
    if (r->job->files_removed)
        return api_reply_files_removed(r);
    char dir[4096];
    if (!rundir_path(dir, sizeof dir, r->d->cfg.data_dir, r->job->id, NULL))
        return api_reply_error(r, MHD_HTTP_INTERNAL_SERVER_ERROR, NULL, "path too long");
    int dfd = open(dir, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
    struct stat st;
    int fd = dfd >= 0 ? api_files_open(dfd, r->name, &st) : -1;
    if (dfd >= 0)
        close(dfd);
    if (fd < 0)
        return api_reply_error(r, MHD_HTTP_NOT_FOUND, NULL,
                               "job %s has no file %.200s (a regular file of its run "
                               "directory, no symlinks)", r->job->id, r->name);
    struct MHD_Response *resp = MHD_create_response_from_fd((uint64_t)st.st_size, fd);
    if (!resp) {
        close(fd);
        return api_reply_error(r, MHD_HTTP_INTERNAL_SERVER_ERROR, NULL, "cannot serve %s",
                               r->name);
    }
    const char *base = strrchr(r->name, '/');
    base = base ? base + 1 : r->name;
    char disposition[400];
    snprintf(disposition, sizeof disposition, "attachment; filename=\"%.300s\"", base);
    for (char *p = disposition + 22; *p && p[1]; p++)
        if (*p == '"' || *p == '\\' || (unsigned char)*p < 0x20)
            *p = '_';
    MHD_add_response_header(resp, MHD_HTTP_HEADER_CONTENT_TYPE, "application/octet-stream");
    MHD_add_response_header(resp, MHD_HTTP_HEADER_CONTENT_DISPOSITION, disposition);
    return api_reply_response(r, MHD_HTTP_OK, resp);
}
