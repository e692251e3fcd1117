/* spec_dataref.c — what a data.* value names: a dataset under the roots, an
 * upload (@NAME) or an upload's resolved path (@/PATH), and the rules each
 * name follows (declared in spec.h). Apart from spec.c so that the section
 * parsers (spec_training.c) and the programs use them without calling back
 * into the top-level parser. */
#include <stddef.h>
#include <string.h>

#include "jobspec/spec_internal.h"

bool spec_dataset_name_ok(const char *name, const char **why)
{
    const char *reason = NULL;
    size_t len = strlen(name);
    if (len == 0)
        reason = "is empty";
    else if (len > 200)
        reason = "is longer than 200 bytes";
    else if (name[0] == '/')
        reason = "is an absolute path; name a dataset under the dataset roots";
    else if (strchr(name, '\\'))
        reason = "contains a backslash";
    for (size_t i = 0; !reason && i < len; i++)
        if ((unsigned char)name[i] < 0x20 || name[i] == 0x7f)
            reason = "contains a control character";
    /* Walk the components: none empty, none hidden, none "..". */
    for (const char *c = name; !reason && *c;) {
        const char *end = strchr(c, '/');
        size_t n = end ? (size_t)(end - c) : strlen(c);
        if (n == 0)
            reason = "has an empty path component";
        else if (n == 2 && c[0] == '.' && c[1] == '.')
            reason = "contains \"..\"; dataset names cannot leave their root";
        else if (c[0] == '.')
            reason = "has a component starting with \".\"";
        c = end ? end + 1 : c + n;
        if (end && !*c)
            reason = "ends with \"/\"";
    }
    if (why)
        *why = reason;
    return reason == NULL;
}

bool spec_upload_name_ok(const char *name, const char **why)
{
    const char *reason = NULL;
    size_t len = strlen(name);
    if (len == 0 || len > 64)
        reason = "must be 1 to 64 characters";
    else if (name[0] == '.')
        reason = "must not start with a dot";
    for (size_t i = 0; !reason && i < len; i++) {
        char c = name[i];
        if (!((c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') ||
              c == '.' || c == '_' || c == '-'))
            reason = "may hold only letters, digits, '.', '_' and '-'";
    }
    if (why)
        *why = reason;
    return reason == NULL;
}

spec_ref_kind spec_dataset_ref_kind(const char *ref, const char **why)
{
    if (ref[0] != '@')
        return spec_dataset_name_ok(ref, why) ? SPEC_REF_ROOT : SPEC_REF_INVALID;
    if (ref[1] != '/') {
        const char *reason = NULL;
        if (!spec_upload_name_ok(ref + 1, &reason)) {
            if (why)
                *why = reason;
            return SPEC_REF_INVALID;
        }
        return SPEC_REF_UPLOAD;
    }
    /* A resolved path: the same rules as a root-relative name after its
     * leading slash (no "..", no hidden components, no control bytes). */
    return spec_dataset_name_ok(ref + 2, why) ? SPEC_REF_UPLOAD_PATH : SPEC_REF_INVALID;
}
