/* safetensors.c — the Hugging Face safetensors format for float32 tensors:
 * u64 little-endian header length N, N bytes of JSON naming each tensor's
 * dtype, shape and [begin, end) byte range, then the raw little-endian data.
 * The header is built and parsed with Jansson; every offset and length read
 * back is checked against the file before it is used. */
#include "io/tensorfile.h"

#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <jansson.h>

#include "io/io_file.h"

/* Readers we interoperate with refuse headers above 100 MB; so do we. */
#define SAFETENSORS_MAX_HEADER (100u * 1000 * 1000)
#define SAFETENSORS_MAX_FILE ((size_t)1 << 36)

static json_t *safetensors_header(const tensor_entry *t, int n,
                                  const char *const *meta_keys,
                                  const char *const *meta_values, int n_meta,
                                  char *err, size_t errlen)
{
    json_t *root = json_object();
    if (!root)
        goto oom;
    if (n_meta > 0) {
        json_t *meta = json_object();
        if (!meta || json_object_set_new(root, "__metadata__", meta) != 0)
            goto oom;
        for (int i = 0; i < n_meta; i++) {
            if (!meta_keys[i] || !meta_values[i]) {
                json_decref(root);
                io_errf(err, errlen, "metadata entry %d is NULL", i);
                return NULL;
            }
            if (json_object_set_new(meta, meta_keys[i], json_string(meta_values[i])) != 0) {
                json_decref(root);
                io_errf(err, errlen, "metadata %s: not valid UTF-8", meta_keys[i]);
                return NULL;
            }
        }
    }
    long long offset = 0;
    for (int i = 0; i < n; i++) {
        long long bytes = (long long)tensor_entry_size(&t[i]) * 4;
        json_t *shape = json_array();
        json_t *entry = json_pack("{s:s, s:o, s:[I,I]}", "dtype", "F32", "shape", shape,
                                  "data_offsets", offset, offset + bytes);
        if (!entry || json_object_set_new(root, t[i].name, entry) != 0)
            goto oom;
        for (int d = 0; d < t[i].rank; d++)
            if (json_array_append_new(shape, json_integer(t[i].dims[d])) != 0)
                goto oom;
        offset += bytes;
    }
    return root;
oom:
    json_decref(root);
    io_errf(err, errlen, "out of memory building the safetensors header");
    return NULL;
}

int safetensors_write(const char *path, const tensor_entry *t, int n,
                      const char *const *meta_keys, const char *const *meta_values,
                      int n_meta, char *err, size_t errlen)
{
    char why[256];
    if (tensorfile_check_entries(t, n, why, sizeof why) != 0)
        return io_errf(err, errlen, "%s: %s", path, why);
    json_t *root = safetensors_header(t, n, meta_keys, meta_values, n_meta, why, sizeof why);
    if (!root)
        return io_errf(err, errlen, "%s: %s", path, why);
    char *text = json_dumps(root, JSON_COMPACT);
    json_decref(root);
    if (!text)
        return io_errf(err, errlen, "%s: out of memory building the header", path);

    /* Pad the header with spaces so the data starts 8-byte aligned. */
    size_t hlen = strlen(text);
    size_t padded = (hlen + 7) & ~(size_t)7;
    size_t data_bytes = 0;
    for (int i = 0; i < n; i++)
        data_bytes += (size_t)tensor_entry_size(&t[i]) * 4;
    size_t total = 8 + padded + data_bytes;
    unsigned char *buf = malloc(total);
    if (!buf) {
        free(text);
        return io_errf(err, errlen, "%s: out of memory (%zu bytes)", path, total);
    }
    io_put_le64(buf, padded);
    memcpy(buf + 8, text, hlen);
    memset(buf + 8 + hlen, ' ', padded - hlen);
    free(text);
    unsigned char *p = buf + 8 + padded;
    for (int i = 0; i < n; i++) {
        size_t size = (size_t)tensor_entry_size(&t[i]);
        io_floats_to_le(p, t[i].data, size);
        p += size * 4;
    }
    int rc = atomic_write_file(path, buf, total, err, errlen);
    free(buf);
    return rc;
}

