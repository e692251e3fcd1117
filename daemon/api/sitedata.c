/* sitedata.c — a site dataset's name checked at submit against the
 * `datasets` roots: a typo ("fashion-mnist/trian") is a 400 at once
 * instead of a failed job after its wait in the queue. */
#include "api/sitedata.h"

#include <dirent.h>
#include <errno.h>
#include <limits.h>
#include <stdio.h>
#include <string.h>

/* Length of s's first part: up to its first '.' or '-'. */
static size_t sitedata_stem_len(const char *s)
{
    return strcspn(s, ".-");
}

/* 1: dir holds an entry whose first part is stem's (any dir, for an empty
 * stem); 0: it holds none or does not exist; -1: it cannot be read. */
static int sitedata_dir_has(const char *dir, const char *stem, size_t stem_len)
{
    DIR *d = opendir(dir);
    if (!d)
        return errno == ENOENT || errno == ENOTDIR ? 0 : -1;
    int found = stem_len == 0;
    errno = 0;
    const struct dirent *e;
    while (!found && (e = readdir(d)) != NULL)
        found = e->d_name[0] != '.' && sitedata_stem_len(e->d_name) == stem_len &&
                strncmp(e->d_name, stem, stem_len) == 0;
    if (!found && errno != 0)
        found = -1;
    closedir(d);
    return found;
}

/* CIFAR-10's "DIR/train" and "DIR/test" name DIR's batches, not an entry:
 * for them DIR existing is all that can be asked. */
static bool sitedata_cifar_split(const char *base)
{
    return strcmp(base, "train") == 0 || strcmp(base, "test") == 0;
}

bool sitedata_may_exist(const char *roots, const char *name)
{
    const char *slash = strrchr(name, '/');
    const char *base = slash ? slash + 1 : name;
    int dir_len = slash ? (int)(slash - name) : 0;
    size_t stem_len = sitedata_stem_len(base);
    if (stem_len == 0)
        return false; /* ".gz" or "-x": nothing a rule of the engine's starts with */
    for (const char *root = roots; *root;) {
        size_t root_len = strcspn(root, ":");
        char dir[PATH_MAX];
        int n = snprintf(dir, sizeof dir, "%.*s/%.*s", (int)root_len, root, dir_len, name);
        if (root_len > 0 && n > 0 && (size_t)n < sizeof dir) {
            size_t want = sitedata_cifar_split(base) ? 0 : stem_len;
            if (sitedata_dir_has(dir, base, want) != 0)
                return true;
        }
        root += root_len;
        if (*root == ':')
            root++;
    }
    return false;
}
