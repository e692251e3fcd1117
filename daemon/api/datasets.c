/* datasets.c — uploaded datasets on disk: names, paths, and the format
 * check of an upload (datasets.h). The check reads the file in chunks
 * (pread, or zlib's inflate for gzip), so a 2 GiB upload costs a few
 * buffers of memory, and reports the first problem with the format's name
 * and the record or member it is in. */
#include "api/datasets.h"

#include <ctype.h>
#include <errno.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <zlib.h>

#include "crypto/sha256.h"
#include "dataformat/cifar_format.h"
#include "dataformat/csv_format.h"
#include "dataformat/ctf_format.h"
#include "dataformat/idx_format.h"
#include "dataformat/npz_format.h"
#include "io/io_file.h"
#include "io/npzarray.h"
#include "io/utf8.h"
#include "onnx/onnx_import.h"
#include "jobspec/spec.h"

#define DS_CHUNK 65536
#define DS_CSV_MAX_LINE (1u << 20)
#define DS_SAFETENSORS_MAX_HEADER (100u << 20)

bool datasets_name_ok(const char *name, const char **why)
{
    return spec_upload_name_ok(name, why);
}

bool datasets_owner_dir(const char *data_dir, const char *owner, char *buf, size_t len)
{
    uint8_t digest[SHA256_DIGEST_LEN];
    char hex[2 * SHA256_DIGEST_LEN + 1];
    sha256(owner, strlen(owner), digest);
    sha256_hex(digest, hex);
    int n = snprintf(buf, len, "%s/uploads/%s", data_dir, hex);
    return n > 0 && (size_t)n < len;
}

bool datasets_path(const char *data_dir, const char *owner, const char *name, char *buf,
                   size_t len)
{
    char dir[4096];
    if (!datasets_owner_dir(data_dir, owner, dir, sizeof dir))
        return false;
    int n = snprintf(buf, len, "%s/%s", dir, name);
    return n > 0 && (size_t)n < len;
}

bool datasets_ref(const char *data_dir, const char *owner, const char *name, char *buf,
                  size_t len)
{
    char path[4096];
    if (!datasets_path(data_dir, owner, name, path, sizeof path))
        return false;
    int n = snprintf(buf, len, "\"@%s\"", path);
    return n > 0 && (size_t)n < len;
}

void datasets_info_clear(datasets_info *info)
{
    json_decref(info->shapes);
    info->shapes = NULL;
}

/* ---- a file read in order, gunzipped when it starts with gzip's magic ---- */

typedef struct ds_src {
    int fd;
    uint64_t pos;        /* file offset of the next compressed or plain byte */
    bool gz, gz_end;
    z_stream zs;
    unsigned char in[DS_CHUNK];
} ds_src;

static int ds_src_open(ds_src *s, int fd, bool gz)
{
    memset(s, 0, offsetof(ds_src, in));
    s->fd = fd;
    s->gz = gz;
    if (gz && inflateInit2(&s->zs, 16 + MAX_WBITS) != Z_OK)
        return -1;
    return 0;
}

static void ds_src_close(ds_src *s)
{
    if (s->gz)
        inflateEnd(&s->zs);
}

/* Up to n bytes into dst: the count (short only at the end), or -1 with
 * a message (I/O error, corrupt gzip). */
static long long ds_src_read(ds_src *s, unsigned char *dst, size_t n, char *err, size_t errlen)
{
    if (!s->gz) {
        ssize_t r = io_pread_full(s->fd, dst, n, (off_t)s->pos);
        if (r < 0)
            return io_errf(err, errlen, "read error: %s", strerror(errno));
        s->pos += (uint64_t)r;
        return r;
    }
    s->zs.next_out = dst;
    s->zs.avail_out = (uInt)n;
    while (s->zs.avail_out > 0 && !s->gz_end) {
        if (s->zs.avail_in == 0) {
            ssize_t r = io_pread_full(s->fd, s->in, sizeof s->in, (off_t)s->pos);
            if (r < 0)
                return io_errf(err, errlen, "read error: %s", strerror(errno));
            if (r == 0)
                return io_errf(err, errlen, "gzip data truncated (no end marker)");
            s->pos += (uint64_t)r;
            s->zs.next_in = s->in;
            s->zs.avail_in = (uInt)r;
        }
        int rc = inflate(&s->zs, Z_NO_FLUSH);
        if (rc == Z_STREAM_END)
            s->gz_end = true;
        else if (rc != Z_OK && rc != Z_BUF_ERROR)
            return io_errf(err, errlen, "corrupt gzip data (%s)",
                           s->zs.msg ? s->zs.msg : "inflate failed");
    }
    return (long long)(n - s->zs.avail_out);
}

/* ---- the formats ----------------------------------------------------------- */

static json_t *ds_shape(int rank, const long long *dims)
{
    json_t *a = json_array();
    for (int i = 0; a && i < rank; i++)
        json_array_append_new(a, json_integer(dims[i]));
    return a;
}

