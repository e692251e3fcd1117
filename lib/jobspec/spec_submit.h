/* spec_submit.h — a submitted spec read once: the edge between a server
 * and the spec library. spec_submit_read() parses the text (the only JSON
 * parse of a submit), validates it as written, refuses control characters,
 * lets the caller resolve names on the parsed tree ("@NAME" uploads,
 * training.init_from), and returns the resolved spec, its canonical text
 * and the facts a scheduler keeps, so nothing downstream parses it again.
 *
 * Ownership: the spec_submission's spec, text and hparams are heap; release them
 * with spec_submission_clear(). */
#ifndef PUNCH_SPEC_SUBMIT_H
#define PUNCH_SPEC_SUBMIT_H

#include <stdbool.h>
#include <stddef.h>

#include <jansson.h>

#include "jobspec/spec.h"

/* What resolution may refuse with: the JSON path and a message naming it. */
typedef struct spec_refusal {
    const char *field; /* static, or field_buf */
    char field_buf[200];
    char msg[1024];
} spec_refusal;

/* The caller's half: resolve() rewrites the names of root (as written,
 * already validated) into what the engine reads, in place; check() looks at
 * the resolved spec (a warm start's tensors). Each returns 0, or -1 with
 * *no filled. Either may be NULL. */
typedef struct spec_resolver {
    void *ctx;
    int (*resolve)(void *ctx, json_t *root, spec_refusal *no);
    int (*check)(void *ctx, const job_spec *spec, const char *text, spec_refusal *no);
} spec_resolver;

/* What the daemon stores beside the text, so that a start or a finish
 * reads no spec. */
typedef struct spec_facts {
    int ranks;           /* spec_ranks_needed */
    int checkpoint_keep; /* training.checkpoint_keep */
} spec_facts;

typedef struct spec_submission {
    job_spec *spec; /* the resolved spec */
    char *text;     /* its canonical text: compact, resolved; what runs */
    spec_facts facts;
    char *hparams;  /* its key hyperparameters, compact JSON (spec_hparams.h) */
} spec_submission;

/* Which step refused a submit: the spec itself (err holds the JSON path),
 * a control character, or the resolver (no holds the field and message). */
typedef enum spec_submit_status {
    SPEC_SUBMIT_OK = 0,
    SPEC_SUBMIT_INVALID,
    SPEC_SUBMIT_CONTROL,
    SPEC_SUBMIT_REFUSED,
    SPEC_SUBMIT_NOMEM,
} spec_submit_status;

spec_submit_status spec_submit_read(const char *text, size_t len, const spec_resolver *res,
                                    spec_submission *out, spec_error *err, spec_refusal *no);
void spec_submission_clear(spec_submission *s);

/* The JSON path (into path) of the first key or string of v holding a
 * control character (C0, DEL, C1): such text would reach logs and other
 * users' terminals as escape sequences. False if there is none. */
bool spec_find_control(const json_t *v, const char *at, char *path, size_t cap);

#endif
