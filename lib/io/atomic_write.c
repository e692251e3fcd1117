/* atomic_write.c — replace a file so that readers see either the old or the
 * new contents, never a mix: write a temporary file in the same directory,
 * fsync it, rename it over the target, then fsync the directory so the
 * rename itself survives a crash. The daemon serves these files while the
 * engine rewrites them. */
#include "io/tensorfile.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "io/io_file.h"

static int atomic_write_all(int fd, const unsigned char *p, size_t len)
{
    while (len > 0) {
        ssize_t w = write(fd, p, len);
        if (w < 0 && errno == EINTR)
            continue;
        if (w < 0)
            return -1;
        p += w;
        len -= (size_t)w;
    }
    return 0;
}

/* fsync the directory holding path ("." when it has no slash). */
static int atomic_sync_dir(const char *path, char *err, size_t errlen)
{
    char dir[PATH_MAX];
    const char *slash = strrchr(path, '/');
    if (!slash) {
        strcpy(dir, ".");
    } else if (slash == path) {
        strcpy(dir, "/");
    } else {
        size_t n = (size_t)(slash - path);
        if (n >= sizeof dir)
            return io_errf(err, errlen, "%s: path too long", path);
        memcpy(dir, path, n);
        dir[n] = 0;
    }
    int dfd = open(dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
    if (dfd < 0)
        return io_errf(err, errlen, "%s: cannot open directory: %s", dir, strerror(errno));
    int rc = fsync(dfd);
    int e = errno;
    close(dfd);
    /* Some filesystems cannot fsync a directory (EINVAL): the rename has
     * still happened, so only real I/O errors count. */
    if (rc != 0 && e != EINVAL && e != EROFS)
        return io_errf(err, errlen, "%s: fsync of directory failed: %s", dir, strerror(e));
    return 0;
}

int atomic_write_file(const char *path, const void *data, size_t len,
                      char *err, size_t errlen)
{
    char tmp[PATH_MAX];
    const char *base = io_basename(path);
    if (!*base)
        return io_errf(err, errlen, "%s: not a file name", path);
    int n = snprintf(tmp, sizeof tmp, "%.*s.%s.tmp.XXXXXX",
                     (int)(base - path), path, base);
    if (n < 0 || (size_t)n >= sizeof tmp)
        return io_errf(err, errlen, "%s: path too long", path);

    int fd = mkostemp(tmp, O_CLOEXEC);
    if (fd < 0)
        return io_errf(err, errlen, "%s: cannot create temporary file: %s",
                       path, strerror(errno));
    const char *what = NULL;
    if (fchmod(fd, 0644) != 0)
        what = "chmod";
    else if (atomic_write_all(fd, data, len) != 0)
        what = "write";
    else if (fsync(fd) != 0)
        what = "fsync";
    int e = errno;
    if (close(fd) != 0 && !what) {
        what = "close";
        e = errno;
    }
    if (!what && rename(tmp, path) != 0) {
        what = "rename";
        e = errno;
    }
    if (what) {
        unlink(tmp);
        return io_errf(err, errlen, "%s: %s failed: %s", path, what, strerror(e));
    }
    return atomic_sync_dir(path, err, errlen);
}

/* Is name one of atomic_write_file's temporaries: "." NAME ".tmp." and the
 * six characters mkostemp put there? */
static bool atomic_is_temporary(const char *name)
{
    size_t n = strlen(name);
    if (name[0] != '.' || n < sizeof ".x.tmp.XXXXXX" - 1)
        return false;
    const char *tail = name + n - 6;
    if (strncmp(tail - 5, ".tmp.", 5) != 0)
        return false;
    for (const char *p = tail; *p; p++)
        if (!((*p >= 'a' && *p <= 'z') || (*p >= 'A' && *p <= 'Z') || (*p >= '0' && *p <= '9')))
            return false;
    return true;
}

int atomic_write_sweep(const char *dir)
{
    int dfd = open(dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
    if (dfd < 0)
        return errno == ENOENT ? 0 : -1;
    DIR *d = fdopendir(dfd);
    if (!d) {
        close(dfd);
        return -1;
    }
    int removed = 0;
    for (struct dirent *e; (e = readdir(d)) != NULL;) {
        if (atomic_is_temporary(e->d_name) && unlinkat(dirfd(d), e->d_name, 0) == 0)
            removed++;
    }
    closedir(d);
    return removed;
}
