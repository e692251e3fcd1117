/* spec_fields.c — the typed field readers of the spec library
 * (spec_internal.h): errors that carry their JSON path, paths joined, key
 * lists checked, ints, doubles, bools, strings, enums and pairs read with
 * their bounds. */
#include <limits.h>
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "jobspec/spec_internal.h"

bool spec_fail(spec_error *err, const char *path, const char *fmt, ...)
{
    if (!err)
        return false;
    snprintf(err->path, sizeof err->path, "%s", path ? path : "");
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(err->message, sizeof err->message, fmt, ap);
    va_end(ap);
    return false;
}

const char *spec_error_str(const spec_error *err, char *buf, size_t len)
{
    if (err->path[0])
        snprintf(buf, len, "%s: %s", err->path, err->message);
    else
        snprintf(buf, len, "%s", err->message);
    return buf;
}

void spec_path_key(char *out, size_t len, const char *parent, const char *key)
{
    if (parent && parent[0])
        snprintf(out, len, "%s.%s", parent, key);
    else
        snprintf(out, len, "%s", key);
}

void spec_path_index(char *out, size_t len, const char *parent, size_t index)
{
    snprintf(out, len, "%s[%zu]", parent, index);
}

long spec_shape_size(const spec_shape *s)
{
    long n = 1;
    for (int i = 0; i < s->rank; i++)
        n *= s->dim[i];
    return n;
}

void spec_join_names(char *buf, size_t len, const char *const *names, int n)
{
    size_t used = 0;
    buf[0] = '\0';
    for (int i = 0; i < n && used < len; i++) {
        int w = snprintf(buf + used, len - used, "%s%s", i ? ", " : "", names[i]);
        if (w < 0)
            break;
        used += (size_t)w;
    }
}

const char *spec_json_type_name(const json_t *v)
{
    switch (json_typeof(v)) {
    case JSON_OBJECT: return "an object";
    case JSON_ARRAY: return "an array";
    case JSON_STRING: return "a string";
    case JSON_INTEGER: return "an integer";
    case JSON_REAL: return "a number";
    case JSON_TRUE:
    case JSON_FALSE: return "a boolean";
    case JSON_NULL: return "null";
    }
    return "a value";
}

bool spec_check_keys(const json_t *obj, const char *path, const char *const *allowed,
                     spec_error *err)
{
    const char *key;
    json_t *value;
    json_object_foreach((json_t *)obj, key, value) {
        bool known = false;
        int n = 0;
        for (; allowed[n]; n++)
            if (strcmp(allowed[n], key) == 0)
                known = true;
        if (known)
            continue;
        char p[160], names[SPEC_MESSAGE_MAX - 64];
        spec_path_key(p, sizeof p, path, key);
        spec_join_names(names, sizeof names, allowed, n);
        return spec_fail(err, p, "unknown key; expected one of %s", names);
    }
    return true;
}

const json_t *spec_field(const json_t *obj, const char *key)
{
    const json_t *v = json_object_get(obj, key);
    return (v && !json_is_null(v)) ? v : NULL;
}

bool spec_get_int(const json_t *obj, const char *path, const char *key, long min,
                  long max, long *out, spec_error *err)
{
    const json_t *v = spec_field(obj, key);
    if (!v)
        return true;
    char p[160];
    spec_path_key(p, sizeof p, path, key);
    long long x;
    if (json_is_integer(v)) {
        x = json_integer_value(v);
    } else if (json_is_real(v) && json_real_value(v) == floor(json_real_value(v)) &&
               fabs(json_real_value(v)) < 9e15) {
        x = (long long)json_real_value(v);
    } else {
        return spec_fail(err, p, "expected an integer, got %s", spec_json_type_name(v));
    }
    if (x < min)
        return spec_fail(err, p, "must be >= %ld, got %lld", min, x);
    if (x > max)
        return spec_fail(err, p, "must be <= %ld, got %lld", max, x);
    *out = (long)x;
    return true;
}

bool spec_get_double(const json_t *obj, const char *path, const char *key, double min,
                     double max, bool min_exclusive, bool max_exclusive, double *out,
                     spec_error *err)
{
    const json_t *v = spec_field(obj, key);
    if (!v)
        return true;
    char p[160];
    spec_path_key(p, sizeof p, path, key);
    if (!json_is_number(v))
        return spec_fail(err, p, "expected a number, got %s", spec_json_type_name(v));
    double x = json_number_value(v);
    if (!isfinite(x))
        return spec_fail(err, p, "must be a finite number");
    if (min_exclusive ? x <= min : x < min)
        return spec_fail(err, p, "must be %s %g, got %g", min_exclusive ? ">" : ">=", min, x);
    if (max_exclusive ? x >= max : x > max)
        return spec_fail(err, p, "must be %s %g, got %g", max_exclusive ? "<" : "<=", max, x);
    *out = x;
    return true;
}

