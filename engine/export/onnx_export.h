/* onnx_export.h — a trained model as model.onnx (docs/interchange.md):
 * opset 17, the graph taking /predict's raw inputs ("input", float32
 * [N, C, H, W] or [N, F], N dynamic), the training set's scaling inside
 * it, and "output" float32 [N, outputs], the values /predict returns
 * (probabilities where the loss applies a softmax). */
#ifndef PUNCH_ONNX_EXPORT_H
#define PUNCH_ONNX_EXPORT_H

#include <stddef.h>

#include "io/tensorfile.h"
#include "jobspec/spec.h"

#define ONNX_EXPORT_OPSET 17
/* IR version 8 goes with opset 17 and is the newest the onnx 1.12
 * checker (Debian 12's python3-onnx) knows. */
#define ONNX_EXPORT_IR_VERSION 8

/* Write spec's model with the weights in t (the weights file's tensors,
 * input.shift / input.factor included when the data were scaled) to path,
 * atomically. 0, or -1 with a message (a layer that cannot be exported
 * is named). */
int onnx_export_tensors(const job_spec *spec, const tensor_entry *t, int n, const char *path,
                        char *err, size_t errlen);

/* onnx_export_tensors from a weights file (.safetensors, or .npz by its
 * extension). */
int onnx_export_weights_file(const job_spec *spec, const char *weights, const char *path,
                             char *err, size_t errlen);

/* onnx_export_tensors with the model's initial weights (training.seed)
 * and no input scaling: the architecture alone (onnx_initial.c). */
int onnx_export_initial(const job_spec *spec, const char *path, char *err, size_t errlen);

/* End of a successful training job: DIR/weights.safetensors to
 * DIR/model.onnx. A failure is printed as a warning on stderr and
 * returned (-1); the job's outcome does not depend on it. */
int onnx_export_run_dir(const job_spec *spec, const char *dir);

/* onnx_export_run_dir on the rank that wrote the weights: rank 0 of an
 * MPI job (OMPI_COMM_WORLD_RANK, PMI_RANK), or a process mpirun did not
 * start; every other rank returns 0 at once. */
int onnx_export_after_job(const job_spec *spec, const char *dir);

#endif