static int ds_check_idx(int fd, bool gz, datasets_info *info, char *err, size_t errlen)
{
    ds_src *s = malloc(sizeof *s);
    unsigned char *buf = malloc(DS_CHUNK);
    int rc = -1;
    if (!s || !buf || ds_src_open(s, fd, gz) != 0) {
        free(s);
        free(buf);
        return io_errf(err, errlen, "idx: out of memory");
    }
    char why[200];
    unsigned char head[4 + 4 * IDXFMT_MAX_RANK];
    idxfmt_header h;
    long long got = ds_src_read(s, head, 4, why, sizeof why);
    long need = got == 4 ? idxfmt_header_parse(head, 4, &h) : -1;
    if (got < 0) {
        io_errf(err, errlen, "idx: %s", why);
        goto out;
    }
    if (need < 0) {
        io_errf(err, errlen, "idx: not an unsigned-byte IDX file (bad magic)");
        goto out;
    }
    got = ds_src_read(s, head + 4, (size_t)need - 4, why, sizeof why);
    if (got != need - 4 || idxfmt_header_parse(head, (size_t)need, &h) != 0) {
        io_errf(err, errlen, "idx: %s", got < 0 ? why : "truncated header");
        goto out;
    }
    uint64_t total = 0, have, extra;
    while ((got = ds_src_read(s, buf, DS_CHUNK, why, sizeof why)) > 0)
        total += (uint64_t)got;
    idxfmt_body body = idxfmt_body_check(&h, total, &have, &extra);
    if (got < 0 && body == IDXFMT_BODY_SHORT) {
        io_errf(err, errlen, "idx: %s after %llu of %lld records", why,
                (unsigned long long)have, (long long)h.dims[0]);
        goto out;
    }
    if (got < 0) {
        io_errf(err, errlen, "idx: %s", why);
        goto out;
    }
    if (body != IDXFMT_BODY_OK) {
        io_errf(err, errlen, body == IDXFMT_BODY_SHORT
                                 ? "idx: truncated after %llu of %lld records"
                                 : "idx: %llu records' worth of data, header says %lld",
                (unsigned long long)have, (long long)h.dims[0]);
        goto out;
    }
    long long dims[IDXFMT_MAX_RANK];
    for (int i = 0; i < h.rank; i++)
        dims[i] = h.dims[i];
    snprintf(info->format, sizeof info->format, "idx");
    info->records = dims[0];
    info->shapes = json_pack("{s:o}", h.rank == 1 ? "labels" : "images", ds_shape(h.rank, dims));
    rc = 0;
out:
    ds_src_close(s);
    free(s);
    free(buf);
    return rc;
}

/* The labels of every record, read a chunk of whole records at a time. */
static int ds_check_cifar10(int fd, uint64_t size, datasets_info *info, char *err,
                            size_t errlen)
{
    uint64_t part, n = cifarfmt_records(size, &part);
    if (n == 0 || part != 0)
        return io_errf(err, errlen, "cifar10: %llu bytes is not a whole number of %d-byte "
                       "records (truncated?)", (unsigned long long)size, CIFARFMT_RECORD);
    size_t per = DS_CHUNK / CIFARFMT_RECORD;
    unsigned char *buf = malloc(per * CIFARFMT_RECORD);
    if (!buf)
        return io_errf(err, errlen, "cifar10: out of memory");
    for (uint64_t i = 0; i < n; i += per) {
        size_t k = n - i < per ? (size_t)(n - i) : per;
        if (io_pread_full(fd, buf, k * CIFARFMT_RECORD, (off_t)(i * CIFARFMT_RECORD)) !=
            (ssize_t)(k * CIFARFMT_RECORD)) {
            free(buf);
            return io_errf(err, errlen, "cifar10: read error at record %llu",
                           (unsigned long long)i + 1);
        }
        long long bad = cifarfmt_bad_label(buf, k, CIFARFMT_CLASSES);
        if (bad >= 0) {
            int label = buf[(size_t)bad * CIFARFMT_RECORD];
            free(buf);
            return io_errf(err, errlen, "cifar10: record %llu: label %d out of range [0, 10)",
                           (unsigned long long)(i + (uint64_t)bad) + 1, label);
        }
    }
    free(buf);
    long long dims[4] = {(long long)n, 3, 32, 32};
    snprintf(info->format, sizeof info->format, "cifar10");
    info->records = (long long)n;
    info->shapes = json_pack("{s:o}", "images", ds_shape(4, dims));
    return 0;
}

/* One CSV line (NUL-terminated, no newline): its field count, and the
 * first field that is not a number (its column from 0 in *bad_col and its
 * text in bad), *bad_col -1 when every one is. */
static void ds_csv_fields(const char *line, long *fields, long *bad_col, char *bad,
                          size_t badlen)
{
    const char *s, *e;
    *bad_col = csvfmt_first_bad(line, line + strlen(line), fields, &s, &e);
    if (*bad_col < 0)
        return;
    while (s < e && isspace((unsigned char)*s))
        s++;
    while (e > s && isspace((unsigned char)e[-1]))
        e--;
    snprintf(bad, badlen, "%.*s", (int)(e - s < 40 ? e - s : 40), s);
}

