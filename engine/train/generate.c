/* generate.c — punch-train --generate (generate.h): a language model's
 * continuation of a prompt. The model is built for one sample and run once
 * per new token over the last block_size tokens; only the last real
 * step's probabilities leave the device. */
#include "train/generate.h"

#include <errno.h>
#include <jansson.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "io/utf8.h"
#include "train/sampler.h"
#include "train/weights.h"
#include "device/device.h"

#define GENERATE_REPLACEMENT 0xFFFDu

void generate_request_free(generate_request *req)
{
    free(req->prompt);
    memset(req, 0, sizeof *req);
}

/* An optional integer field in [lo, hi] into *out. */
static int generate_int(const json_t *o, const char *name, long long lo, long long hi,
                        long long *out, char *err, size_t errlen)
{
    const json_t *v = json_object_get(o, name);
    if (!v)
        return 0;
    if (!json_is_integer(v) || json_integer_value(v) < lo || json_integer_value(v) > hi) {
        snprintf(err, errlen, "%s: must be an integer from %lld to %lld", name, lo, hi);
        return -1;
    }
    *out = json_integer_value(v);
    return 0;
}

int generate_request_read(const char *path, generate_request *req, char *err, size_t errlen)
{
    memset(req, 0, sizeof *req);
    json_error_t je;
    json_t *o = json_load_file(path, JSON_REJECT_DUPLICATES, &je);
    if (!json_is_object(o)) {
        snprintf(err, errlen, "%s: not a JSON object: %s", path, o ? "" : je.text);
        json_decref(o);
        return -1;
    }
    long long max_new = 64, top_k = 0, seed = 0;
    const json_t *prompt = json_object_get(o, "prompt");
    const json_t *temp = json_object_get(o, "temperature");
    int rc = -1;
    if (!json_is_string(prompt) || json_string_length(prompt) == 0) {
        snprintf(err, errlen, "prompt: must be a non-empty string");
    } else if (temp && (!json_is_number(temp) || json_number_value(temp) < 0 ||
                        json_number_value(temp) > 100)) {
        snprintf(err, errlen, "temperature: must be a number from 0 to 100");
    } else if (generate_int(o, "max_new_tokens", 1, 1 << 20, &max_new, err, errlen) == 0 &&
               generate_int(o, "top_k", 0, 1 << 20, &top_k, err, errlen) == 0 &&
               generate_int(o, "seed", 0, INT64_MAX, &seed, err, errlen) == 0) {
        req->prompt = strndup(json_string_value(prompt), json_string_length(prompt));
        req->max_new_tokens = (long)max_new;
        req->temperature = temp ? json_number_value(temp) : 1.0;
        req->top_k = (long)top_k;
        req->seed = (unsigned long long)seed;
        rc = req->prompt ? 0 : -1;
        if (!req->prompt)
            snprintf(err, errlen, "prompt: out of memory");
    }
    json_decref(o);
    return rc;
}

/* The char tokenizer's vocabulary: vocab.json beside the weights (train.c
 * writes it), code points in ascending order, id = index. */
static int generate_vocab(const char *weights, uint32_t **cps, int *n, char *err,
                          size_t errlen)
{
    char path[4096];
    const char *slash = strrchr(weights, '/');
    int dir = slash ? (int)(slash - weights) : 1;
    snprintf(path, sizeof path, "%.*s/vocab.json", dir, slash ? weights : ".");
    json_error_t je;
    json_t *o = json_load_file(path, 0, &je);
    const json_t *a = json_object_get(o, "code_points");
    *cps = NULL;
    *n = 0;
    if (!json_is_array(a) || json_array_size(a) == 0) {
        snprintf(err, errlen, "%s: %s", path, o ? "no \"code_points\" array" : je.text);
        json_decref(o);
        return -1;
    }
    *cps = malloc(json_array_size(a) * sizeof **cps);
    for (size_t i = 0; *cps && i < json_array_size(a); i++) {
        json_int_t v = json_integer_value(json_array_get(a, i));
        if (v < 0 || v > 0x10FFFF || (i > 0 && (uint32_t)v <= (*cps)[i - 1])) {
            snprintf(err, errlen, "%s: code_points[%zu] is not an ascending code point", path,
                     i);
            free(*cps);
            *cps = NULL;
            json_decref(o);
            return -1;
        }
        (*cps)[i] = (uint32_t)v;
    }
    if (!*cps)
        snprintf(err, errlen, "%s: out of memory", path);
    else
        *n = (int)json_array_size(a);
    json_decref(o);
    return *cps ? 0 : -1;
}

