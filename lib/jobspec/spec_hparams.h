/* spec_hparams.h — a job's key hyperparameters, the few fields runs are
 * compared by (`punch list --wide`, the dashboard's list): its model, its
 * optimizer and learning rate, its batch size and epochs. Made once at
 * submit and stored beside the spec, so that a list shows them without
 * reading any spec again. */
#ifndef PUNCH_SPEC_HPARAMS_H
#define PUNCH_SPEC_HPARAMS_H

#include <jansson.h>

#include "jobspec/spec.h"

/* {"model": "convnet", "optimizer": "adam", "lr": 0.001, "batch_size": 64,
 * "epochs": 5}: model is the preset's name, "onnx" for an imported model,
 * "custom" for layers written in the spec; batch_size is per worker. A
 * predict task has no training: model only. NULL when out of memory;
 * caller owns it. */
json_t *spec_hparams(const job_spec *spec);

/* The same as compact text (lr to 9 significant digits, so 0.2 stays 0.2),
 * heap, or NULL when out of memory. */
char *spec_hparams_text(const job_spec *spec);

#endif
