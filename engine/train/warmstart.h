/* warmstart.h — training.init_from: a run that starts from saved weights
 * (a finished job's, or an uploaded .safetensors/.npz with this engine's
 * tensor names) instead of random ones. Every tensor of the model must be
 * in the file with its exact shape; extra entries (the input scaling, an
 * optimizer's) are ignored. */
#ifndef PUNCH_TRAIN_WARMSTART_H
#define PUNCH_TRAIN_WARMSTART_H

#include <stddef.h>

#include "jobspec/spec.h"
#include "model/model.h"

/* Load spec->training.init_from_file ("@PATH") into m, else an imported
 * model's file (spec->model_file, its initializers); nothing when the
 * spec has neither. -1 with "training.init_from: ..." naming the file and the
 * first tensor that is missing or has another shape (both shapes given). */
int warmstart_load(model *m, const job_spec *spec, char *err, size_t errlen);

/* The same check without data or a run: build the model on one CPU thread
 * and load the file (punch-train --validate, which punchcardd runs at
 * submit so a mismatch is a 400). 0 when the spec has no init_from. */
int warmstart_check(const job_spec *spec, char *err, size_t errlen);

#endif