static int ds_check_csv(int fd, bool gz, datasets_info *info, char *err, size_t errlen)
{
    ds_src *s = malloc(sizeof *s);
    char *line = malloc(DS_CSV_MAX_LINE + 1);
    unsigned char *buf = malloc(DS_CHUNK);
    int rc = -1;
    if (!s || !line || !buf || ds_src_open(s, fd, gz) != 0) {
        free(s);
        free(line);
        free(buf);
        return io_errf(err, errlen, "csv: out of memory");
    }
    char why[200];
    size_t used = 0;
    long long lineno = 0, records = 0;
    long width = -1;
    bool header = false;
    long long got;
    bool eof = false;
    while (!eof) {
        got = ds_src_read(s, buf, DS_CHUNK, why, sizeof why);
        if (got < 0) {
            io_errf(err, errlen, "csv: %s", why);
            goto out;
        }
        eof = got == 0;
        for (long long i = 0; i < got || (eof && used > 0 && i == 0); i++) {
            unsigned char c = eof ? '\n' : buf[i];
            if (c == 0 || (c < 0x20 && c != '\n' && c != '\r' && c != '\t')) {
                io_errf(err, errlen, "csv: line %lld: binary data (not a CSV file, nor "
                        "npz, IDX or CIFAR-10)", lineno + 1);
                goto out;
            }
            if (c != '\n') {
                if (used == DS_CSV_MAX_LINE) {
                    io_errf(err, errlen, "csv: line %lld is longer than %u bytes", lineno + 1,
                            DS_CSV_MAX_LINE);
                    goto out;
                }
                line[used++] = (char)c;
                continue;
            }
            lineno++;
            if (used > 0 && line[used - 1] == '\r')
                used--;
            line[used] = 0;
            used = 0;
            if (!line[strspn(line, " \t")])
                continue;
            long fields, bad_col;
            char bad[48];
            ds_csv_fields(line, &fields, &bad_col, bad, sizeof bad);
            if (bad_col >= 0 && records == 0 && !header) {
                header = true;
                width = fields;
                continue;
            }
            if (bad_col >= 0) {
                io_errf(err, errlen, "csv: line %lld, column %ld (counted from 0): \"%s\" is "
                        "not a number; every field must be (class labels are integers 0, "
                        "1, ...: map class names to numbers first)", lineno, bad_col, bad);
                goto out;
            }
            if (width >= 0 && fields != width) {
                io_errf(err, errlen, "csv: line %lld: %ld fields, expected %ld", lineno, fields,
                        width);
                goto out;
            }
            width = fields;
            records++;
        }
    }
    if (records == 0) {
        io_errf(err, errlen, "csv: no data rows");
        goto out;
    }
    long long dims[2] = {records, width};
    snprintf(info->format, sizeof info->format, "csv");
    info->records = records;
    info->shapes = json_pack("{s:o, s:b}", "rows", ds_shape(2, dims), "header", header);
    rc = 0;
out:
    ds_src_close(s);
    free(s);
    free(line);
    free(buf);
    return rc;
}

/* ---- text uploads: CSV, CTF or plain text -------------------------------- */

typedef enum { DS_TEXT_CSV, DS_TEXT_CTF, DS_TEXT_PLAIN } ds_text_kind;

/* What a text upload holds, from the first lines of its first chunk: CTF
 * when a line's first token (the sequence id, which may be absent) is
 * followed by "|name"; CSV when a line of the first two is all numbers (a
 * header may precede the data) or numbers up to a later column (a class
 * name column), or when there is one line only (the CSV
 * check then says what is wrong); otherwise plain text, a language
 * model's corpus. */
static ds_text_kind ds_text_sniff(const unsigned char *buf, size_t n)
{
    const unsigned char *p = buf, *end = buf + n;
    int words = 0;
    while (p < end && words < 2) {
        const unsigned char *nl = memchr(p, '\n', (size_t)(end - p));
        size_t len = (size_t)((nl ? nl : end) - p);
        char line[512];
        size_t k = len < sizeof line - 1 ? len : sizeof line - 1;
        memcpy(line, p, k);
        line[k] = 0;
        p = nl ? nl + 1 : end;
        line[strcspn(line, "\r")] = 0;
        const char *t = line + strspn(line, " \t");
        if (!*t)
            continue;
        ctffmt_head h;
        const char *le = line + strlen(line);
        if (ctffmt_head_parse(t, le, &h) == 0 && h.bar < le)
            return DS_TEXT_CTF;
        long fields, bad_col;
        char bad[48];
        ds_csv_fields(line, &fields, &bad_col, bad, sizeof bad);
        /* All numbers, or a table whose first non-number comes after two
         * numbers (a class name column at the end: the CSV check then
         * names it, rather than taking the file for prose). */
        if (bad_col < 0 || (fields >= 3 && bad_col >= 2))
            return DS_TEXT_CSV;
        words++;
    }
    return words == 2 ? DS_TEXT_PLAIN : DS_TEXT_CSV;
}