/* Fill one entry from its header object; data_len bounds every offset. */
static int safetensors_parse_entry(const char *name, json_t *v,
                                   const unsigned char *data, size_t data_len,
                                   tensor_entry *e, char *err, size_t errlen)
{
    if (strlen(name) >= sizeof e->name)
        return io_errf(err, errlen, "tensor name too long (%zu bytes)", strlen(name));
    strcpy(e->name, name);
    if (!json_is_object(v))
        return io_errf(err, errlen, "tensor %s: header entry is not an object", name);
    const char *dtype = json_string_value(json_object_get(v, "dtype"));
    if (!dtype)
        return io_errf(err, errlen, "tensor %s: missing dtype", name);
    if (strcmp(dtype, "F32") != 0)
        return io_errf(err, errlen, "tensor %s: dtype %s not supported (F32 only)", name, dtype);
    json_t *shape = json_object_get(v, "shape");
    if (!json_is_array(shape) || json_array_size(shape) > TENSOR_MAX_RANK)
        return io_errf(err, errlen, "tensor %s: shape must be an array of at most %d dims",
                       name, TENSOR_MAX_RANK);
    e->rank = (int)json_array_size(shape);
    unsigned long long count = 1;
    for (int d = 0; d < e->rank; d++) {
        json_t *dim = json_array_get(shape, (size_t)d);
        json_int_t x = json_integer_value(dim);
        if (!json_is_integer(dim) || x < 0 || x > (json_int_t)data_len)
            return io_errf(err, errlen, "tensor %s: invalid dimension %d", name, d);
        e->dims[d] = (long)x;
        if (x != 0 && count > data_len / (unsigned long long)x)
            count = (unsigned long long)data_len + 1; /* larger than any valid range */
        else
            count *= (unsigned long long)x;
    }
    json_t *off = json_object_get(v, "data_offsets");
    json_t *jb = json_array_get(off, 0), *je = json_array_get(off, 1);
    if (!json_is_array(off) || json_array_size(off) != 2 || !json_is_integer(jb) ||
        !json_is_integer(je))
        return io_errf(err, errlen, "tensor %s: data_offsets must be [begin, end]", name);
    json_int_t b = json_integer_value(jb), end = json_integer_value(je);
    if (b < 0 || end < b || (unsigned long long)end > data_len)
        return io_errf(err, errlen, "tensor %s: data_offsets [%lld, %lld] outside the %zu data bytes",
                       name, (long long)b, (long long)end, data_len);
    if (count > data_len || (unsigned long long)(end - b) != count * 4)
        return io_errf(err, errlen, "tensor %s: data_offsets span %lld bytes but the shape needs %llu",
                       name, (long long)(end - b), count * 4);
    e->data = malloc(count ? count * 4 : 1);
    if (!e->data)
        return io_errf(err, errlen, "tensor %s: out of memory", name);
    io_floats_from_le(e->data, data + b, (size_t)count);
    return 0;
}

static int safetensors_parse(const unsigned char *buf, size_t len, tensor_entry **out,
                             int *n_out, char *err, size_t errlen)
{
    if (len < 8)
        return io_errf(err, errlen, "too short for a safetensors header (%zu bytes)", len);
    uint64_t hlen = io_get_le64(buf);
    if (hlen > len - 8 || hlen > SAFETENSORS_MAX_HEADER)
        return io_errf(err, errlen, "header length %llu exceeds the file (%zu bytes)",
                       (unsigned long long)hlen, len);
    json_error_t jerr;
    json_t *root = json_loadb((const char *)buf + 8, (size_t)hlen, JSON_REJECT_DUPLICATES, &jerr);
    if (!root)
        return io_errf(err, errlen, "invalid JSON header: %s (column %d)", jerr.text, jerr.column);
    if (!json_is_object(root)) {
        json_decref(root);
        return io_errf(err, errlen, "header is not a JSON object");
    }
    size_t n = json_object_size(root) - (json_object_get(root, "__metadata__") ? 1 : 0);
    tensor_entry *t = calloc(n ? n : 1, sizeof *t);
    if (!t) {
        json_decref(root);
        return io_errf(err, errlen, "out of memory");
    }
    const unsigned char *data = buf + 8 + hlen;
    size_t data_len = len - 8 - (size_t)hlen;
    int i = 0;
    const char *key;
    json_t *v;
    json_object_foreach(root, key, v) {
        if (strcmp(key, "__metadata__") == 0)
            continue;
        if (safetensors_parse_entry(key, v, data, data_len, &t[i], err, errlen) != 0) {
            tensorfile_free(t, i + 1);
            json_decref(root);
            return -1;
        }
        i++;
    }
    json_decref(root);
    *out = t;
    *n_out = i;
    return 0;
}

int safetensors_read(const char *path, tensor_entry **out, int *n, char *err, size_t errlen)
{
    return tensorfile_read_parsed(path, SAFETENSORS_MAX_FILE, safetensors_parse, out, n, err, errlen);
}
