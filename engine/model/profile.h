/* profile.h — training.profile (PyDTNN's --profile): the time each layer's
 * forward and backward take during training steps, and each phase of a
 * step, summed while the run goes and written to profile.json at its end.
 * Off (m->profile NULL) it costs one branch per layer. On a device backend
 * every timed layer waits for the device, which slows the run but makes
 * the per-layer figures true. */
#ifndef PUNCH_MODEL_PROFILE_H
#define PUNCH_MODEL_PROFILE_H

#include <jansson.h>
#include <stdbool.h>

struct model;

typedef enum profile_phase {
    PROFILE_LOAD,     /* gathering the batch */
    PROFILE_FORWARD,
    PROFILE_LOSS,
    PROFILE_BACKWARD, /* with the optimizer update fused into it */
    PROFILE_PHASES,
} profile_phase;

/* Per layer and phase: total seconds, count and the longest. */
typedef struct profile_stat {
    double total, max;
    long n;
} profile_stat;

typedef struct model_profile {
    int n_layers;
    profile_stat *forward, *backward; /* [n_layers] */
    profile_stat phase[PROFILE_PHASES];
} model_profile;

/* Turn profiling on for m (m->profile); -1 when out of memory. */
int model_profile_enable(struct model *m);
void model_profile_free(model_profile *p);

/* A clock reading after the model's backend has finished its queued work
 * (timeutil's monotonic seconds). */
double model_profile_now(const struct model *m);

void profile_stat_add(profile_stat *s, double seconds);
/* Add s's times and count to *into (the longest of both stays). */
void profile_stat_merge(profile_stat *into, const profile_stat *s);
/* {"mean", "max", "total"} in milliseconds; NULL when out of memory. */
json_t *profile_stat_json(const profile_stat *s);

/* {"steps", "layers": [{"index", "type", "forward_ms": {mean, max, total},
 * "backward_ms": ...}], "step_ms": {"load": {...}, ...}}; NULL when out of
 * memory. */
json_t *model_profile_json(const struct model *m);
/* The same for figures p over m's layers (the distributed trainers merge
 * their ranks' figures into one). */
json_t *model_profile_json_of(const struct model *m, const model_profile *p);

#endif
