/* spec_fixture.h — a job spec from JSON text for a test, or the test fails
 * with the parser's message and the text. Shared by the layer, model and
 * train tests (tests/train includes it from here). Header-only; include
 * after <cmocka.h>. */
#ifndef PUNCH_SPEC_FIXTURE_H
#define PUNCH_SPEC_FIXTURE_H

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

#endif
