/* sweep_search.c — parameters to trials: the grid's combinations and the
 * random search's draws, and a trial's values written into its job spec.
 * The generator is splitmix64 over the seed, so a seed gives the same
 * trials on every host and build (libc's rand() would not). */
#include "sweep/sweep_search.h"

#include <errno.h>
#include <math.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static bool sweep_fail(sweep_error *err, const char *field, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));

static bool sweep_fail(sweep_error *err, const char *field, const char *fmt, ...)
{
    snprintf(err->field, sizeof err->field, "%s", field);
    va_list ap;
    va_start(ap, fmt);
    char what[600];
    vsnprintf(what, sizeof what, fmt, ap);
    va_end(ap);
    snprintf(err->msg, sizeof err->msg, "%s: %s", field, what);
    return false;
}

typedef enum sweep_kind { SWEEP_VALUES, SWEEP_UNIFORM, SWEEP_LOGUNIFORM, SWEEP_INT } sweep_kind;

typedef struct sweep_param {
    const char *path;
    sweep_kind kind;
    const json_t *values; /* SWEEP_VALUES */
    double lo, hi;        /* the distributions' bounds */
} sweep_param;

/* A distribution's [a, b] pair of numbers with a < b (a <= b for int). */
static bool sweep_bounds(const json_t *pair, const char *field, sweep_param *p,
                         sweep_error *err)
{
    if (!json_is_array(pair) || json_array_size(pair) != 2 ||
        !json_is_number(json_array_get(pair, 0)) || !json_is_number(json_array_get(pair, 1)))
        return sweep_fail(err, field, "must be a pair of numbers [low, high]");
    p->lo = json_number_value(json_array_get(pair, 0));
    p->hi = json_number_value(json_array_get(pair, 1));
    if (!(p->lo < p->hi) && !(p->kind == SWEEP_INT && p->lo == p->hi))
        return sweep_fail(err, field, "low (%g) must be below high (%g)", p->lo, p->hi);
    if (p->kind == SWEEP_LOGUNIFORM && !(p->lo > 0))
        return sweep_fail(err, field, "low must be > 0 for a log-uniform draw");
    if (p->kind == SWEEP_INT && (p->lo != floor(p->lo) || p->hi != floor(p->hi) ||
                                 fabs(p->lo) > 1e15 || fabs(p->hi) > 1e15))
        return sweep_fail(err, field, "bounds must be integers");
    return true;
}

/* One parameter: {"values": [...]} or one distribution. */
static bool sweep_param_parse(const char *path, const json_t *def, sweep_param *p,
                              sweep_error *err)
{
    static const struct { const char *key; sweep_kind kind; } kinds[] = {
        {"values", SWEEP_VALUES}, {"uniform", SWEEP_UNIFORM},
        {"loguniform", SWEEP_LOGUNIFORM}, {"int", SWEEP_INT}};
    char field[256];
    snprintf(field, sizeof field, "search.parameters.%s", path);
    memset(p, 0, sizeof *p);
    p->path = path;
    if (!path[0])
        return sweep_fail(err, "search.parameters", "a parameter's path is empty");
    if (!json_is_object(def) || json_object_size(def) != 1)
        return sweep_fail(err, field, "must be one of {\"values\": [...]}, {\"uniform\": [a, b]}, "
                                      "{\"loguniform\": [a, b]}, {\"int\": [a, b]}");
    for (size_t i = 0; i < sizeof kinds / sizeof kinds[0]; i++) {
        const json_t *v = json_object_get(def, kinds[i].key);
        if (!v)
            continue;
        p->kind = kinds[i].kind;
        snprintf(field + strlen(field), sizeof field - strlen(field), ".%s", kinds[i].key);
        if (p->kind != SWEEP_VALUES)
            return sweep_bounds(v, field, p, err);
        if (!json_is_array(v) || json_array_size(v) == 0)
            return sweep_fail(err, field, "must be a non-empty list");
        p->values = v;
        return true;
    }
    return sweep_fail(err, field, "unknown kind: use values, uniform, loguniform or int");
}

