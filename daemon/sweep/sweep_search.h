/* sweep_search.h — a sweep's search space: its parameters (a spec path
 * mapped to a list of values or a distribution), the trials a method makes
 * of them (grid: every combination; random: `trials` draws from a seeded
 * generator, the same for the same seed on any host), and a trial's
 * parameters written into a copy of the job spec. Pure: no store, no I/O. */
#ifndef PUNCH_SWEEP_SEARCH_H
#define PUNCH_SWEEP_SEARCH_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include <jansson.h>

/* A refusal: the request field it concerns ("search.parameters.X") and why. */
typedef struct sweep_error {
    char field[256];
    char msg[768];
} sweep_error;

/* The trials of `search` (the request's "search" object: "parameters",
 * "method" grid|random|asha|pbt, "trials", "seed"): a new JSON array of
 * objects {path: value}, in a fixed order, at most max_trials; NULL with
 * *err filled. ASHA draws like random when "trials" is given, else takes
 * the grid; PBT draws its "pbt.population" (seed "pbt.seed", else
 * "seed"). */
json_t *sweep_search_trials(const json_t *search, size_t max_trials, sweep_error *err);

/* Write value (a copy) at path in spec: "a.b" keys (objects made where
 * missing), "a[2].b" an existing array element. false with msg (capacity
 * cap) when the path does not name such a place. */
bool sweep_search_apply(json_t *spec, const char *path, const json_t *value, char *msg,
                        size_t cap);

/* The seeded generator's next draw, uniform in [0, 1) (splitmix64). */
double sweep_search_unit(uint64_t *state);

/* PBT's explore: params (a trial's {path: value}) perturbed, as a new
 * object: uniform, loguniform and int values multiplied by 0.8 or 1.2
 * (ints rounded and moved by at least 1), kept within their [a, b]; a
 * list's value drawn again among `values`. NULL with err. */
json_t *sweep_search_explore(const json_t *search, const json_t *params, uint64_t *state,
                             sweep_error *err);

#endif
