/* spec_fixture.h — a job spec from JSON text for a test, or the test fails
 * with the parser's message and the text. Shared by the layer, model and
 * train tests (tests/train includes it from here). Header-only; include
 * after <cmocka.h>. */
#ifndef PUNCH_SPEC_FIXTURE_H
#define PUNCH_SPEC_FIXTURE_H

#include <stdarg.h>
#include <stdio.h>
#include <string.h>

#include "jobspec/spec.h"

static inline job_spec *spec_fixture_parse(const char *json)
{
    spec_error e;
    job_spec *s = spec_parse(json, strlen(json), &e);
    if (!s) {
        char msg[600];
        fail_msg("spec: %s\n%s", spec_error_str(&e, msg, sizeof msg), json);
    }
    return s;
}

/* spec_fixture_parse of the JSON text printf makes of fmt and its
 * arguments (8 KiB at the most, or the test fails). */
__attribute__((format(printf, 1, 2))) static inline job_spec *spec_fixture_parsef(const char *fmt,
                                                                                   ...)
{
    char json[8192];
    va_list ap;
    va_start(ap, fmt);
    int n = vsnprintf(json, sizeof json, fmt, ap);
    va_end(ap);
    if (n < 0 || (size_t)n >= sizeof json)
        fail_msg("spec: the JSON text of \"%.60s...\" is over %zu bytes", fmt, sizeof json);
    return spec_fixture_parse(json);
}

#endif