/* The prompt's ids: its bytes, or its characters' places in vocab. */
static int generate_encode(const char *prompt, const uint32_t *vocab, int nv, int32_t *ids,
                           long *n, char *err, size_t errlen)
{
    const unsigned char *p = (const unsigned char *)prompt;
    size_t len = strlen(prompt);
    *n = 0;
    for (size_t i = 0; i < len;) {
        uint32_t c = p[i];
        size_t used = 1;
        if (vocab && (used = utf8_next(p + i, len - i, &c)) == 0) {
            snprintf(err, errlen, "prompt: invalid UTF-8 at byte %zu", i);
            return -1;
        }
        if (vocab) {
            int lo = 0, hi = nv;
            while (lo < hi) {
                int mid = (lo + hi) / 2;
                if (vocab[mid] < c)
                    lo = mid + 1;
                else
                    hi = mid;
            }
            if (lo == nv || vocab[lo] != c) {
                snprintf(err, errlen, "prompt: character U+%04X (at character %ld) is not in "
                         "the training text's vocabulary", (unsigned)c, *n + 1);
                return -1;
            }
            c = (uint32_t)lo;
        }
        ids[(*n)++] = (int32_t)c;
        i += used;
    }
    return 0;
}

/* Append code point c as UTF-8. */
static size_t generate_put_utf8(uint32_t c, char *out)
{
    if (c < 0x80) {
        out[0] = (char)c;
        return 1;
    }
    if (c < 0x800) {
        out[0] = (char)(0xC0 | (c >> 6));
        out[1] = (char)(0x80 | (c & 0x3F));
        return 2;
    }
    if (c < 0x10000) {
        out[0] = (char)(0xE0 | (c >> 12));
        out[1] = (char)(0x80 | ((c >> 6) & 0x3F));
        out[2] = (char)(0x80 | (c & 0x3F));
        return 3;
    }
    out[0] = (char)(0xF0 | (c >> 18));
    out[1] = (char)(0x80 | ((c >> 12) & 0x3F));
    out[2] = (char)(0x80 | ((c >> 6) & 0x3F));
    out[3] = (char)(0x80 | (c & 0x3F));
    return 4;
}

char *generate_decode(const int32_t *ids, long n, const uint32_t *vocab, int nv, size_t *len)
{
    char *out = malloc((size_t)n * 4 + 1);
    unsigned char *bytes = vocab ? NULL : malloc((size_t)n + 1);
    size_t k = 0;
    if (!out || (!vocab && !bytes)) {
        free(out);
        free(bytes);
        return NULL;
    }
    if (vocab) {
        for (long i = 0; i < n; i++)
            k += generate_put_utf8(ids[i] >= 0 && ids[i] < nv ? vocab[ids[i]]
                                                               : GENERATE_REPLACEMENT,
                                   out + k);
    } else {
        for (long i = 0; i < n; i++)
            bytes[i] = (unsigned char)(ids[i] & 0xFF);
        for (long i = 0; i < n;) {
            uint32_t c;
            size_t used = ids[i] >= 0 && ids[i] < 256 ? utf8_next(bytes + i, (size_t)(n - i), &c)
                                                      : 0;
            for (size_t j = 1; j < used; j++)
                if (ids[i + (long)j] > 255)
                    used = 0;
            if (used == 0) {
                c = GENERATE_REPLACEMENT;
                used = 1;
            }
            k += generate_put_utf8(c, out + k);
            i += (long)used;
        }
    }
    free(bytes);
    out[k] = '\0';
    *len = k;
    return out;
}

static int generate_write(const char *dir, const int32_t *ids, long n, const uint32_t *vocab,
                          int nv, char *err, size_t errlen)
{
    size_t tlen = 0;
    char *text = generate_decode(ids, n, vocab, nv, &tlen);
    json_t *tokens = json_array();
    for (long i = 0; tokens && i < n; i++)
        if (json_array_append_new(tokens, json_integer(ids[i])) != 0) {
            json_decref(tokens);
            tokens = NULL;
        }
    json_t *o = text && tokens ? json_pack("{s:s%,s:o}", "text", text, tlen, "tokens", tokens)
                               : NULL;
    if (!o)
        json_decref(tokens);
    char *doc = o ? json_dumps(o, JSON_COMPACT) : NULL;
    json_decref(o);
    free(text);
    if (!doc) {
        snprintf(err, errlen, "generated.json: out of memory");
        return 1;
    }
    char path[4096];
    snprintf(path, sizeof path, "%s/generated.json", dir);
    /* Written plainly, as predictions.npy: read once, right after exit. */
    FILE *f = fopen(path, "w");
    size_t len = strlen(doc);
    bool ok = f && fwrite(doc, 1, len, f) == len;
    ok = (f && fclose(f) == 0) && ok;
    free(doc);
    if (!ok) {
        snprintf(err, errlen, "%s: cannot write: %s", path, strerror(errno));
        return 1;
    }
    return 0;
}

/* The model and its one-sample input: x the context's ids, y a valid
 * label at every real step (the loss computes the probabilities), len the
 * context's length. */
typedef struct generate_run {
    backend *be;
    model *m;
    dataset d;
    float *row;      /* one step's probabilities, host */
    float *scratch;  /* the sampler's */
    long steps;      /* model.input's steps */
    long window;     /* the longest context: data.block_size */
    int classes;
} generate_run;

static void generate_close(generate_run *g)
{
    model_free(g->m);
    if (g->be)
        g->be->destroy(g->be);
    dataset_free(&g->d);
    free(g->row);
    free(g->scratch);
}

