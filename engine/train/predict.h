/* predict.h — punch-train --predict: the model's outputs for new inputs,
 * from a weights file, as numpy arrays in and out. */
#ifndef PUNCH_TRAIN_PREDICT_H
#define PUNCH_TRAIN_PREDICT_H

#include <stddef.h>

#include "train/train.h"

/* Read `input` (.npy: [N, ...sample] of any plain number dtype, raw values
 * as the training data were; [N, H, W, C] is transposed when model.input
 * is [C, H, W]), scale it with the weights file's input.shift and
 * input.factor (as the job's training data was scaled), run the model of
 * `spec` with opt->weights in inference mode, and write
 * opt->out_dir/predictions.npy: float32 [N, outputs] (class probabilities
 * for a softmax output). 0; 1 with a message on a runtime failure; 2 with
 * a message when the input does not fit the model (a usage error). */
int train_predict(const job_spec *spec, const train_options *opt, const char *input,
                  char *err, size_t errlen);

/* "task": "predict": training.init_from's weights ("@PATH") applied to
 * data.test's samples (the npz's x_test or x, raw, its first test_samples
 * when given), predictions.npy into opt->out_dir. 0, 1 or 2 as above. */
int train_predict_task(const job_spec *spec, const train_options *opt, char *err,
                       size_t errlen);

#endif
