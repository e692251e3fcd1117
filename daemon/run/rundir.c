/* rundir.c — run directory files: paths, creation and removal, the
 * supervisor's records, the tail of progress.jsonl, and safetensors weights
 * as JSON. Atomic writes and the safetensors reader are lib/io's. */
#include "run/rundir.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "grow/grow.h"
#include "io/io_file.h"
#include "io/tensorfile.h"

bool rundir_path(char *buf, size_t cap, const char *data_dir, const char *id, const char *file)
{
    int n = file ? snprintf(buf, cap, "%s/runs/%s/%s", data_dir, id, file)
                 : snprintf(buf, cap, "%s/runs/%s", data_dir, id);
    return n > 0 && (size_t)n < cap;
}

bool rundir_write_atomic(const char *dir, const char *name, const char *data, size_t len,
                         char *err, size_t errlen)
{
    char path[4096];
    if (snprintf(path, sizeof path, "%s/%s", dir, name) >= (int)sizeof path) {
        snprintf(err, errlen, "%s: path too long", dir);
        return false;
    }
    return atomic_write_file(path, data, len, err, errlen) == 0;
}

bool rundir_create(const char *dir, const char *spec, char *err, size_t errlen)
{
    if (mkdir(dir, 0700) != 0 && errno != EEXIST) {
        snprintf(err, errlen, "%s: %s", dir, strerror(errno));
        return false;
    }
    return rundir_write_atomic(dir, "job.json", spec, strlen(spec), err, errlen);
}

bool rundir_give(const char *dir, uid_t uid, gid_t gid, char *err, size_t errlen)
{
    DIR *d = opendir(dir);
    bool ok = d && fchown(dirfd(d), uid, gid) == 0;
    for (struct dirent *e; ok && (e = readdir(d)) != NULL;)
        if (strcmp(e->d_name, ".") != 0 && strcmp(e->d_name, "..") != 0)
            ok = fchownat(dirfd(d), e->d_name, uid, gid, AT_SYMLINK_NOFOLLOW) == 0;
    if (!ok)
        snprintf(err, errlen, "%s: cannot hand it to uid %d: %s", dir, (int)uid,
                 strerror(errno));
    if (d)
        closedir(d);
    return ok;
}