/* Plain text: well-formed UTF-8 without NUL bytes, read in chunks (a
 * character cut by a chunk's end is carried into the next). */
static int ds_check_plain(ds_src *s, unsigned char *buf, datasets_info *info, char *err,
                          size_t errlen)
{
    char why[200];
    size_t carry = 0;
    long long chars = 0, line = 1;
    for (;;) {
        long long got = ds_src_read(s, buf + carry, DS_CHUNK, why, sizeof why);
        if (got < 0)
            return io_errf(err, errlen, "text: %s", why);
        size_t n = carry + (size_t)got, i = 0;
        while (i < n) {
            uint32_t c = 0;
            size_t u = utf8_next(buf + i, n - i, &c);
            if (u == 0 && got > 0 && n - i < 4)
                break;  /* perhaps cut by the chunk: read on */
            if (u == 0)
                return io_errf(err, errlen, "text: line %lld: invalid UTF-8 (byte 0x%02x)",
                               line, buf[i]);
            if (c == 0)
                return io_errf(err, errlen, "text: line %lld: NUL byte (binary data)", line);
            line += c == '\n';
            chars++;
            i += u;
        }
        carry = n - i;
        memmove(buf, buf + i, carry);
        if (got == 0)
            break;
    }
    snprintf(info->format, sizeof info->format, "text");
    info->records = -1;  /* windows: data.block_size decides */
    info->shapes = json_pack("{s:I}", "chars", (json_int_t)chars);
    return 0;
}

/* One CTF line (NUL-terminated): whether it starts a sequence after the
 * line whose id is prev (updated), or -1 when it is not "[ID] |name ...".
 * An id is kept to 255 bytes (the upload's own limit: it is held a line
 * at a time). */
static int ds_ctf_line(const char *line, char prev[256], bool first)
{
    ctffmt_head h;
    const char *end = line + strlen(line);
    if (ctffmt_head_parse(line, end, &h) != 0 || h.bar == end || h.id_len >= 256 ||
        h.bar[1] == 0 || strchr(" \t|", h.bar[1]))
        return -1;
    bool fresh = ctffmt_new_seq(h.id, h.id_len, prev, strlen(prev), first);
    memcpy(prev, h.id, h.id_len);
    prev[h.id_len] = 0;
    return fresh;
}

/* CNTK Text Format: every non-blank line "[ID] |name values ..."; the
 * records are the sequences (runs of lines sharing an id). */
static int ds_check_ctf(ds_src *s, unsigned char *buf, datasets_info *info, char *err,
                        size_t errlen)
{
    char *line = malloc(DS_CSV_MAX_LINE + 1), why[200], prev[256] = "";
    if (!line)
        return io_errf(err, errlen, "ctf: out of memory");
    size_t used = 0;
    long long lineno = 0, seqs = 0, got;
    int rc = -1;
    bool eof = false;
    while (!eof) {
        if ((got = ds_src_read(s, buf, DS_CHUNK, why, sizeof why)) < 0) {
            io_errf(err, errlen, "ctf: %s", why);
            goto out;
        }
        eof = got == 0;
        for (long long i = 0; i < got || (eof && used > 0 && i == 0); i++) {
            unsigned char c = eof ? '\n' : buf[i];
            if (c != '\n') {
                if (c == 0 || used == DS_CSV_MAX_LINE) {
                    io_errf(err, errlen, "ctf: line %lld: %s", lineno + 1, c ? "too long"
                                                                             : "NUL byte");
                    goto out;
                }
                line[used++] = (char)c;
                continue;
            }
            lineno++;
            line[used] = 0;
            used = 0;
            line[strcspn(line, "\r")] = 0;
            if (!line[strspn(line, " \t")])
                continue;
            int fresh = ds_ctf_line(line, prev, seqs == 0);
            if (fresh < 0) {
                io_errf(err, errlen, "ctf: line %lld: expected [SEQID] |name values ...",
                        lineno);
                goto out;
            }
            seqs += fresh;
        }
    }
    snprintf(info->format, sizeof info->format, "ctf");
    info->records = seqs;
    info->shapes = json_pack("{s:I, s:I}", "sequences", (json_int_t)seqs, "lines",
                             (json_int_t)lineno);
    rc = 0;
out:
    free(line);
    return rc;
}

/* A text upload (gzipped or not): CSV, CTF or plain text by its start. */
static int ds_check_text(int fd, bool gz, datasets_info *info, char *err, size_t errlen)
{
    ds_src *s = malloc(sizeof *s);
    unsigned char *buf = malloc(DS_CHUNK + 4);
    char why[200];
    int rc = -1;
    if (!s || !buf || ds_src_open(s, fd, gz) != 0) {
        free(s);
        free(buf);
        return io_errf(err, errlen, "out of memory");
    }
    long long got = ds_src_read(s, buf, DS_CHUNK, why, sizeof why);
    ds_text_kind kind = got > 0 ? ds_text_sniff(buf, (size_t)got) : DS_TEXT_CSV;
    ds_src_close(s);
    if (kind == DS_TEXT_CSV) {
        rc = ds_check_csv(fd, gz, info, err, errlen);
    } else if (ds_src_open(s, fd, gz) != 0) {
        io_errf(err, errlen, "out of memory");
    } else {
        rc = kind == DS_TEXT_CTF ? ds_check_ctf(s, buf, info, err, errlen)
                                 : ds_check_plain(s, buf, info, err, errlen);
        ds_src_close(s);
    }
    free(s);
    free(buf);
    return rc;
}

