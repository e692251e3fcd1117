/* launch_env.c — the node-local rank and world size from the launcher's
 * environment; see launch_env.h. (Named apart from the daemon's
 * run/launcher.c, which starts mpirun.) */
#include "backend/launch_env.h"

#include <errno.h>
#include <stdlib.h>

const char *launch_env_getenv(const char *name)
{
    return getenv(name);
}

/* A non-negative int in s (at most 2^20), or -1. */
static int launcher_parse(const char *s)
{
    if (!s || !*s)
        return -1;
    errno = 0;
    char *end;
    long v = strtol(s, &end, 10);
    if (errno || *end || v < 0 || v > 1 << 20)
        return -1;
    return (int)v;
}

/* The first of vars[0..n) that parses, or -1. */
static int launcher_first(launch_env_lookup lookup, const char *const *vars, size_t n)
{
    for (size_t i = 0; i < n; i++) {
        int v = launcher_parse(lookup(vars[i]));
        if (v >= 0)
            return v;
    }
    return -1;
}

int launch_env_local_rank(launch_env_lookup lookup)
{
    static const char *const vars[] = {
        "OMPI_COMM_WORLD_LOCAL_RANK", "MPI_LOCALRANKID", "SLURM_LOCALID",
    };
    int r = launcher_first(lookup, vars, sizeof vars / sizeof vars[0]);
    return r >= 0 ? r : 0;
}

int launch_env_world_size(launch_env_lookup lookup)
{
    static const char *const vars[] = {"OMPI_COMM_WORLD_SIZE", "PMI_SIZE"};
    int n = launcher_first(lookup, vars, sizeof vars / sizeof vars[0]);
    return n > 0 ? n : 1;
}
