/* text.c — the text format (data.format "text"): a UTF-8 text file cut
 * into non-overlapping windows of data.block_size tokens for a language
 * model: the input is a window, the target at every step the token after
 * it (per-step labels). Tokens are bytes (256 ids) or characters: the
 * distinct code points of the training text in ascending order, so the
 * same text always gives the same ids and a test text is read with the
 * training text's vocabulary (a character it lacks is an error). A set is
 * read whole (a window's place depends on every character before it) and
 * the pick kept from it. */
#include "data_internal.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "io/io_file.h"
#include "io/utf8.h"

/* The file's tokens: bytes as they are, or its code points (still to be
 * mapped to ids). line[i] is token i's line, for messages. */
typedef struct text_tokens {
    uint32_t *v;
    int32_t *line;
    long n;
} text_tokens;

static void text_tokens_free(text_tokens *t)
{
    free(t->v);
    free(t->line);
    memset(t, 0, sizeof *t);
}

static int text_tokenize(const char *path, spec_tokenizer tok, text_tokens *out, char *err,
                         size_t errlen)
{
    memset(out, 0, sizeof *out);
    const char *name = io_basename(path);
    data_buf b;
    if (data_file_read(path, &b, err, errlen) != 0)
        return -1;
    int rc = -1;
    out->v = malloc(b.len * sizeof *out->v);
    out->line = malloc(b.len * sizeof *out->line);
    if (!out->v || !out->line) {
        io_errf(err, errlen, "%s: out of memory", name);
        goto out;
    }
    int32_t line = 1;
    for (size_t i = 0; i < b.len;) {
        uint32_t c = b.p[i];
        size_t used = 1;
        if (tok == TOKENIZER_CHAR && (used = utf8_next(b.p + i, b.len - i, &c)) == 0) {
            io_errf(err, errlen, "%s:%d: invalid UTF-8 (byte 0x%02x)", name, (int)line,
                    b.p[i]);
            goto out;
        }
        out->v[out->n] = c;
        out->line[out->n++] = line;
        line += c == '\n' && line < INT32_MAX; /* messages past 2^31 lines say the last */
        i += used;
    }
    rc = 0;
out:
    data_buf_free(&b);
    if (rc != 0)
        text_tokens_free(out);
    return rc;
}

static int text_cmp_u32(const void *a, const void *b)
{
    uint32_t x = *(const uint32_t *)a, y = *(const uint32_t *)b;
    return (x > y) - (x < y);
}

int data_text_vocab(const char *train_path, uint32_t **chars, int *n, char *err,
                    size_t errlen)
{
    text_tokens t;
    *chars = NULL;
    *n = 0;
    if (text_tokenize(train_path, TOKENIZER_CHAR, &t, err, errlen) != 0)
        return -1;
    qsort(t.v, (size_t)t.n, sizeof *t.v, text_cmp_u32);
    long k = 0;
    for (long i = 0; i < t.n; i++)
        if (k == 0 || t.v[i] != t.v[k - 1])
            t.v[k++] = t.v[i];
    free(t.line);
    *chars = t.v;
    *n = (int)k;
    return 0;
}

/* Code points to ids in the sorted vocabulary. */
static int text_map(text_tokens *t, const uint32_t *vocab, int nv, const char *name, char *err,
                    size_t errlen)
{
    for (long i = 0; i < t->n; i++) {
        const uint32_t *hit = bsearch(&t->v[i], vocab, (size_t)nv, sizeof *vocab,
                                      text_cmp_u32);
        if (!hit)
            return io_errf(err, errlen, "%s:%d: character U+%04X is not in the training "
                           "text's vocabulary", name, (int)t->line[i], (unsigned)t->v[i]);
        t->v[i] = (uint32_t)(hit - vocab);
    }
    return 0;
}

/* The windows of tokens t into out (shape {T, 1}, per-step labels). */
static int text_windows(const text_tokens *t, const spec_data *data, const spec_shape *input,
                        const char *name, dataset *out, char *err, size_t errlen)
{
    long b = data->block_size, steps = input->dim[0];
    if (b < 1 || b > steps)
        return io_errf(err, errlen, "%s: data.block_size %ld is not in [1, %ld] (the steps of "
                       "model.input)", name, b, steps);
    long n = (t->n - 1) / b;
    if (n == 0)
        return io_errf(err, errlen, "%s: %ld tokens, a window needs data.block_size + 1 = %ld",
                       name, t->n, b + 1);
    if (data_seq_alloc(out, n, input, true) != 0)
        return io_errf(err, errlen, "%s: out of memory for %ld windows", name, n);
    for (long i = 0; i < n; i++) {
        const uint32_t *w = t->v + i * b;
        for (long s = 0; s < steps; s++) {
            out->x[i * steps + s] = s < b ? (float)w[s] : 0.0f;
            out->y[i * steps + s] = s < b ? (int32_t)w[s + 1] : -1;
        }
        out->len[i] = (int32_t)b;
    }
    out->num_classes = data->num_classes;
    return 0;
}

/* Ids must fit model.input's vocabulary and the model's outputs. */
static int text_check_vocab(long size, const spec_data *data, const char *name, char *err,
                            size_t errlen)
{
    if (data->input_tokens > 0 && size > data->input_tokens)
        return io_errf(err, errlen, "%s: the tokenizer gives %ld ids, more than "
                       "model.input's %d tokens", name, size, (int)data->input_tokens);
    if (size > data->num_classes)
        return io_errf(err, errlen, "%s: the tokenizer gives %ld ids, more than "
                       "data.num_classes (%d), the model's outputs", name, size,
                       data->num_classes);
    return 0;
}

int data_text_load_pick(const char *path, const char *train_path, const spec_data *data,
                        const spec_shape *input, const data_pick *pick, dataset *out,
                        char *err, size_t errlen)
{
    memset(out, 0, sizeof *out);
    const char *name = io_basename(path);
    text_tokens t;
    uint32_t *vocab = NULL;
    int nv = 0;
    dataset whole = {0};
    if (text_tokenize(path, data->tokenizer, &t, err, errlen) != 0)
        return -1;
    int rc = -1;
    if (data->tokenizer == TOKENIZER_BYTE) {
        if (text_check_vocab(256, data, name, err, errlen) != 0)
            goto out;
    } else if (data_text_vocab(train_path, &vocab, &nv, err, errlen) != 0 ||
               text_check_vocab(nv, data, io_basename(train_path), err, errlen) != 0 ||
               text_map(&t, vocab, nv, name, err, errlen) != 0) {
        goto out;
    }
    if (text_windows(&t, data, input, name, &whole, err, errlen) != 0)
        goto out;
    rc = data_seq_keep_pick(&whole, pick, name, out, err, errlen);
out:
    free(vocab);
    text_tokens_free(&t);
    dataset_free(&whole);
    return rc;
}
