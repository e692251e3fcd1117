/* io_file.h — helpers under every reader and writer of lib/io, also used
 * by the programs: reading a whole file under a size cap, little-endian
 * byte order and printf-style error messages. */
#ifndef PUNCH_IO_FILE_H
#define PUNCH_IO_FILE_H

#include <stddef.h>
#include <stdint.h>
#include <sys/stat.h>
#include <sys/types.h>

/* Read all of `path` into a fresh heap buffer with one spare NUL byte after
 * the data (so text parsers can stop at it). Refuses non-regular files and
 * files over max_bytes. Returns 0 and sets *data (caller frees) and *len;
 * -1 with "PATH: reason" in err. */
int io_read_file(const char *path, size_t max_bytes, unsigned char **data,
                 size_t *len, char *err, size_t errlen);

/* As io_read_file, but a pipe (`punch submit /dev/stdin`, a shell's
 * <(...)) is also read to its end under the same cap. For command-line
 * tools only: a server must not block on a pipe another user controls. */
int io_read_file_or_pipe(const char *path, size_t max_bytes, unsigned char **data,
                         size_t *len, char *err, size_t errlen);

/* Open path read-only (close-on-exec) and check that it is a regular file,
 * whose stat goes into *st. 0 and *fd (caller closes), or -1 with
 * "PATH: cannot open/cannot stat: reason" or "PATH: not a regular file". */
int io_open_regular(const char *path, int *fd, struct stat *st, char *err, size_t errlen);

/* read(2) until len bytes or end of file, retrying EINTR; the bytes read
 * (fewer than len only at end of file), or -1 with errno set. */
ssize_t io_read_full(int fd, void *buf, size_t len);
/* pread(2) likewise, from offset off (the file offset is not moved). */
ssize_t io_pread_full(int fd, void *buf, size_t len, off_t off);

/* snprintf into err (when err is not NULL); always returns -1 so callers
 * can `return io_errf(...)`. */
int io_errf(char *err, size_t errlen, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));

/* The last path component, for messages ("a/b/c.gz" -> "c.gz"). */
const char *io_basename(const char *path);

/* Little-endian loads and stores, independent of the host byte order. */
static inline uint16_t io_get_le16(const unsigned char *p)
{
    return (uint16_t)(p[0] | (p[1] << 8));
}

static inline uint32_t io_get_le32(const unsigned char *p)
{
    return (uint32_t)p[0] | ((uint32_t)p[1] << 8) | ((uint32_t)p[2] << 16) |
           ((uint32_t)p[3] << 24);
}

static inline uint64_t io_get_le64(const unsigned char *p)
{
    return (uint64_t)io_get_le32(p) | ((uint64_t)io_get_le32(p + 4) << 32);
}

static inline void io_put_le16(unsigned char *p, uint16_t v)
{
    p[0] = (unsigned char)v;
    p[1] = (unsigned char)(v >> 8);
}

static inline void io_put_le32(unsigned char *p, uint32_t v)
{
    for (int i = 0; i < 4; i++)
        p[i] = (unsigned char)(v >> (8 * i));
}

static inline void io_put_le64(unsigned char *p, uint64_t v)
{
    for (int i = 0; i < 8; i++)
        p[i] = (unsigned char)(v >> (8 * i));
}

/* Check the entries a writer is given: a valid name (printable, no
 * quotes or backslashes, not "__metadata__"), unique, rank 0..4, dims >= 0,
 * data present. -1 with a message naming the tensor. */
struct tensor_entry;
int tensorfile_check_entries(const struct tensor_entry *t, int n,
                             char *err, size_t errlen);

/* Read path (at most max_bytes) and parse it with parse, which returns 0
 * or -1 with a reason in why; the reason comes back as "PATH: reason". */
typedef int (*tensorfile_parse_fn)(const unsigned char *buf, size_t len,
                                   struct tensor_entry **out, int *n, char *why, size_t cap);
int tensorfile_read_parsed(const char *path, size_t max_bytes, tensorfile_parse_fn parse,
                           struct tensor_entry **out, int *n, char *err, size_t errlen);

/* Copy n float32 values between host order and little-endian bytes. */
void io_floats_to_le(unsigned char *dst, const float *src, size_t n);
void io_floats_from_le(float *dst, const unsigned char *src, size_t n);
/* Same, from big-endian bytes (numpy '>f4'). */
void io_floats_from_be(float *dst, const unsigned char *src, size_t n);

#endif
