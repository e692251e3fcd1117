/* initfrom.h — training.init_from at submit: {"job": ID} must be a
 * succeeded job of the submitter (its weights.safetensors), {"dataset":
 * "@NAME"} one of the submitter's uploads; either is written into the
 * stored spec as an absolute "@PATH" the engine reads. api.c then checks
 * the file against the model's tensors (spec_tensors_check_file), so a
 * missing tensor or a shape mismatch is a 400 at submit naming the tensor
 * and both shapes. */
#ifndef PUNCH_INITFROM_H
#define PUNCH_INITFROM_H

#include <stddef.h>

#include <jansson.h>

#include "daemon.h"

/* Resolve init_from in the spec's parsed tree, in place: 0 when there is
 * none, 1 when resolved, -1 with the reason in msg (a 400 for field
 * *field). */
int initfrom_resolve(daemon_ctx *d, const char *owner, json_t *spec, const char **field,
                     char *msg, size_t msglen);

#endif
