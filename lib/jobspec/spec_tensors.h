/* spec_tensors.h — the tensors a model's weights file holds, from its spec
 * alone: "<layer>.<type>.<name>" (0.dense.weight, 2.batchnorm.running_var)
 * with their shapes, in the order punch-train writes them. A server checks
 * a warm start's file against them at submit without building the model;
 * tests hold the engine's own list (model_tensors) to this one. */
#ifndef PUNCH_SPEC_TENSORS_H
#define PUNCH_SPEC_TENSORS_H

#include <stddef.h>

#include "io/tensorfile.h"
#include "jobspec/spec.h"

/* The model's tensors (heap, data NULL; free()), or -1 when out of memory. */
int spec_tensors(const job_spec *spec, tensor_entry **out);

/* Read the weights file at path: safetensors, or npz (an upload's name need
 * not end in .npz, so a file that is not safetensors is tried as npz). 0, or
 * -1 with why. */
int spec_tensors_read_file(const char *path, tensor_entry **file, int *n_file, char *why,
                           size_t whylen);

/* The first of the model's count tensors (mine) that file lacks or shapes
 * otherwise: 0, or -1 with "WHAT: BASE has no tensor ..." / "WHAT: tensor
 * ... is [..] in BASE but the model needs [..]". */
int spec_tensors_compare(const tensor_entry *mine, int count, const tensor_entry *file,
                         int n_file, const char *what, const char *base, char *err,
                         size_t errlen);

/* Does the weights file at path (safetensors, or npz) hold every tensor of
 * the model with its shape? 0, or -1 with a message naming the tensor and
 * both shapes ("training.init_from: tensor \"0.dense.weight\" is [8, 4] in
 * w.safetensors but the model needs [8, 3]"). */
int spec_tensors_check_file(const job_spec *spec, const char *path, char *err, size_t errlen);

#endif