static int generate_open(const job_spec *spec, const train_options *opt, generate_run *g,
                         char *err, size_t errlen)
{
    memset(g, 0, sizeof *g);
    const spec_shape *out = &spec->layers[spec->n_layers - 1].out_shape;
    if (spec->data.format != DATA_TEXT || spec->input.rank != 2 || out->rank != 2) {
        snprintf(err, errlen, "the job is not a language model: generation needs "
                 "data.format \"text\" and a model whose output is a sequence");
        return 2;
    }
    g->steps = spec->input.dim[0];
    g->window = spec->data.block_size > 0 && spec->data.block_size <= g->steps
                    ? spec->data.block_size
                    : g->steps;
    g->classes = (int)out->dim[1];
    int threads = opt->threads > 0 ? opt->threads
                  : spec->resources.threads_per_worker > 0 ? spec->resources.threads_per_worker
                                                           : 1;
    g->be = device_backend_create(spec, threads, opt->local_rank, err, errlen);
    g->m = g->be ? model_create(spec, g->be, 1, err, errlen) : NULL;
    if (!g->m || weights_load(g->m, opt->weights, err, errlen) != 0)
        return 1;
    dataset *d = &g->d;
    d->n = 1;
    d->features = spec_shape_size(&spec->input);
    d->shape = spec->input;
    d->num_classes = spec->data.num_classes;
    d->label_steps = g->steps;
    d->x = calloc((size_t)d->features, sizeof *d->x);
    d->y = calloc((size_t)g->steps, sizeof *d->y);
    d->len = calloc(1, sizeof *d->len);
    g->row = malloc((size_t)g->m->n_out * sizeof *g->row);
    g->scratch = malloc((size_t)g->classes * sizeof *g->scratch);
    if (!d->x || !d->y || !d->len || !g->row || !g->scratch) {
        snprintf(err, errlen, "generate: out of memory");
        return 1;
    }
    return 0;
}

/* The next token after ctx[0..n) (n in [1, window]). */
static int generate_step(generate_run *g, const int32_t *ctx, long n, const sampler_options *so,
                         rng *r, int32_t *next, char *err, size_t errlen)
{
    dataset *d = &g->d;
    for (long s = 0; s < g->steps; s++) {
        d->x[s] = s < n ? (float)ctx[s] : 0.0f;
        d->y[s] = s < n ? 0 : -1;
    }
    d->len[0] = (int32_t)n;
    if (model_load_range(g->m, d, 0, 1, err, errlen) != 0)
        return 1;
    model_forward(g->m, 1, false, 0);
    model_loss(g->m, 1, NULL); /* the softmax output's probabilities */
    /* The whole output leaves the device: steps x classes floats, small
     * beside the forward pass. */
    g->be->download(g->be, g->row, g->m->output, g->m->n_out);
    *next = (int32_t)sampler_pick(g->row + (n - 1) * g->classes, g->classes, so, r, g->scratch);
    return 0;
}

static int generate_out_dir(const char *dir, char *err, size_t errlen)
{
    if (mkdir(dir, 0777) != 0 && errno != EEXIST) {
        snprintf(err, errlen, "%s: %s", dir, strerror(errno));
        return 1;
    }
    return 0;
}

int train_generate(const job_spec *spec, const train_options *opt, const char *request,
                   char *err, size_t errlen)
{
    generate_request req;
    if (generate_out_dir(opt->out_dir, err, errlen) != 0)
        return 1;
    if (generate_request_read(request, &req, err, errlen) != 0)
        return 2;
    uint32_t *vocab = NULL;
    int nv = 0;
    size_t plen = strlen(req.prompt);
    long total = 0, cap = (long)plen + req.max_new_tokens;
    int32_t *ids = malloc((size_t)cap * sizeof *ids);
    generate_run g;
    int rc = generate_open(spec, opt, &g, err, errlen);
    if (rc == 0 && !ids) {
        snprintf(err, errlen, "generate: out of memory");
        rc = 1;
    }
    if (rc == 0 && spec->data.tokenizer == TOKENIZER_CHAR &&
        generate_vocab(opt->weights, &vocab, &nv, err, errlen) != 0)
        rc = 1;
    if (rc == 0 && generate_encode(req.prompt, vocab, nv, ids, &total, err, errlen) != 0)
        rc = 2;
    sampler_options so = {.temperature = req.temperature,
                          .top_k = req.top_k < g.classes ? (int)req.top_k : 0};
    rng r = rng_make(req.seed, 0x67656e65ULL /* "gene" */);
    long prompt_n = total;
    for (long i = 0; rc == 0 && i < req.max_new_tokens; i++) {
        long n = total < g.window ? total : g.window;
        rc = generate_step(&g, ids + total - n, n, &so, &r, &ids[total], err, errlen);
        total += rc == 0;
    }
    if (rc == 0)
        rc = generate_write(opt->out_dir, ids + prompt_n, total - prompt_n, vocab, nv, err,
                            errlen);
    generate_close(&g);
    free(ids);
    free(vocab);
    generate_request_free(&req);
    return rc;
}