bool spec_get_bool(const json_t *obj, const char *path, const char *key, bool *out,
                   spec_error *err)
{
    const json_t *v = spec_field(obj, key);
    if (!v)
        return true;
    if (!json_is_boolean(v)) {
        char p[160];
        spec_path_key(p, sizeof p, path, key);
        return spec_fail(err, p, "expected true or false, got %s", spec_json_type_name(v));
    }
    *out = json_is_true(v);
    return true;
}

bool spec_get_string(const json_t *obj, const char *path, const char *key,
                     const char **out, spec_error *err)
{
    char p[160];
    return spec_get_string_at(obj, path, key, out, p, sizeof p, err);
}

bool spec_get_string_at(const json_t *obj, const char *path, const char *key,
                        const char **out, char *p, size_t plen, spec_error *err)
{
    const json_t *v = spec_field(obj, key);
    if (!v)
        return true;
    spec_path_key(p, plen, path, key);
    if (!json_is_string(v))
        return spec_fail(err, p, "expected a string, got %s", spec_json_type_name(v));
    const char *s = json_string_value(v);
    if (!s[0])
        return spec_fail(err, p, "must not be empty");
    if (strlen(s) != json_string_length(v))
        return spec_fail(err, p, "must not contain NUL bytes");
    if (json_string_length(v) > 255)
        return spec_fail(err, p, "longer than 255 bytes");
    *out = s;
    return true;
}

bool spec_match_enum(const char *value, const char *path, const char *const *names,
                     int n, const char *what, int *out, spec_error *err)
{
    for (int i = 0; i < n; i++) {
        if (strcmp(value, names[i]) == 0) {
            *out = i;
            return true;
        }
    }
    char list[SPEC_MESSAGE_MAX - 128];
    spec_join_names(list, sizeof list, names, n);
    return spec_fail(err, path, "unknown %s \"%.60s\"; expected one of %s", what, value, list);
}

bool spec_get_enum(const json_t *obj, const char *path, const char *key,
                   const char *const *names, int n, const char *what, int *out,
                   spec_error *err)
{
    const char *s = NULL;
    char p[160];
    if (!spec_get_string_at(obj, path, key, &s, p, sizeof p, err))
        return false;
    return !s || spec_match_enum(s, p, names, n, what, out, err);
}

bool spec_get_pair(const json_t *obj, const char *path, const char *key, long min,
                   long max, int out[2], spec_error *err)
{
    const json_t *v = spec_field(obj, key);
    if (!v)
        return true;
    char p[160];
    spec_path_key(p, sizeof p, path, key);
    if (json_is_array(v)) {
        if (json_array_size(v) != 2)
            return spec_fail(err, p, "expected an integer or a pair [height, width]");
        json_t *pair = json_pack("{s:O,s:O}", "0", json_array_get(v, 0), "1",
                                 json_array_get(v, 1));
        if (!pair)
            return spec_fail(err, p, "out of memory");
        long a = 0, b = 0;
        char pp[160];
        spec_path_key(pp, sizeof pp, path, key);
        bool ok = spec_get_int(pair, "", "0", min, max, &a, err) &&
                  spec_get_int(pair, "", "1", min, max, &b, err);
        json_decref(pair);
        if (!ok) {
            /* Re-anchor the element's error at its real path. */
            char elem[2 * sizeof err->path + 4];
            snprintf(elem, sizeof elem, "%s[%s]", pp, err->path);
            snprintf(err->path, sizeof err->path, "%.*s", (int)sizeof err->path - 1, elem);
            return false;
        }
        if (!json_array_get(v, 0) || !json_array_get(v, 1))
            return spec_fail(err, p, "expected an integer or a pair [height, width]");
        out[0] = (int)a;
        out[1] = (int)b;
        return true;
    }
    long x = 0;
    if (!json_is_integer(v))
        return spec_fail(err, p, "expected an integer or a pair [height, width], got %s",
                         spec_json_type_name(v));
    if (!spec_get_int(obj, path, key, min, max, &x, err))
        return false;
    out[0] = out[1] = (int)x;
    return true;
}