/* The parameters of search, in the order of the request's object. */
static sweep_param *sweep_params(const json_t *search, size_t *n, sweep_error *err)
{
    const json_t *params = json_object_get(search, "parameters");
    if (!json_is_object(params) || json_object_size(params) == 0) {
        sweep_fail(err, "search.parameters", "must be an object mapping spec paths to values "
                                             "or distributions");
        return NULL;
    }
    *n = json_object_size(params);
    sweep_param *p = calloc(*n, sizeof *p);
    if (!p) {
        sweep_fail(err, "search.parameters", "out of memory");
        return NULL;
    }
    size_t i = 0;
    const char *key;
    const json_t *def;
    json_object_foreach((json_t *)params, key, def) {
        if (!sweep_param_parse(key, def, &p[i++], err)) {
            free(p);
            return NULL;
        }
    }
    return p;
}

/* One trial's params from the n parameters p, the t-th of total (ctx the
 * maker's own); NULL when out of memory. */
typedef json_t *(*sweep_trial_fn)(const sweep_param *p, size_t n, size_t t, void *ctx);

/* total trials, each one's params made by one, as a JSON array; NULL with
 * err when out of memory. */
static json_t *sweep_trials_make(const sweep_param *p, size_t n, size_t total, sweep_trial_fn one,
                                 void *ctx, sweep_error *err)
{
    json_t *trials = json_array();
    for (size_t t = 0; trials && t < total; t++) {
        json_t *o = one(p, n, t, ctx);
        if (!o || json_array_append_new(trials, o) != 0) {
            json_decref(trials);
            trials = NULL;
        }
    }
    if (!trials)
        sweep_fail(err, "search", "out of memory");
    return trials;
}

/* The grid's t-th combination: t's digits in the values' counts, the last
 * parameter the lowest digit. */
static json_t *sweep_grid_trial(const sweep_param *p, size_t n, size_t t, void *ctx)
{
    (void)ctx;
    json_t *o = json_object();
    size_t rest = t;
    for (size_t i = n; o && i-- > 0;) {
        size_t k = json_array_size(p[i].values);
        if (json_object_set(o, p[i].path, json_array_get(p[i].values, rest % k)) != 0) {
            json_decref(o);
            o = NULL;
        }
        rest /= k;
    }
    return o;
}

/* Every combination of values, the last parameter varying fastest. */
static json_t *sweep_grid(const sweep_param *p, size_t n, size_t max_trials, sweep_error *err)
{
    size_t total = 1;
    for (size_t i = 0; i < n; i++) {
        char field[256];
        snprintf(field, sizeof field, "search.parameters.%s", p[i].path);
        if (p[i].kind != SWEEP_VALUES)
            return sweep_fail(err, field, "a grid takes {\"values\": [...]} only (random or "
                                          "asha with \"trials\" draw from distributions)"),
                   NULL;
        total *= json_array_size(p[i].values);
        if (total > max_trials)
            return sweep_fail(err, "search.parameters",
                              "the grid has more than %zu trials (the limit)", max_trials),
                   NULL;
    }
    return sweep_trials_make(p, n, total, sweep_grid_trial, NULL, err);
}

static uint64_t sweep_next(uint64_t *state)
{
    uint64_t z = (*state += 0x9e3779b97f4a7c15ULL);
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
    return z ^ (z >> 31);
}

/* Uniform in [0, 1), 53 bits. */
static double sweep_unit(uint64_t *state)
{
    return (double)(sweep_next(state) >> 11) * 0x1.0p-53;
}

static json_t *sweep_draw(const sweep_param *p, uint64_t *state)
{
    double u = sweep_unit(state);
    switch (p->kind) {
    case SWEEP_VALUES: {
        size_t k = json_array_size(p->values);
        return json_deep_copy(json_array_get(p->values, (size_t)(u * (double)k) % k));
    }
    case SWEEP_UNIFORM:
        return json_real(p->lo + u * (p->hi - p->lo));
    case SWEEP_LOGUNIFORM:
        return json_real(exp(log(p->lo) + u * (log(p->hi) - log(p->lo))));
    case SWEEP_INT:
        return json_integer((json_int_t)(p->lo + floor(u * (p->hi - p->lo + 1))));
    }
    return NULL;
}