/* One x/y pair of an npz (npz_format.h's rules): its rows, -1 when the
 * file has neither. */
static int ds_npz_pair(const npz_index *ix, const char *xn, const char *yn, long long *rows,
                       char *err, size_t errlen)
{
    npzfmt_pair pair;
    char why[300];
    *rows = -1;
    if (npzfmt_pair_find(ix, xn, yn, &pair, why, sizeof why) != 0)
        return io_errf(err, errlen, "npz: %s", why);
    if (pair.x)
        *rows = pair.x->h.dims[0];
    return 0;
}

static int ds_check_npz(int fd, datasets_info *info, char *err, size_t errlen)
{
    npz_index ix;
    char why[300];
    if (npz_index_fd(fd, &ix, why, sizeof why) != 0)
        return io_errf(err, errlen, "npz: %s", why);
    int rc = -1;
    json_t *shapes = json_object();
    for (int i = 0; i < ix.n; i++) {
        const npz_array *a = &ix.arrays[i];
        if (npz_array_verify(&ix, a, why, sizeof why) != 0) {
            io_errf(err, errlen, "npz: %s", why);
            goto out;
        }
        long long dims[TENSOR_MAX_RANK];
        for (int k = 0; k < a->h.rank; k++)
            dims[k] = a->h.dims[k];
        json_object_set_new(shapes, a->name, ds_shape(a->h.rank, dims));
    }
    long long records = -1;
    for (size_t p = 0; p < NPZFMT_PAIRS; p++) {
        long long rows;
        if (ds_npz_pair(&ix, npzfmt_pairs[p][0], npzfmt_pairs[p][1], &rows, err, errlen) != 0)
            goto out;
        if (records < 0)
            records = rows;
    }
    snprintf(info->format, sizeof info->format, "npz");
    info->records = records;
    info->shapes = shapes;
    shapes = NULL;
    rc = 0;
out:
    json_decref(shapes);
    npz_index_free(&ix);
    return rc;
}

static int ds_check_safetensors(int fd, uint64_t size, datasets_info *info, char *err,
                                size_t errlen)
{
    unsigned char len8[8];
    if (size < 8 || io_pread_full(fd, len8, 8, 0) != 8)
        return io_errf(err, errlen, "safetensors: truncated header");
    uint64_t hlen = io_get_le64(len8);
    if (hlen > DS_SAFETENSORS_MAX_HEADER || hlen > size - 8)
        return io_errf(err, errlen, "safetensors: header of %llu bytes runs past the file "
                       "(truncated?)", (unsigned long long)hlen);
    char *text = malloc(hlen + 1);
    if (!text)
        return io_errf(err, errlen, "safetensors: out of memory");
    if (io_pread_full(fd, text, hlen, 8) != (ssize_t)hlen) {
        free(text);
        return io_errf(err, errlen, "safetensors: read error");
    }
    json_error_t je;
    json_t *head = json_loadb(text, hlen, 0, &je);
    free(text);
    if (!json_is_object(head)) {
        json_decref(head);
        return io_errf(err, errlen, "safetensors: header is not a JSON object");
    }
    uint64_t data = size - 8 - hlen, end_max = 0;
    json_t *shapes = json_object();
    const char *key;
    json_t *t;
    json_object_foreach(head, key, t) {
        if (strcmp(key, "__metadata__") == 0)
            continue;
        json_t *off = json_object_get(t, "data_offsets");
        json_int_t b = json_integer_value(json_array_get(off, 0));
        json_int_t e = json_integer_value(json_array_get(off, 1));
        json_t *shape = json_object_get(t, "shape");
        if (!json_is_array(shape) || b < 0 || e < b) {
            json_decref(head);
            json_decref(shapes);
            return io_errf(err, errlen, "safetensors: tensor %s: malformed entry", key);
        }
        if ((uint64_t)e > data) {
            json_decref(head);
            json_decref(shapes);
            return io_errf(err, errlen, "safetensors: tensor %s: truncated (ends at %lld of "
                           "%llu data bytes)", key, (long long)e, (unsigned long long)data);
        }
        if ((uint64_t)e > end_max)
            end_max = (uint64_t)e;
        json_object_set(shapes, key, shape);
    }
    json_decref(head);
    snprintf(info->format, sizeof info->format, "safetensors");
    info->records = -1;
    info->shapes = shapes;
    return 0;
}

/* An ONNX model (told by its name: protobuf has no magic number): the
 * importer itself checks it, so an upload that is accepted is a model a
 * job can name; shapes records its input and output. */
