/* csv_format.c — numeric CSV fields (csv_format.h). */
#include "dataformat/csv_format.h"

#include <errno.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

int csvfmt_number(const char *s, const char *e, double *out)
{
    while (s < e && (*s == ' ' || *s == '\t'))
        s++;
    while (e > s && (e[-1] == ' ' || e[-1] == '\t'))
        e--;
    if (s == e)
        return -1;
    /* strtod needs a terminated string: a field of a longer line is not. */
    char small[64], *copy = (size_t)(e - s) < sizeof small ? small : malloc((size_t)(e - s) + 1);
    if (!copy)
        return -1;
    memcpy(copy, s, (size_t)(e - s));
    copy[e - s] = 0;
    char *end;
    errno = 0;
    double v = strtod(copy, &end);
    bool ok = end == copy + (e - s) && isfinite(v) && !(errno == ERANGE && fabs(v) > 1.0);
    if (copy != small)
        free(copy);
    if (!ok)
        return -1;
    *out = v;
    return 0;
}

long csvfmt_fields(const char *s, const char *e)
{
    long n = 1;
    for (const char *p = s; (p = memchr(p, ',', (size_t)(e - p))) != NULL; p++)
        n++;
    return n;
}

long csvfmt_first_bad(const char *s, const char *e, long *fields, const char **bad_s,
                      const char **bad_e)
{
    long bad = -1, col = 0;
    for (const char *p = s;; col++) {
        const char *q = memchr(p, ',', (size_t)(e - p));
        if (!q)
            q = e;
        double v;
        if (bad < 0 && csvfmt_number(p, q, &v) != 0) {
            bad = col;
            *bad_s = p;
            *bad_e = q;
        }
        if (q == e)
            break;
        p = q + 1;
    }
    *fields = col + 1;
    return bad;
}

bool csvfmt_all_numbers(const char *s, const char *e)
{
    long fields;
    const char *bs, *be;
    return csvfmt_first_bad(s, e, &fields, &bs, &be) < 0;
}
