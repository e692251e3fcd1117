/* seqset_tool.c — loads the sets of a job spec as punch-train would and
 * prints them as JSON, for check_sequences.py to compare with what numpy
 * and Python make of the same files:
 *   seqset_tool SPEC ROOT                 the three sets of a whole load
 *   seqset_tool SPEC ROOT part SET LO HI  samples [LO, HI) of one set
 *                                         (train, val or test)
 *   seqset_tool SPEC ROOT rows R,R,...    train records by number
 *   seqset_tool SPEC ROOT vocab           the char tokenizer's vocabulary
 * Each set prints as {"n", "shape", "label_steps", "num_classes", "x",
 * "y", "len"}; a failure prints the message on stderr and exits 1. */
#include <jansson.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "data/dataset.h"

static json_t *tool_set(const dataset *d)
{
    json_t *x = json_array(), *y = json_array(), *len = d->len ? json_array() : json_null();
    json_t *shape = json_array();
    long k = d->label_steps > 1 ? d->label_steps : 1;
    for (int i = 0; i < d->shape.rank; i++)
        json_array_append_new(shape, json_integer(d->shape.dim[i]));
    for (long i = 0; d->x && i < d->n * d->features; i++)
        json_array_append_new(x, json_real(d->x[i]));
    for (long i = 0; d->y && i < d->n * k; i++)
        json_array_append_new(y, json_integer(d->y[i]));
    for (long i = 0; d->len && i < d->n; i++)
        json_array_append_new(len, json_integer(d->len[i]));
    return json_pack("{s:I,s:o,s:I,s:i,s:o,s:o,s:o}", "n", (json_int_t)d->n, "shape", shape,
                     "label_steps", (json_int_t)k, "num_classes", d->num_classes, "x", x, "y",
                     y, "len", len);
}

static int tool_fail(const char *msg)
{
    fprintf(stderr, "%s\n", msg);
    return 1;
}

/* The spec at path. The layers that give an output per step are not in
 * the spec library yet, so a spec with per-step labels (text implies them)
 * is parsed without them, a text one as npz, and the data fields restored
 * after: what is tested here is the data, the model a stand-in. */
static job_spec *tool_spec(const char *path, char *msg, size_t len)
{
    json_error_t jerr;
    json_t *root = json_load_file(path, 0, &jerr);
    if (!root) {
        snprintf(msg, len, "%s: %s", path, jerr.text);
        return NULL;
    }
    json_t *data = json_object_get(root, "data");
    const char *fmt = json_string_value(json_object_get(data, "format"));
    bool text = fmt && strcmp(fmt, "text") == 0;
    bool per_step = text || json_is_true(json_object_get(data, "per_step_labels"));
    const char *tok = json_string_value(json_object_get(data, "tokenizer"));
    bool chars = tok && strcmp(tok, "char") == 0;
    int block = (int)json_integer_value(json_object_get(data, "block_size"));
    if (per_step) {
        json_object_del(data, "per_step_labels");
        json_object_del(data, "tokenizer");
        json_object_del(data, "block_size");
        if (text)
            json_object_set_new(data, "format", json_string("npz"));
        if (text && !chars && !json_object_get(data, "num_classes"))
            json_object_set_new(data, "num_classes", json_integer(256));
    }
    char *s = json_dumps(root, 0);
    json_decref(root);
    spec_error serr;
    job_spec *spec = s ? spec_parse(s, strlen(s), &serr) : NULL;
    free(s);
    if (!spec) {
        spec_error_str(&serr, msg, len);
        return NULL;
    }
    spec->data.per_step_labels = per_step;
    if (text) {
        spec->data.format = DATA_TEXT;
        spec->data.tokenizer = chars ? TOKENIZER_CHAR : TOKENIZER_BYTE;
        spec->data.block_size = block > 0 ? block : spec->data.max_length;
    }
    return spec;
}

static int tool_print(json_t *o)
{
    char *s = json_dumps(o, JSON_COMPACT);
    json_decref(o);
    if (!s)
        return tool_fail("out of memory");
    puts(s);
    free(s);
    return 0;
}

static int tool_part(const job_spec *spec, const dataset_roots *roots, char **argv)
{
    char err[1024];
    dataset_layout lay;
    dataset d;
    if (dataset_layout_of(&spec->data, &spec->input, roots, &lay, err, sizeof err) != 0)
        return tool_fail(err);
    if (strcmp(argv[0], "rows") == 0) {
        int64_t rows[256];
        long m = 0;
        for (char *p = argv[1]; *p && m < 256; p += *p == ',')
            rows[m++] = strtoll(p, &p, 10);
        if (dataset_load_rows(&spec->data, &spec->input, roots, spec->training.seed, &lay,
                              rows, m, NULL, &d, err, sizeof err) != 0)
            return tool_fail(err);
    } else {
        dataset_part part = strcmp(argv[1], "val") == 0    ? DATASET_PART_VAL
                          : strcmp(argv[1], "test") == 0   ? DATASET_PART_TEST
                                                            : DATASET_PART_TRAIN;
        if (dataset_load_part(&spec->data, &spec->input, roots, spec->training.seed, &lay,
                              part, atol(argv[2]), atol(argv[3]), &d, err, sizeof err) != 0)
            return tool_fail(err);
    }
    json_t *o = tool_set(&d);
    dataset_free(&d);
    return tool_print(o);
}

static int tool_vocab(const job_spec *spec, const dataset_roots *roots)
{
    char err[1024];
    uint32_t *chars;
    int n;
    if (dataset_text_vocab(&spec->data, roots, &chars, &n, err, sizeof err) != 0)
        return tool_fail(err);
    json_t *a = json_array();
    for (int i = 0; i < n; i++)
        json_array_append_new(a, json_integer(chars[i]));
    free(chars);
    return tool_print(a);
}

int main(int argc, char **argv)
{
    if (argc < 3)
        return tool_fail("usage: seqset_tool SPEC ROOT [part SET LO HI | rows R,... | vocab]");
    char msg[1024];
    job_spec *spec = tool_spec(argv[1], msg, sizeof msg);
    if (!spec)
        return tool_fail(msg);
    const char *dirs[] = {argv[2]};
    dataset_roots roots = {dirs, 1};
    int rc;
    if (argc == 4 && strcmp(argv[3], "vocab") == 0) {
        rc = tool_vocab(spec, &roots);
    } else if (argc > 3) {
        rc = tool_part(spec, &roots, argv + 3);
    } else {
        dataset tr, va, te;
        if (dataset_load_all(&spec->data, &spec->input, &roots, spec->training.seed, &tr, &va,
                             &te, msg, sizeof msg) != 0) {
            rc = tool_fail(msg);
        } else {
            rc = tool_print(json_pack("{s:o,s:o,s:o}", "train", tool_set(&tr), "val",
                                      tool_set(&va), "test", tool_set(&te)));
            dataset_free(&tr);
            dataset_free(&va);
            dataset_free(&te);
        }
    }
    spec_free(spec);
    return rc;
}
