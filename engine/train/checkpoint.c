/* checkpoint.c — save and restore a single-process run (see checkpoint.h). */
#include "train/checkpoint.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <zlib.h>

#include "io/io_file.h"
#include "train/checkpoint_file.h"

#define CKPT_MAGIC "PUNCHCK1"
/* Version 2: the parameter and optimizer floats are in the model's aligned
 * layout (LAYER_PARAM_ALIGN padding between tensors); a version 1 file
 * (unpadded) is refused with a message rather than misread. Version 3: the
 * position counts its loss terms (per-step models). */
#define CKPT_VERSION 3u
/* Far above any model this engine trains; a length field beyond it is corruption. */
#define CKPT_MAX_BYTES ((size_t)16 << 30)

typedef struct checkpoint_head {
    char magic[8];
    uint64_t version;
    uint64_t spec_hash;
    train_position pos;
    int64_t n_params, n_state, n_optim, n_history, sched_bytes, record_bytes;
} checkpoint_head;

uint64_t checkpoint_spec_hash(const job_spec *spec)
{
    json_t *j = spec_to_json(spec);
    if (!j)
        return 0;
    json_object_del(j, "name");
    json_object_del(j, "resources");
    json_t *training = json_object_get(j, "training");
    if (training)
        json_object_del(training, "epochs");
    char *text = json_dumps(j, JSON_COMPACT | JSON_SORT_KEYS);
    json_decref(j);
    if (!text)
        return 0;
    uint64_t h = 0xcbf29ce484222325ULL; /* FNV-1a */
    for (const unsigned char *p = (const unsigned char *)text; *p; p++)
        h = (h ^ *p) * 0x100000001b3ULL;
    free(text);
    return h;
}

static size_t checkpoint_body_size(const checkpoint_head *h)
{
    return sizeof *h + (size_t)h->sched_bytes + (size_t)h->n_history * (size_t)h->record_bytes +
           (size_t)(h->n_params + h->n_state + h->n_optim) * sizeof(float);
}

int checkpoint_save(const char *dir, uint64_t spec_hash, const train_position *pos,
                    const schedule_state *sched, const run_history *hist, model *m,
                    const optimizer *opt, char *err, size_t errlen)
{
    checkpoint_head h = {.version = CKPT_VERSION,
                         .spec_hash = spec_hash,
                         .pos = *pos,
                         .n_params = m->n_params,
                         .n_state = m->n_state,
                         .n_optim = optim_state_floats(opt),
                         .n_history = hist->n_epochs,
                         .sched_bytes = sizeof *sched,
                         .record_bytes = sizeof(epoch_record)};
    memcpy(h.magic, CKPT_MAGIC, 8);
    checkpoint_file f;
    if (checkpoint_file_open(&f, checkpoint_body_size(&h) + 4, err, errlen) != 0)
        return -1;
    checkpoint_file_put(&f, &h, sizeof h);
    checkpoint_file_put(&f, sched, sizeof *sched);
    checkpoint_file_put(&f, hist->epochs, (size_t)hist->n_epochs * sizeof(epoch_record));
    model_get_params(m, checkpoint_file_next(&f, (size_t)m->n_params * sizeof(float)));
    model_get_state(m, checkpoint_file_next(&f, (size_t)m->n_state * sizeof(float)));
    optim_state_save(opt, checkpoint_file_next(&f, (size_t)h.n_optim * sizeof(float)));
    checkpoint_file_put_crc(&f);
    return checkpoint_file_commit(&f, dir, err, errlen);
}

/* Header checks: every length is the one this run expects. */
static int checkpoint_check_head(const checkpoint_head *h, size_t len, uint64_t spec_hash,
                                 const run_history *hist, const model *m, const optimizer *opt,
                                 const char *path, char *err, size_t errlen)
{
    if (memcmp(h->magic, CKPT_MAGIC, 8) == 0 && h->version < CKPT_VERSION)
        return io_errf(err, errlen, "%s: checkpoint format %d of an older punch-train (this one "
                       "reads format %d, with aligned parameters); it cannot resume: remove "
                       "it or use another --out", path, (int)h->version, (int)CKPT_VERSION);
    if (memcmp(h->magic, CKPT_MAGIC, 8) != 0 || h->version != CKPT_VERSION)
        return io_errf(err, errlen, "%s: not a punch-train checkpoint (version %d)", path,
                       (int)CKPT_VERSION);
    if (h->spec_hash != spec_hash)
        return io_errf(err, errlen, "%s: written for a different job spec; remove it or "
                       "use another --out", path);
    if (h->n_params != m->n_params || h->n_state != m->n_state ||
        h->n_optim != optim_state_floats(opt) || h->sched_bytes != sizeof(schedule_state) ||
        h->record_bytes != sizeof(epoch_record))
        return io_errf(err, errlen, "%s: sizes do not match this model (%lld parameters, "
                       "checkpoint has %lld)", path, (long long)m->n_params,
                       (long long)h->n_params);
    if (h->n_history < 0 || h->n_history > hist->cap || h->pos.epoch < 0 ||
        h->pos.epoch > hist->cap || h->pos.step < 0)
        return io_errf(err, errlen, "%s: position epoch %lld with %lld epochs of history does "
                       "not fit a run of %d epochs", path, (long long)h->pos.epoch,
                       (long long)h->n_history, hist->cap);
    if (checkpoint_body_size(h) + 4 != len)
        return io_errf(err, errlen, "%s: truncated (%zu bytes, expected %zu)", path, len,
                       checkpoint_body_size(h) + 4);
    return 0;
}

/* The file at path whole, its header copied to *h, its CRC checked after
 * check_head (NULL: none) has passed: 0, or -1 with a message (nothing to
 * free). The optimizer state's place in buf is opt_state_at's. */