/* The next draw of every parameter, in order (ctx: the generator's state). */
static json_t *sweep_random_trial(const sweep_param *p, size_t n, size_t t, void *ctx)
{
    (void)t;
    json_t *o = json_object();
    for (size_t i = 0; o && i < n; i++)
        if (json_object_set_new(o, p[i].path, sweep_draw(&p[i], ctx)) != 0) {
            json_decref(o);
            o = NULL;
        }
    return o;
}

static json_t *sweep_random(const sweep_param *p, size_t n, size_t total, uint64_t state,
                            sweep_error *err)
{
    return sweep_trials_make(p, n, total, sweep_random_trial, &state, err);
}

/* How many draws and from which seed: "trials" and "seed" (random, ASHA),
 * or PBT's "pbt": {"population", "seed"} (its seed defaulting to the
 * search's). false with err. */
static bool sweep_draws(const json_t *search, bool pbt, size_t max_trials, size_t *total,
                        uint64_t *seed, sweep_error *err)
{
    const json_t *o = pbt ? json_object_get(search, "pbt") : search;
    const char *field = pbt ? "search.pbt.population" : "search.trials";
    const json_t *jt = json_object_get(o, pbt ? "population" : "trials");
    const json_t *js = json_object_get(o, "seed");
    if (pbt && !js)
        js = json_object_get(search, "seed");
    if (!json_is_integer(jt) || json_integer_value(jt) < (pbt ? 2 : 1) ||
        (size_t)json_integer_value(jt) > max_trials)
        return sweep_fail(err, field, "must be an integer from %d to %zu", pbt ? 2 : 1,
                          max_trials);
    if (js && !json_is_integer(js))
        return sweep_fail(err, pbt && json_object_get(o, "seed") ? "search.pbt.seed"
                                                                 : "search.seed",
                          "must be an integer");
    *total = (size_t)json_integer_value(jt);
    *seed = js ? (uint64_t)json_integer_value(js) : 0;
    return true;
}

json_t *sweep_search_trials(const json_t *search, size_t max_trials, sweep_error *err)
{
    const char *method = json_string_value(json_object_get(search, "method"));
    if (!method)
        return sweep_fail(err, "search.method", "must be \"grid\", \"random\", \"asha\" or "
                                                "\"pbt\""),
               NULL;
    bool grid = strcmp(method, "grid") == 0, asha = strcmp(method, "asha") == 0;
    bool pbt = strcmp(method, "pbt") == 0;
    bool random = strcmp(method, "random") == 0 || pbt ||
                  (asha && json_object_get(search, "trials") != NULL);
    if (!grid && !asha && !random)
        return sweep_fail(err, "search.method", "unknown method \"%.64s\": use grid, random, "
                                                "asha or pbt", method),
               NULL;
    if (pbt && !json_is_object(json_object_get(search, "pbt")))
        return sweep_fail(err, "search.pbt", "must be an object {\"population\", "
                                             "\"perturb_every_epochs\", \"generations\"}"),
               NULL;
    size_t total = 0;
    uint64_t seed = 0;
    if (random && !sweep_draws(search, pbt, max_trials, &total, &seed, err))
        return NULL;
    size_t n = 0;
    sweep_param *p = sweep_params(search, &n, err);
    if (!p)
        return NULL;
    json_t *trials = random ? sweep_random(p, n, total, seed, err)
                            : sweep_grid(p, n, max_trials, err);
    free(p);
    return trials;
}

double sweep_search_unit(uint64_t *state)
{
    return sweep_unit(state);
}

/* PBT's explore of one value: a continuous one times 0.8 or 1.2, an int
 * one too (rounded, moved by at least 1), both kept within their bounds;
 * one of a list of values drawn again. */
