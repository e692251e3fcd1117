/* tensorfile.c — what the safetensors and npz formats share: tensor sizes,
 * name rules, reading a file for a parser, and freeing what the readers
 * return. The readers call this file; tensorfile_read.c, which picks a
 * reader, calls them. */
#include "io/tensorfile.h"

#include <limits.h>
#include <stdio.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "io/io_file.h"

bool tensor_entry_same_shape(const tensor_entry *a, const tensor_entry *b)
{
    if (a->rank != b->rank)
        return false;
    for (int i = 0; i < a->rank; i++)
        if (a->dims[i] != b->dims[i])
            return false;
    return true;
}

void tensor_entry_shape_str(const tensor_entry *t, char *buf, size_t len)
{
    size_t used = (size_t)snprintf(buf, len, "[");
    for (int i = 0; i < t->rank && used < len; i++)
        used += (size_t)snprintf(buf + used, len - used, i ? ", %ld" : "%ld", t->dims[i]);
    if (used < len)
        snprintf(buf + used, len - used, "]");
}

long tensor_entry_size(const tensor_entry *t)
{
    if (t->rank < 0 || t->rank > TENSOR_MAX_RANK)
        return -1;
    long size = 1;
    for (int i = 0; i < t->rank; i++) {
        if (t->dims[i] < 0)
            return -1;
        if (t->dims[i] > 0 && size > LONG_MAX / t->dims[i])
            return -1;
        size *= t->dims[i];
    }
    return size;
}

/* Names go into JSON strings and ZIP member names unescaped by any reader
 * we care about, so keep them to printable ASCII without quoting
 * characters. */
static int tensorfile_name_ok(const char *name)
{
    size_t len = strnlen(name, sizeof ((tensor_entry *)0)->name);
    if (len == 0 || len >= sizeof ((tensor_entry *)0)->name)
        return 0;
    if (strcmp(name, "__metadata__") == 0)
        return 0;
    for (size_t i = 0; i < len; i++) {
        unsigned char c = (unsigned char)name[i];
        if (c < 0x20 || c > 0x7e || c == '"' || c == '\\' || c == '\'')
            return 0;
    }
    return 1;
}

int tensorfile_check_entries(const tensor_entry *t, int n, char *err, size_t errlen)
{
    if (n < 0 || (n > 0 && !t))
        return io_errf(err, errlen, "invalid tensor list");
    for (int i = 0; i < n; i++) {
        if (!tensorfile_name_ok(t[i].name))
            return io_errf(err, errlen, "tensor %d: invalid name \"%.40s\"", i, t[i].name);
        long size = tensor_entry_size(&t[i]);
        if (size < 0)
            return io_errf(err, errlen, "tensor %s: invalid shape (rank %d)", t[i].name, t[i].rank);
        if ((unsigned long)size > SIZE_MAX / sizeof(float) / 2)
            return io_errf(err, errlen, "tensor %s: too large", t[i].name);
        if (size > 0 && !t[i].data)
            return io_errf(err, errlen, "tensor %s: no data", t[i].name);
        for (int j = 0; j < i; j++)
            if (strcmp(t[i].name, t[j].name) == 0)
                return io_errf(err, errlen, "tensor %s: duplicate name", t[i].name);
    }
    return 0;
}

void tensorfile_free(tensor_entry *t, int n)
{
    if (!t)
        return;
    for (int i = 0; i < n; i++)
        free(t[i].data);
    free(t);
}

int tensorfile_read_parsed(const char *path, size_t max_bytes, tensorfile_parse_fn parse,
                           tensor_entry **out, int *n, char *err, size_t errlen)
{
    *out = NULL;
    *n = 0;
    unsigned char *buf;
    size_t len;
    if (io_read_file(path, max_bytes, &buf, &len, err, errlen) != 0)
        return -1;
    char why[256];
    int rc = parse(buf, len, out, n, why, sizeof why);
    free(buf);
    if (rc != 0)
        return io_errf(err, errlen, "%s: %s", path, why);
    return 0;
}