int datasets_check_model(int fd, datasets_info *info, char *err, size_t errlen)
{
    memset(info, 0, sizeof *info);
    struct stat st;
    if (fstat(fd, &st) != 0)
        return io_errf(err, errlen, "cannot stat the upload: %s", strerror(errno));
    onnx_limits lim;
    onnx_limits_default(&lim);
    if ((uint64_t)st.st_size > lim.max_file_bytes)
        return io_errf(err, errlen, "onnx: %lld bytes, more than the import's limit of %zu",
                       (long long)st.st_size, lim.max_file_bytes);
    size_t len = (size_t)st.st_size;
    uint8_t *buf = malloc(len + 1);
    if (!buf)
        return io_errf(err, errlen, "onnx: out of memory");
    if (pread(fd, buf, len, 0) != (ssize_t)len) {
        free(buf);
        return io_errf(err, errlen, "onnx: read error");
    }
    onnx_model om;
    char why[1024];
    int rc = onnx_import_buffer(buf, len, &lim, false, &om, why, sizeof why);
    free(buf);
    if (rc != 0)
        return io_errf(err, errlen, "onnx: %s", why);
    info->shapes = json_pack("{s:O,s:[I]}", "input", json_object_get(om.model, "input"),
                             "output", (json_int_t)om.outputs);
    onnx_model_clear(&om);
    if (!info->shapes)
        return io_errf(err, errlen, "onnx: out of memory");
    snprintf(info->format, sizeof info->format, "onnx");
    info->records = -1;
    return 0;
}

int datasets_check(int fd, datasets_info *info, char *err, size_t errlen)
{
    memset(info, 0, sizeof *info);
    struct stat st;
    if (fstat(fd, &st) != 0)
        return io_errf(err, errlen, "cannot stat the upload: %s", strerror(errno));
    uint64_t size = (uint64_t)st.st_size;
    unsigned char m[12] = {0};
    ssize_t got = size ? io_pread_full(fd, m, sizeof m, 0) : 0;
    if (got < 0)
        return io_errf(err, errlen, "read error: %s", strerror(errno));
    if (size == 0)
        return io_errf(err, errlen, "empty file");
    if (got >= 4 && m[0] == 'P' && m[1] == 'K' &&
        ((m[2] == 3 && m[3] == 4) || (m[2] == 5 && m[3] == 6)))
        return ds_check_npz(fd, info, err, errlen);
    if (got >= 9 && m[8] == '{' && io_get_le64(m) < size)
        return ds_check_safetensors(fd, size, info, err, errlen);
    if (got >= 2 && m[0] == 0x1f && m[1] == 0x8b) {
        /* gzip: IDX inside by its magic, else text. */
        ds_src *s = malloc(sizeof *s);
        unsigned char inner[4] = {0};
        char why[200];
        if (!s || ds_src_open(s, fd, true) != 0) {
            free(s);
            return io_errf(err, errlen, "out of memory");
        }
        long long n = ds_src_read(s, inner, 4, why, sizeof why);
        ds_src_close(s);
        free(s);
        if (n == 4 && inner[0] == 0 && inner[1] == 0 && inner[2] == 0x08)
            return ds_check_idx(fd, true, info, err, errlen);
        return ds_check_text(fd, true, info, err, errlen);
    }
    if (got >= 4 && m[0] == 0 && m[1] == 0 && m[2] == 0x08)
        return ds_check_idx(fd, false, info, err, errlen);
    if (m[0] < 10 && size % CIFARFMT_RECORD == 0)
        return ds_check_cifar10(fd, size, info, err, errlen);
    return ds_check_text(fd, false, info, err, errlen);
}

/* ---- IDX pairs ------------------------------------------------------------- */

/* The naming of an IDX pair, as engine/data/resolve.c reads it under an
 * admin's dataset root: STEM-images-idx3-ubyte[.gz] with
 * STEM-labels-idx1-ubyte[.gz] (or the ".idx3-ubyte" style). */
static const char *const ds_idx_styles[][2] = {
    {"-images-idx3-ubyte", "-labels-idx1-ubyte"},
    {"-images.idx3-ubyte", "-labels.idx1-ubyte"},
};

bool datasets_idx_stem(const char *name, char *stem, size_t len)
{
    size_t n = strlen(name);
    if (n >= len)
        return false;
    memcpy(stem, name, n + 1);
    if (n > 3 && strcmp(stem + n - 3, ".gz") == 0)
        stem[n -= 3] = 0;
    for (int s = 0; s < 2; s++) {
        for (int part = 0; part < 2; part++) {
            size_t sl = strlen(ds_idx_styles[s][part]);
            if (n > sl && strcmp(stem + n - sl, ds_idx_styles[s][part]) == 0) {
                stem[n - sl] = 0;
                return true;
            }
        }
    }
    return false;
}

bool datasets_use_ref(const char *data_dir, const char *owner, const char *name, char *buf,
                      size_t len)
{
    char stem[80];
    if (datasets_idx_stem(name, stem, sizeof stem))
        return datasets_ref(data_dir, owner, stem, buf, len);
    return datasets_ref(data_dir, owner, name, buf, len);
}