static json_t *sweep_perturb(const sweep_param *p, const json_t *value, uint64_t *state)
{
    if (p->kind == SWEEP_VALUES || !json_is_number(value))
        return sweep_draw(p, state);
    bool up = sweep_unit(state) >= 0.5;
    double v = json_number_value(value) * (up ? 1.2 : 0.8);
    if (p->kind == SWEEP_INT) {
        double was = json_number_value(value);
        v = round(v);
        if (v == was)
            v = was + (up ? 1 : -1);
    }
    v = v < p->lo ? p->lo : v > p->hi ? p->hi : v;
    return p->kind == SWEEP_INT ? json_integer((json_int_t)v) : json_real(v);
}

json_t *sweep_search_explore(const json_t *search, const json_t *params, uint64_t *state,
                             sweep_error *err)
{
    size_t n = 0;
    sweep_param *p = sweep_params(search, &n, err);
    if (!p)
        return NULL;
    json_t *out = json_object();
    for (size_t i = 0; out && i < n; i++) {
        json_t *v = sweep_perturb(&p[i], json_object_get(params, p[i].path), state);
        if (!v || json_object_set_new(out, p[i].path, v) != 0) {
            json_decref(out);
            out = NULL;
        }
    }
    free(p);
    if (!out)
        sweep_fail(err, "search", "out of memory");
    return out;
}

/* The next path component of *path: a key (into key, capacity cap) and
 * the indices that follow it ("layers[2][0]"). false on bad syntax. */
static bool sweep_component(const char **path, char *key, size_t cap, long idx[8], int *n_idx)
{
    const char *s = *path;
    size_t len = strcspn(s, ".[");
    if (len == 0 || len >= cap)
        return false;
    memcpy(key, s, len);
    key[len] = '\0';
    s += len;
    *n_idx = 0;
    while (*s == '[') {
        char *end;
        errno = 0;
        long v = strtol(s + 1, &end, 10);
        if (end == s + 1 || *end != ']' || v < 0 || errno || *n_idx >= 8)
            return false;
        idx[(*n_idx)++] = v;
        s = end + 1;
    }
    if (*s == '.')
        s++;
    else if (*s)
        return false;
    *path = s;
    return true;
}

bool sweep_search_apply(json_t *spec, const char *path, const json_t *value, char *msg,
                        size_t cap)
{
    json_t *at = spec;
    const char *rest = path;
    while (*rest) {
        char key[128];
        long idx[8];
        int n_idx = 0;
        if (!sweep_component(&rest, key, sizeof key, idx, &n_idx)) {
            snprintf(msg, cap, "%s: not a spec path (keys joined by '.', array elements as "
                               "[N])", path);
            return false;
        }
        if (!json_is_object(at)) {
            snprintf(msg, cap, "%s: \"%s\" is inside something that is not an object", path,
                     key);
            return false;
        }
        bool last = !*rest && n_idx == 0;
        if (last)
            return json_object_set_new(at, key, json_deep_copy(value)) == 0 ||
                   (snprintf(msg, cap, "%s: out of memory", path), false);
        json_t *next = json_object_get(at, key);
        if (!next && n_idx == 0) {
            next = json_object();
            if (!next || json_object_set_new(at, key, next) != 0) {
                snprintf(msg, cap, "%s: out of memory", path);
                return false;
            }
        }
        for (int i = 0; i < n_idx; i++) {
            if (!json_is_array(next) || (size_t)idx[i] >= json_array_size(next)) {
                snprintf(msg, cap, "%s: the job spec has no element [%ld] there", path, idx[i]);
                return false;
            }
            if (!*rest && i == n_idx - 1)
                return json_array_set_new(next, (size_t)idx[i], json_deep_copy(value)) == 0 ||
                       (snprintf(msg, cap, "%s: out of memory", path), false);
            next = json_array_get(next, (size_t)idx[i]);
        }
        at = next;
    }
    snprintf(msg, cap, "%s: an empty path", path);
    return false;
}