/* Remove everything under the open directory fd, then nothing else. */
static bool rundir_remove_at(int dfd)
{
    DIR *d = fdopendir(dfd);
    if (!d) {
        close(dfd);
        return false;
    }
    bool ok = true;
    struct dirent *e;
    while ((e = readdir(d)) != NULL) {
        if (strcmp(e->d_name, ".") == 0 || strcmp(e->d_name, "..") == 0)
            continue;
        if (unlinkat(dirfd(d), e->d_name, 0) == 0)
            continue;
        if (errno != EISDIR && errno != EPERM) {
            ok = false;
            continue;
        }
        int sub = openat(dirfd(d), e->d_name, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
        if (sub < 0 || !rundir_remove_at(sub) || unlinkat(dirfd(d), e->d_name, AT_REMOVEDIR) != 0)
            ok = false;
    }
    closedir(d);
    return ok;
}

bool rundir_remove(const char *dir)
{
    int dfd = open(dir, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
    if (dfd < 0)
        return errno == ENOENT;
    return rundir_remove_at(dfd) && rmdir(dir) == 0;
}

static json_t *rundir_load_json(const char *dir, const char *name)
{
    char path[4096];
    if (snprintf(path, sizeof path, "%s/%s", dir, name) >= (int)sizeof path)
        return NULL;
    return json_load_file(path, JSON_REJECT_DUPLICATES, NULL);
}

bool rundir_read_exit(const char *dir, rundir_exit *out)
{
    json_t *j = rundir_load_json(dir, "exit.json");
    if (!j)
        return false;
    json_t *code = json_object_get(j, "exit_code");
    bool ok = json_is_integer(code);
    if (ok) {
        out->exit_code = (int)json_integer_value(code);
        out->signal = (int)json_integer_value(json_object_get(j, "signal"));
        out->ended_at = json_number_value(json_object_get(j, "ended_at"));
        /* Absent from records written before they were kept: unknown. */
        json_t *cpu = json_object_get(j, "cpu_s"), *peak = json_object_get(j, "peak_rss_bytes");
        out->cpu_s = json_is_number(cpu) ? json_number_value(cpu) : -1;
        out->peak_rss_bytes = json_is_number(peak) ? json_number_value(peak) : -1;
    }
    json_decref(j);
    return ok;
}

bool rundir_read_supervisor(const char *dir, rundir_supervisor *out)
{
    json_t *j = rundir_load_json(dir, "supervisor.json");
    if (!j)
        return false;
    json_t *sid = json_object_get(j, "sid");
    bool ok = json_is_integer(sid) && json_integer_value(sid) > 1;
    if (ok) {
        out->sid = (pid_t)json_integer_value(sid);
        out->supervisor_pid = (pid_t)json_integer_value(json_object_get(j, "supervisor_pid"));
        json_t *sup_start = json_object_get(j, "supervisor_start");
        json_t *sid_start = json_object_get(j, "sid_start");
        out->supervisor_start = json_is_integer(sup_start) ? json_integer_value(sup_start) : -1;
        out->sid_start = json_is_integer(sid_start) ? json_integer_value(sid_start) : -1;
    }
    json_decref(j);
    return ok;
}

char *rundir_read_tail(const char *path, size_t cap, size_t *len, bool *start_is_line)
{
    int fd = open(path, O_RDONLY | O_CLOEXEC);
    if (fd < 0)
        return NULL;
    struct stat stbuf;
    char *buf = NULL;
    if (fstat(fd, &stbuf) == 0 && stbuf.st_size > 0) {
        off_t off = stbuf.st_size > (off_t)cap ? stbuf.st_size - (off_t)cap : 0;
        size_t want = (size_t)(stbuf.st_size - off);
        buf = malloc(want + 1);
        ssize_t got = buf ? io_pread_full(fd, buf, want, off) : -1;
        if (got < 0) {
            free(buf);
            buf = NULL;
        } else {
            buf[got] = '\0';
            *len = (size_t)got;
            *start_is_line = off == 0;
        }
    }
    close(fd);
    return buf;
}

void rundir_progress_clear(rundir_progress *p)
{
    json_decref(p->progress);
    json_decref(p->result);
    free(p->end_error);
    memset(p, 0, sizeof *p);
}

/* A copy of line without the bookkeeping keys. */
static json_t *rundir_progress_fields(json_t *line)
{
    json_t *copy = json_deep_copy(line);
    json_object_del(copy, "event");
    json_object_del(copy, "time");
    json_object_del(copy, "status");
    return copy;
}

void rundir_read_progress(const char *dir, rundir_progress *out)
{
    memset(out, 0, sizeof *out);
    char path[4096];
    size_t len = 0;
    bool whole_first = false;
    char *buf = NULL;
    if (snprintf(path, sizeof path, "%s/progress.jsonl", dir) < (int)sizeof path)
        buf = rundir_read_tail(path, 64 * 1024, &len, &whole_first);
    json_t *latest = NULL, *epoch = NULL, *start = NULL;
    /* Walk complete lines from the newest; the first few answer everything. */
    size_t end = len;
    while (buf && end > 0 && !(latest && epoch) && !start) {
        if (buf[end - 1] != '\n') { /* a line still being written: skip it */
            while (end > 0 && buf[end - 1] != '\n')
                end--;
            continue;
        }
        size_t b = end - 1;
        while (b > 0 && buf[b - 1] != '\n')
            b--;
        if (b == 0 && !whole_first)
            break; /* the oldest line in the buffer may be cut */
        json_t *line = json_loadb(buf + b, end - 1 - b, 0, NULL);
        end = b;
        const char *ev = json_string_value(json_object_get(line, "event"));
        if (!ev) {
            json_decref(line);
            continue;
        }
        if (strcmp(ev, "end") == 0 && !out->result && !out->end_status[0]) {
            const char *status = json_string_value(json_object_get(line, "status"));
            snprintf(out->end_status, sizeof out->end_status, "%s", status ? status : "");
            const char *e = json_string_value(json_object_get(line, "error"));
            out->end_error = e ? strdup(e) : NULL;
            const char *key;
            json_t *val;
            json_object_foreach(line, key, val) {
                if (strncmp(key, "test_", 5) == 0) {
                    if (!out->result)
                        out->result = json_object();
                    json_object_set(out->result, key, val);
                }
            }
            json_decref(line);
        } else if ((strcmp(ev, "step") == 0 || strcmp(ev, "epoch") == 0)) {
            if (!latest)
                latest = json_incref(line);
            if (!epoch && strcmp(ev, "epoch") == 0)
                epoch = json_incref(line);
            json_decref(line);
        } else if (strcmp(ev, "start") == 0) {
            start = line;
        } else {
            json_decref(line);
        }
    }
    free(buf);
    json_t *p = latest ? rundir_progress_fields(latest) : json_object();
    if (epoch && epoch != latest) {
        const char *key;
        json_t *val;
        json_object_foreach(epoch, key, val)
            if (strncmp(key, "val_", 4) == 0 && !json_object_get(p, key))
                json_object_set(p, key, val);
    }
    if (start && latest) {
        const char *fill[] = {"epochs", "steps"};
        for (size_t i = 0; i < 2; i++)
            if (!json_object_get(p, fill[i]) && json_object_get(start, fill[i]))
                json_object_set(p, fill[i], json_object_get(start, fill[i]));
    }
    json_decref(latest);
    json_decref(epoch);
    json_decref(start);
    out->progress = p;
}

/* Is a line worth quoting: not blank, not a rule of dashes? */
static bool rundir_line_says_something(const char *line, size_t n)
{
    for (size_t i = 0; i < n; i++)
        if (!strchr(" \t\r-", line[i]))
            return true;
    return false;
}

/* Does a path token end at c? */
static bool rundir_token_end(char c)
{
    return !c || strchr(" \t\"'(),;:", c) != NULL;
}

/* Replace s[b, e) by rep, in place (rep no longer than the span). */
static void rundir_splice(char *s, size_t b, size_t e, const char *rep)
{
    size_t r = strlen(rep);
    memcpy(s + b, rep, r);
    memmove(s + b + r, s + e, strlen(s + e) + 1);
}

void rundir_hide_internals(char *s)
{
    static const char uploads[] = "/uploads/", cgroup[] = "/sys/fs/cgroup/";
    /* ".../uploads/<sha256 of the owner>/NAME" is the user's "@NAME". */
    for (char *at = strstr(s, uploads); at; at = strstr(at + 1, uploads)) {
        const char *hex = at + strlen(uploads);
        size_t n = strspn(hex, "0123456789abcdef");
        if (n != 64 || hex[n] != '/')
            continue;
        size_t b = (size_t)(at - s);
        while (b > 0 && !rundir_token_end(s[b - 1]))
            b--;
        rundir_splice(s, b, (size_t)(hex + n + 1 - s), "@");
        at = s + b;
    }
    for (char *at = strstr(s, cgroup); at; at = strstr(at + 1, cgroup)) {
        size_t b = (size_t)(at - s), e = b;
        while (!rundir_token_end(s[e]))
            e++;
        if (e - b >= sizeof "its cgroup" - 1) {
            rundir_splice(s, b, e, "its cgroup");
            at = s + b;
        }
    }
}

void rundir_failure_line(const char *path, char *buf, size_t cap)
{
    static const char engine_prefix[] = "punch-train: ";
    buf[0] = '\0';
    size_t len = 0;
    bool whole = false;
    /* mpirun's closing banners after the engine's line are about 1 KiB per
     * failed rank. */
    char *tail = rundir_read_tail(path, 16 * 1024, &len, &whole);
    if (!tail)
        return;
    size_t pick_b = 0, pick_e = 0;
    bool have_engine = false, have_any = false;
    size_t e = len;
    while (e > 0 && !have_engine) {
        size_t b = e;
        while (b > 0 && tail[b - 1] != '\n')
            b--;
        /* A first line cut by the tail read is not a whole line. */
        bool complete = b > 0 || whole;
        size_t n = e - b;
        if (complete && n >= sizeof engine_prefix - 1 &&
            memcmp(tail + b, engine_prefix, sizeof engine_prefix - 1) == 0) {
            pick_b = b, pick_e = e, have_engine = true;
        } else if (complete && !have_any && rundir_line_says_something(tail + b, n)) {
            pick_b = b, pick_e = e, have_any = true;
        }
        e = b > 0 ? b - 1 : 0;
    }
    while (pick_e > pick_b && (tail[pick_e - 1] == '\r' || tail[pick_e - 1] == ' '))
        pick_e--;
    size_t n = pick_e - pick_b < cap - 1 ? pick_e - pick_b : cap - 1;
    memcpy(buf, tail + pick_b, n);
    buf[n] = '\0';
    for (size_t i = 0; i < n; i++)
        if ((unsigned char)buf[i] < 0x20)
            buf[i] = ' ';
    rundir_hide_internals(buf);
    free(tail);
}

json_t *rundir_weights_model(const char *path, char *err, size_t errlen)
{
    tensor_entry *t;
    int n;
    if (safetensors_read(path, &t, &n, err, errlen) != 0)
        return NULL;
    json_t *model = json_object();
    for (int i = 0; model && i < n; i++) {
        json_t *shape = json_array(), *data = json_array();
        for (int d = 0; shape && d < t[i].rank; d++)
            json_array_append_new(shape, json_integer(t[i].dims[d]));
        long size = tensor_entry_size(&t[i]);
        for (long k = 0; data && k < size; k++)
            json_array_append_new(data, json_real(t[i].data[k]));
        json_t *entry = json_pack("{s:o, s:o}", "shape", shape, "data", data);
        if (!entry || json_object_set_new(model, t[i].name, entry) != 0) {
            json_decref(model);
            model = NULL;
        }
    }
    tensorfile_free(t, n);
    if (!model)
        snprintf(err, errlen, "%s: out of memory", path);
    return model;
}

static int rundir_cmp_desc(const void *a, const void *b)
{
    int x = *(const int *)a, y = *(const int *)b;
    return (x < y) - (x > y);
}

/* The epoch of a finished model_checkpoint file name, or -1. */
static int rundir_checkpoint_epoch(const char *name)
{
    int epoch, used = 0;
    if (sscanf(name, "weights-epoch-%d%n", &epoch, &used) != 1 || epoch < 0)
        return -1;
    const char *ext = strrchr(name, '.');
    if (!ext || (strcmp(ext, ".safetensors") != 0 && strcmp(ext, ".npz") != 0))
        return -1;
    /* After the number: the extension, or ".member-K" then it. */
    const char *rest = name + used;
    return rest == ext || strncmp(rest, ".member-", 8) == 0 ? epoch : -1;
}

int rundir_prune_checkpoints(const char *dir, int keep)
{
    char path[4200];
    if (keep <= 0 || snprintf(path, sizeof path, "%s/checkpoints", dir) >= (int)sizeof path)
        return 0;
    DIR *d = opendir(path);
    if (!d)
        return 0;
    int *epochs = NULL;
    size_t n = 0, cap = 0;
    for (struct dirent *e; (e = readdir(d)) != NULL;) {
        int epoch = rundir_checkpoint_epoch(e->d_name);
        if (epoch < 0)
            continue;
        if (!grow_reserve((void **)&epochs, &cap, n + 1, sizeof *epochs))
            break;
        epochs[n++] = epoch;
    }
    /* The keep-th newest distinct epoch: files older than it go. */
    if (n > 0)
        qsort(epochs, n, sizeof *epochs, rundir_cmp_desc);
    int distinct = 0, oldest_kept = -1;
    for (size_t i = 0; i < n && distinct < keep; i++)
        if (i == 0 || epochs[i] != epochs[i - 1]) {
            distinct++;
            oldest_kept = epochs[i];
        }
    free(epochs);
    int removed = 0;
    if (distinct == keep) {
        rewinddir(d);
        for (struct dirent *e; (e = readdir(d)) != NULL;) {
            int epoch = rundir_checkpoint_epoch(e->d_name);
            removed += epoch >= 0 && epoch < oldest_kept && unlinkat(dirfd(d), e->d_name, 0) == 0;
        }
    }
    closedir(d);
    return removed;
}

bool rundir_clear_ended(const char *dir, char *err, size_t errlen)
{
    static const char *const ended[] = {"exit.json", "supervisor.json"};
    for (size_t i = 0; i < sizeof ended / sizeof ended[0]; i++) {
        char path[4200];
        if (snprintf(path, sizeof path, "%s/%s", dir, ended[i]) >= (int)sizeof path) {
            snprintf(err, errlen, "run directory path too long");
            return false;
        }
        if (unlink(path) != 0 && errno != ENOENT) {
            snprintf(err, errlen, "cannot remove the last run's %s: %s", ended[i],
                     strerror(errno));
            return false;
        }
    }
    return true;
}
