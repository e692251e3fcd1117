/* scratch.h — a scratch directory for a C unit test: created fresh under
 * /tmp, removed with everything in it. Header-only, as each test program is
 * a single file. */
#ifndef PUNCH_TEST_SCRATCH_H
#define PUNCH_TEST_SCRATCH_H

#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>

#define SCRATCH_DIR_LEN 64

/* A new empty directory /tmp/punch-NAME-XXXXXX, its path into dir. */
static inline bool scratch_create(char dir[SCRATCH_DIR_LEN], const char *name)
{
    snprintf(dir, SCRATCH_DIR_LEN, "/tmp/punch-%s-XXXXXX", name);
    return mkdtemp(dir) != NULL;
}

/* Remove dir and everything under it. */
static inline bool scratch_remove(const char *dir)
{
    char cmd[SCRATCH_DIR_LEN + 16];
    snprintf(cmd, sizeof cmd, "rm -rf '%s'", dir);
    return system(cmd) == 0;
}

#endif
