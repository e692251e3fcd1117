/* fuzz_jobspec.c — the job spec parser and validator (lib/jobspec) on any
 * bytes: spec_parse must refuse or accept without a crash, and what it
 * accepts must keep the contract of spec.h: its resolved form parses
 * again to the same resolved form, and its summary prints. */
#include <stdlib.h>
#include <string.h>

#include <jansson.h>

#include "fuzz.h"
#include "jobspec/spec.h"

/* spec_to_json of s as canonical text; aborts when it cannot be built
 * (an accepted spec always has a resolved form). */
static char *resolved_text(const job_spec *s)
{
    json_t *j = spec_to_json(s);
    char *text = j ? json_dumps(j, JSON_SORT_KEYS | JSON_COMPACT) : NULL;
    json_decref(j);
    if (text == NULL)
        abort();
    return text;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    spec_error err;
    job_spec *s = spec_parse((const char *)data, size, &err);
    if (s == NULL) {
        char msg[600];
        spec_error_str(&err, msg, sizeof msg);
        return 0;
    }
    spec_print_summary(s, fuzz_null_stream());
    if (spec_ranks_needed(s) < 1)
        abort();
    char *text = resolved_text(s);
    job_spec *again = spec_parse(text, strlen(text), &err);
    if (again == NULL)
        abort();
    char *text2 = resolved_text(again);
    if (strcmp(text, text2) != 0)
        abort();
    free(text);
    free(text2);
    spec_free(again);
    spec_free(s);
    return 0;
}
