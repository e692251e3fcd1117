/* initfrom.h — training.init_from at submit: {"job": ID} must be a
 * succeeded job of the submitter (its weights.safetensors), {"dataset":
 * "@NAME"} one of the submitter's uploads; either is written into the
 * stored spec as an absolute "@PATH" the engine reads. Then punch-train
 * --validate loads the file into the model, so a missing tensor or a
 * shape mismatch is a 400 at submit naming the tensor and both shapes. */
#ifndef PUNCH_INITFROM_H
#define PUNCH_INITFROM_H

#include <stddef.h>

#include "daemon.h"

/* Resolve init_from in the spec text (NUL-terminated). 0 when there is
 * none (*out NULL); 1 with the spec to store in *out (heap); -1 with the
 * reason in msg (a 400 for field *field). */
int initfrom_resolve(daemon_ctx *d, const char *owner, const char *spec_text, char **out,
                     const char **field, char *msg, size_t msglen);

/* Run the engine's --validate on the resolved spec text: 0, or -1 with
 * the engine's reason in msg. */
int initfrom_check(daemon_ctx *d, const char *spec_text, char *msg, size_t msglen);

#endif