/* Does owner have an upload named prefix + suffix[.gz]? */
static store_status ds_upload_either(store *st, const char *owner, const char *prefix,
                                     const char *suffix)
{
    for (int gz = 0; gz < 2; gz++) {
        char name[160];
        snprintf(name, sizeof name, "%s%s%s", prefix, suffix, gz ? ".gz" : "");
        store_dataset ds;
        store_status rs = store_dataset_get(st, owner, name, &ds);
        if (rs == STORE_OK)
            store_dataset_clear(&ds);
        if (rs != STORE_NOT_FOUND)
            return rs;
    }
    return STORE_NOT_FOUND;
}

/* "@NAME" under data.format "idx": the stem of an uploaded pair (NAME
 * itself, or NAME with the images or labels suffix taken off) into stem.
 * -1 with a message naming the files wanted when the pair is incomplete. */
static int ds_idx_pair(store *st, const char *owner, const char *field, const char *name,
                       char *stem, size_t len, char *msg, size_t msglen)
{
    if (!datasets_idx_stem(name, stem, len))
        snprintf(stem, len, "%s", name);
    for (int s = 0; s < 2; s++) {
        store_status rs = ds_upload_either(st, owner, stem, ds_idx_styles[s][0]);
        if (rs == STORE_NOT_FOUND)
            continue;
        if (rs == STORE_OK)
            rs = ds_upload_either(st, owner, stem, ds_idx_styles[s][1]);
        if (rs == STORE_OK)
            return 0;
        if (rs == STORE_NOT_FOUND)
            snprintf(msg, msglen, "%s: \"@%s\": you uploaded %s%s[.gz] but not its labels, "
                     "%s%s[.gz]", field, name, stem, ds_idx_styles[s][0], stem,
                     ds_idx_styles[s][1]);
        else
            snprintf(msg, msglen, "%s: store error", field);
        return -1;
    }
    snprintf(msg, msglen, "%s: you have no uploaded IDX pair \"@%s\": upload %s%s[.gz] and "
             "%s%s[.gz] (punch data push keeps a file's name; punch data list shows yours)",
             field, name, stem, ds_idx_styles[0][0], stem, ds_idx_styles[0][1]);
    return -1;
}

/* ---- "@NAME" in a submitted spec ------------------------------------------ */

int datasets_resolve_spec(store *st, const char *data_dir, const char *owner, json_t *spec,
                          const char **field, char *msg, size_t msglen)
{
    static const char *const keys[] = {"train", "test", "validation"};
    static const char *const fields[] = {"data.train", "data.test", "data.validation"};
    json_t *data = json_object_get(spec, "data");
    /* data.format defaults to idx, whose uploads come as a pair. */
    const char *format = json_string_value(json_object_get(data, "format"));
    bool idx = !format || strcmp(format, "idx") == 0;
    for (int i = 0; i < 3; i++) {
        const char *v = json_string_value(json_object_get(data, keys[i]));
        if (!v || v[0] != '@')
            continue;
        *field = fields[i];
        const char *why = NULL;
        spec_ref_kind k = spec_dataset_ref_kind(v, &why);
        if (k != SPEC_REF_UPLOAD) {
            snprintf(msg, msglen, "%s: \"%.80s\": name an uploaded dataset as @NAME%s%s",
                     fields[i], v, why ? "; the name " : "", why ? why : "");
            return -1;
        }
        char stem[80];
        const char *target = v + 1;
        if (idx) {
            if (ds_idx_pair(st, owner, fields[i], v + 1, stem, sizeof stem, msg, msglen) != 0)
                return -1;
            target = stem;
        }
        store_dataset ds;
        store_status rs = idx ? STORE_OK : store_dataset_get(st, owner, v + 1, &ds);
        if (rs == STORE_OK && !idx)
            store_dataset_clear(&ds);
        if (rs != STORE_OK) {
            if (rs == STORE_NOT_FOUND)
                snprintf(msg, msglen, "%s: you have no uploaded dataset \"%s\" (punch data "
                         "list shows yours)", fields[i], v + 1);
            else
                snprintf(msg, msglen, "%s: store error", fields[i]);
            return -1;
        }
        char ref[4200];
        if (!datasets_ref(data_dir, owner, target, ref, sizeof ref)) {
            snprintf(msg, msglen, "%s: path too long", fields[i]);
            return -1;
        }
        /* ref is the quoted "@PATH"; the spec holds it unquoted. */
        ref[strlen(ref) - 1] = 0;
        if (json_object_set_new(data, keys[i], json_string(ref + 1)) != 0) {
            snprintf(msg, msglen, "out of memory");
            return -1;
        }
    }
    *field = NULL;
    return 0;
}

/* ---- "model": "@NAME.onnx" ------------------------------------------------ */