typedef int (*checkpoint_head_check)(const checkpoint_head *h, size_t len, void *ctx,
                                     const char *path, char *err, size_t errlen);

static int checkpoint_read(const char *path, checkpoint_head_check check_head, void *ctx,
                           checkpoint_head *h, unsigned char **buf_out, char *err,
                           size_t errlen)
{
    unsigned char *buf = NULL;
    size_t len = 0;
    if (io_read_file(path, CKPT_MAX_BYTES, &buf, &len, err, errlen) != 0)
        return -1;
    if (len < sizeof *h + 4) {
        io_errf(err, errlen, "%s: truncated (%zu bytes)", path, len);
        free(buf);
        return -1;
    }
    memcpy(h, buf, sizeof *h);
    if (check_head(h, len, ctx, path, err, errlen) != 0) {
        free(buf);
        return -1;
    }
    size_t body = len - 4;
    if (io_get_le32(buf + body) != (uint32_t)crc32_z(0L, buf, body)) {
        io_errf(err, errlen, "%s: checksum mismatch (corrupt checkpoint)", path);
        free(buf);
        return -1;
    }
    *buf_out = buf;
    return 0;
}

/* Where the optimizer state starts in a checked file's bytes. */
static const float *checkpoint_opt_state_at(const unsigned char *buf, const checkpoint_head *h)
{
    return (const float *)(const void *)(buf + sizeof *h + h->sched_bytes +
                                          (size_t)h->n_history * (size_t)h->record_bytes +
                                          (size_t)(h->n_params + h->n_state) * sizeof(float));
}

typedef struct {
    const model *m;
    const optimizer *opt;
} optimizer_only;

/* Another run's file: every length is checked before it is summed. */
static int checkpoint_check_for_optimizer(const checkpoint_head *h, size_t len, void *ctx,
                                          const char *path, char *err, size_t errlen)
{
    const optimizer_only *o = ctx;
    if (memcmp(h->magic, CKPT_MAGIC, 8) != 0 || h->version != CKPT_VERSION)
        return io_errf(err, errlen, "%s: not a punch-train checkpoint (version %d)", path,
                       (int)CKPT_VERSION);
    if (h->n_params != o->m->n_params || h->n_state != o->m->n_state ||
        h->n_optim != optim_state_floats(o->opt) || h->sched_bytes != sizeof(schedule_state) ||
        h->record_bytes != sizeof(epoch_record) || h->n_history < 0 ||
        (size_t)h->n_history > len / sizeof(epoch_record) ||
        checkpoint_body_size(h) + 4 != len)
        return io_errf(err, errlen, "%s: sizes do not match this model and optimizer (%lld "
                       "parameters and %lld optimizer floats, checkpoint has %lld and %lld)",
                       path, (long long)o->m->n_params, (long long)optim_state_floats(o->opt),
                       (long long)h->n_params, (long long)h->n_optim);
    return 0;
}

int checkpoint_load_optimizer(const char *path, const model *m, optimizer *opt, char *err,
                              size_t errlen)
{
    checkpoint_head h;
    unsigned char *buf = NULL;
    optimizer_only o = {m, opt};
    if (checkpoint_read(path, checkpoint_check_for_optimizer, &o, &h, &buf, err, errlen) != 0)
        return -1;
    const float *opt_state = checkpoint_opt_state_at(buf, &h);
    int rc = -1;
    if (!optim_state_valid(opt, opt_state, h.n_optim))
        io_errf(err, errlen, "%s: optimizer state does not fit this optimizer", path);
    else {
        optim_state_load(opt, opt_state);
        rc = 0;
    }
    free(buf);
    return rc;
}

typedef struct {
    uint64_t spec_hash;
    const run_history *hist;
    const model *m;
    const optimizer *opt;
} resume_check;

/* This run's own checkpoint: checkpoint_check_head's rules. */
static int checkpoint_check_for_resume(const checkpoint_head *h, size_t len, void *ctx,
                                       const char *path, char *err, size_t errlen)
{
    const resume_check *r = ctx;
    return checkpoint_check_head(h, len, r->spec_hash, r->hist, r->m, r->opt, path, err,
                                 errlen);
}

int checkpoint_load(const char *dir, uint64_t spec_hash, train_position *pos,
                    schedule_state *sched, run_history *hist, model *m, optimizer *opt,
                    char *err, size_t errlen)
{
    char path[4096];
    checkpoint_file_path(dir, path, sizeof path);
    struct stat st;
    if (stat(path, &st) != 0 && errno == ENOENT)
        return 1;
    checkpoint_head h;
    unsigned char *buf = NULL;
    resume_check r = {spec_hash, hist, m, opt};
    if (checkpoint_read(path, checkpoint_check_for_resume, &r, &h, &buf, err, errlen) != 0)
        return -1;
    int rc = -1;
    const unsigned char *p = buf + sizeof h;
    const float *opt_state = checkpoint_opt_state_at(buf, &h);
    if (!optim_state_valid(opt, opt_state, h.n_optim)) {
        io_errf(err, errlen, "%s: optimizer state does not fit this optimizer", path);
        goto out;
    }
    memcpy(sched, p, sizeof *sched);
    p += sizeof *sched;
    memcpy(hist->epochs, p, (size_t)h.n_history * sizeof(epoch_record));
    hist->n_epochs = (int)h.n_history;
    p += (size_t)h.n_history * sizeof(epoch_record);
    model_set_params(m, (const float *)(const void *)p);
    p += (size_t)h.n_params * sizeof(float);
    model_set_state(m, (const float *)(const void *)p);
    optim_state_load(opt, opt_state);
    *pos = h.pos;
    rc = 0;
out:
    free(buf);
    return rc;
}
