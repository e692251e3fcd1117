/* sweep_search.h — a sweep's search space: its parameters (a spec path
 * mapped to a list of values or a distribution), the trials a method makes
 * of them (grid: every combination; random: `trials` draws from a seeded
 * generator, the same for the same seed on any host), and a trial's
 * parameters written into a copy of the job spec. Pure: no store, no I/O. */
#ifndef PUNCH_SWEEP_SEARCH_H
#define PUNCH_SWEEP_SEARCH_H

#include <stdbool.h>
#include <stddef.h>

#include <jansson.h>

/* A refusal: the request field it concerns ("search.parameters.X") and why. */
typedef struct sweep_error {
    char field[256];
    char msg[768];
} sweep_error;

/* The trials of `search` (the request's "search" object: "parameters",
 * "method" grid|random|asha, "trials", "seed"): a new JSON array of
 * objects {path: value}, in a fixed order, at most max_trials; NULL with
 * *err filled. ASHA draws like random when "trials" is given, else takes
 * the grid. */
json_t *sweep_search_trials(const json_t *search, size_t max_trials, sweep_error *err);

/* Write value (a copy) at path in spec: "a.b" keys (objects made where
 * missing), "a[2].b" an existing array element. false with msg (capacity
 * cap) when the path does not name such a place. */
bool sweep_search_apply(json_t *spec, const char *path, const json_t *value, char *msg,
                        size_t cap);

#endif
