/* options.c — the environment knobs of options.h, parsed and validated in
 * one place. */
#include "train/options.h"

#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

void engine_options_defaults(engine_options *o)
{
    *o = (engine_options){
        .local_rank = 0,
        .world_size = 1,
        .watchdog_s = 60.0,
        .exchange_mb = 8.0,
        .overlap = ENGINE_OVERLAP_DEFAULT,
    };
}

/* The variable's value, NULL when unset or empty. */
static const char *options_value(launch_env_lookup lookup, const char *name)
{
    const char *v = lookup(name);
    return v && *v ? v : NULL;
}

/* A finite number > 0 into *out (left alone when unset). */
static int options_positive(launch_env_lookup lookup, const char *name, const char *what,
                            double *out, char *err, size_t errlen)
{
    const char *v = options_value(lookup, name);
    if (!v)
        return 0;
    errno = 0;
    char *end;
    double d = strtod(v, &end);
    if (errno || *end || !isfinite(d) || d <= 0) {
        snprintf(err, errlen, "%s: must be a positive number of %s, got \"%s\"", name, what, v);
        return -1;
    }
    *out = d;
    return 0;
}

/* 0 or 1: *set says whether it was given. */
static int options_flag(launch_env_lookup lookup, const char *name, bool *out, bool *set,
                        char *err, size_t errlen)
{
    const char *v = options_value(lookup, name);
    if (set)
        *set = v != NULL;
    if (!v)
        return 0;
    if (strcmp(v, "0") != 0 && strcmp(v, "1") != 0) {
        snprintf(err, errlen, "%s: must be 0 or 1, got \"%s\"", name, v);
        return -1;
    }
    *out = v[0] == '1';
    return 0;
}

static int options_sharding(launch_env_lookup lookup, bool *replicate, char *err, size_t errlen)
{
    const char *v = options_value(lookup, "PUNCH_DIST_SHARDING");
    if (!v || strcmp(v, "shard") == 0)
        return 0;
    if (strcmp(v, "replicate") == 0) {
        *replicate = true;
        return 0;
    }
    snprintf(err, errlen, "PUNCH_DIST_SHARDING: must be shard or replicate, got \"%s\"", v);
    return -1;
}

int engine_options_read(engine_options *o, launch_env_lookup lookup, char *err, size_t errlen)
{
    engine_options_defaults(o);
    o->local_rank = launch_env_local_rank(lookup);
    o->world_size = launch_env_world_size(lookup);
    o->datasets = options_value(lookup, "PUNCH_DATASETS");
    bool overlap = false, overlap_set = false;
    if (options_positive(lookup, "PUNCH_WATCHDOG_S", "seconds", &o->watchdog_s, err,
                         errlen) != 0 ||
        options_positive(lookup, "PUNCH_DIST_EXCHANGE_MB", "MiB", &o->exchange_mb, err,
                         errlen) != 0 ||
        options_flag(lookup, "PUNCH_DIST_OVERLAP", &overlap, &overlap_set, err, errlen) != 0 ||
        options_flag(lookup, "PUNCH_DIST_CHECK_SYNC", &o->check_sync, NULL, err, errlen) != 0 ||
        options_sharding(lookup, &o->replicate, err, errlen) != 0 ||
        options_flag(lookup, "PUNCH_DIST_WHOLE_DATA", &o->whole_data, NULL, err, errlen) != 0 ||
        options_positive(lookup, "PUNCH_RANK_MEMORY_MAX", "bytes", &o->rank_memory_max, err,
                         errlen) != 0 ||
        options_flag(lookup, "PUNCH_GPU_SYNC", &o->gpu_sync, NULL, err, errlen) != 0)
        return -1;
    if (overlap_set)
        o->overlap = overlap ? ENGINE_OVERLAP_ON : ENGINE_OVERLAP_OFF;
    return 0;
}