int datasets_resolve_model(store *st, const char *data_dir, const char *owner,
                           const char *spec_text, size_t len, char **out, char *msg,
                           size_t msglen)
{
    *out = NULL;
    if (!memchr(spec_text, '@', len))
        return 0;
    json_t *spec = json_loadb(spec_text, len, JSON_REJECT_DUPLICATES, NULL);
    const char *v = json_string_value(json_object_get(spec, "model"));
    if (!v || v[0] != '@' || v[1] == '/' || !onnx_path_is_model(v)) {
        json_decref(spec);
        return 0;
    }
    store_dataset ds;
    store_status rs = store_dataset_get(st, owner, v + 1, &ds);
    bool is_model = rs == STORE_OK && strcmp(ds.format, "onnx") == 0;
    if (rs == STORE_OK)
        store_dataset_clear(&ds);
    char ref[4200];
    if (rs != STORE_OK || !is_model) {
        if (rs == STORE_OK || rs == STORE_NOT_FOUND)
            snprintf(msg, msglen, "model: you have no uploaded ONNX model \"%.80s\" (PUT "
                     "/api/v1/datasets/NAME.onnx; punch data list shows yours)", v + 1);
        else
            snprintf(msg, msglen, "model: store error");
        json_decref(spec);
        return -1;
    }
    if (!datasets_ref(data_dir, owner, v + 1, ref, sizeof ref)) {
        snprintf(msg, msglen, "model: path too long");
        json_decref(spec);
        return -1;
    }
    ref[strlen(ref) - 1] = 0; /* the ref is quoted */
    json_object_set_new(spec, "model", json_string(ref + 1));
    *out = json_dumps(spec, JSON_COMPACT);
    json_decref(spec);
    if (!*out) {
        snprintf(msg, msglen, "out of memory");
        return -1;
    }
    return 1;
}

/* ---- a preset's model.input from an npz upload ----------------------------- */

/* The sample shape [F], [1, H, W] or [C, H, W] of x's recorded dims
 * [N, ...sample], as the engine's npz loader reads it; an [N, H, W, C]
 * whose last dim is the smallest and at most 4 is channels last, given as
 * [C, H, W] (the loader transposes it). NULL for other ranks. */
static json_t *ds_npz_sample(const json_t *dims)
{
    size_t r = json_array_size(dims);
    json_int_t d[4] = {0};
    for (size_t i = 0; i < r && i < 4; i++) {
        d[i] = json_integer_value(json_array_get(dims, i));
        if (d[i] < 1)
            return NULL;
    }
    if (r == 2)
        return json_pack("[I]", d[1]);
    if (r == 3)
        return json_pack("[i,I,I]", 1, d[1], d[2]);
    if (r == 4 && d[3] <= 4 && d[3] < d[1])
        return json_pack("[I,I,I]", d[3], d[1], d[2]);
    if (r == 4)
        return json_pack("[I,I,I]", d[1], d[2], d[3]);
    return NULL;
}

/* The recorded shape of owner's npz upload NAME's training x (x_train,
 * else x), or NULL (not an npz upload of owner's, or no x). */
static json_t *ds_npz_train_x(store *st, const char *owner, const char *name)
{
    store_dataset ds;
    if (store_dataset_get(st, owner, name, &ds) != STORE_OK)
        return NULL;
    json_t *shapes = strcmp(ds.format, "npz") == 0 && ds.shapes
                         ? json_loads(ds.shapes, 0, NULL) : NULL;
    store_dataset_clear(&ds);
    const json_t *x = json_object_get(shapes, "x_train");
    if (!x)
        x = json_object_get(shapes, "x");
    json_t *sample = x ? ds_npz_sample(x) : NULL;
    json_decref(shapes);
    return sample;
}

int datasets_preset_input(store *st, const char *owner, const char *spec_text, size_t len,
                          char **out)
{
    *out = NULL;
    if (!memchr(spec_text, '@', len))
        return 0;
    json_t *spec = json_loadb(spec_text, len, JSON_REJECT_DUPLICATES, NULL);
    const json_t *data = json_object_get(spec, "data");
    const char *format = json_string_value(json_object_get(data, "format"));
    const char *train = json_string_value(json_object_get(data, "train"));
    json_t *model = json_object_get(spec, "model");
    const char *preset = json_is_string(model) ? json_string_value(model)
                         : json_is_object(model) && !json_object_get(model, "input")
                             ? json_string_value(json_object_get(model, "preset"))
                             : NULL;
    json_t *sample = NULL;
    if (format && strcmp(format, "npz") == 0 && train && train[0] == '@' && train[1] != '/' &&
        preset && preset[0] != '@')
        sample = ds_npz_train_x(st, owner, train + 1);
    if (!sample) {
        json_decref(spec);
        return 0;
    }
    int rc = -1;
    if (json_is_string(model)) {
        json_t *obj = json_pack("{s:s,s:o}", "preset", preset, "input", sample);
        if (obj && json_object_set_new(spec, "model", obj) == 0)
            rc = 1;
    } else if (json_object_set_new(model, "input", sample) == 0) {
        rc = 1;
    }
    if (rc == 1 && !(*out = json_dumps(spec, JSON_COMPACT)))
        rc = -1;
    json_decref(spec);
    return rc;
}
