/* fuzz_secrets.c — punchcardd's secrets file parser (daemon/http/auth.c) on any
 * bytes; a table it accepts answers lookups, and finds every plain secret
 * it was given under that entry's identity. */
#include <stdlib.h>
#include <string.h>

#include <jansson.h>

#include "http/auth.h"
#include "fuzz.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    char err[512];
    auth_table *t = auth_table_parse((const char *)data, size, err, sizeof err);
    if (t == NULL)
        return 0;
    auth_table_find(t, (const char *)data, size);
    /* Each plain secret of the document must identify its own entry. */
    json_t *doc = json_loadb((const char *)data, size, 0, NULL);
    size_t i;
    json_t *e;
    json_array_foreach(doc, i, e) {
        const char *secret = json_string_value(json_object_get(e, "secret"));
        if (secret == NULL)
            continue;
        size_t len = json_string_length(json_object_get(e, "secret"));
        const auth_entry *hit = auth_table_find(t, secret, len);
        const char *identity = json_string_value(json_object_get(e, "identity"));
        if (hit == NULL || strcmp(hit->identity, identity) != 0)
            abort();
    }
    json_decref(doc);
    auth_table_free(t);
    return 0;
}
