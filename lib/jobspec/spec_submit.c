/* spec_submit.c — a submitted spec read once (spec_submit.h): one parse of
 * the text, the checks a server adds to the spec's own, the caller's name
 * resolution on the tree, then the canonical text and the facts kept. */
#include "jobspec/spec_submit.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "jobspec/spec_hparams.h"

/* Does s hold a control character: C0 (ESC, BEL, CR, LF...), DEL, or C1
 * (U+0080..U+009F, two bytes in UTF-8)? */
static bool spec_has_control(const char *s)
{
    for (const unsigned char *p = (const unsigned char *)s; *p; p++)
        if (*p < 0x20 || *p == 0x7f || (p[0] == 0xc2 && p[1] >= 0x80 && p[1] <= 0x9f))
            return true;
    return false;
}

bool spec_find_control(const json_t *v, const char *at, char *path, size_t cap)
{
    char sub[200];
    if (json_is_string(v) && spec_has_control(json_string_value(v))) {
        snprintf(path, cap, "%s", at[0] ? at : "(top level)");
        return true;
    }
    if (json_is_object(v)) {
        const char *key;
        const json_t *item;
        json_object_foreach((json_t *)v, key, item) {
            snprintf(sub, sizeof sub, "%s%s%s", at, at[0] ? "." : "", key);
            if (spec_has_control(key)) {
                snprintf(path, cap, "%s", at[0] ? at : "(top level)");
                return true;
            }
            if (spec_find_control(item, sub, path, cap))
                return true;
        }
    }
    for (size_t i = 0; json_is_array(v) && i < json_array_size(v); i++) {
        snprintf(sub, sizeof sub, "%s[%zu]", at, i);
        if (spec_find_control(json_array_get(v, i), sub, path, cap))
            return true;
    }
    return false;
}

static spec_submit_status spec_submit_fail(json_t *root, spec_submission *out,
                                           spec_submit_status st)
{
    json_decref(root);
    spec_submission_clear(out);
    return st;
}

spec_submit_status spec_submit_read(const char *text, size_t len, const spec_resolver *res,
                                    spec_submission *out, spec_error *err, spec_refusal *no)
{
    memset(out, 0, sizeof *out);
    no->field = NULL;
    no->msg[0] = '\0';
    json_t *root = spec_parse_text(text, len, err);
    if (!root)
        return SPEC_SUBMIT_INVALID;
    /* Validated as written first: the user's own mistakes come before
     * what resolving their names may find. */
    out->spec = spec_parse_json(root, err);
    if (!out->spec)
        return spec_submit_fail(root, out, SPEC_SUBMIT_INVALID);
    if (spec_find_control(root, "", no->field_buf, sizeof no->field_buf)) {
        no->field = no->field_buf;
        snprintf(no->msg, sizeof no->msg, "%s: control characters (ESC, BEL, CR, LF, DEL, "
                 "C1...) are not allowed", no->field_buf);
        return spec_submit_fail(root, out, SPEC_SUBMIT_CONTROL);
    }
    if (res && res->resolve) {
        json_t *written = json_deep_copy(root);
        if (!written)
            return spec_submit_fail(root, out, SPEC_SUBMIT_NOMEM);
        if (res->resolve(res->ctx, root, no) != 0) {
            json_decref(written);
            return spec_submit_fail(root, out, SPEC_SUBMIT_REFUSED);
        }
        bool changed = !json_equal(root, written);
        json_decref(written);
        /* The resolved tree is what the engine will read: the spec returned
         * is built from it (a tree walk, not a parse). */
        if (changed) {
            spec_free(out->spec);
            out->spec = spec_parse_json(root, err);
            if (!out->spec)
                return spec_submit_fail(root, out, SPEC_SUBMIT_INVALID);
        }
    }
    out->text = json_dumps(root, JSON_COMPACT);
    json_decref(root);
    if (!out->text)
        return spec_submit_fail(NULL, out, SPEC_SUBMIT_NOMEM);
    if (res && res->check && res->check(res->ctx, out->spec, out->text, no) != 0)
        return spec_submit_fail(NULL, out, SPEC_SUBMIT_REFUSED);
    out->facts.ranks = spec_ranks_needed(out->spec);
    out->facts.checkpoint_keep = out->spec->training.checkpoint_keep;
    out->hparams = spec_hparams_text(out->spec);
    if (!out->hparams)
        return spec_submit_fail(NULL, out, SPEC_SUBMIT_NOMEM);
    return SPEC_SUBMIT_OK;
}

void spec_submission_clear(spec_submission *s)
{
    spec_free(s->spec);
    free(s->text);
    free(s->hparams);
    s->spec = NULL;
    s->text = NULL;
    s->hparams = NULL;
}
