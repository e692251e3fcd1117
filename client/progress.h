/* progress.h — how a job's progress reads on a terminal and in a log: the
 * one-line live bar `punch wait` redraws, the plain line it prints when
 * stdout is not a terminal, and the per-epoch summary from history.json.
 * Pure formatting over the API's JSON; every function fills buf and never
 * writes past len. */
#ifndef PUNCH_CLIENT_PROGRESS_H
#define PUNCH_CLIENT_PROGRESS_H

#include <stddef.h>

#include <jansson.h>

/* The live bar for a job object, at most width columns (ASCII only, so the
 * width is the byte count): "epoch 2/5 [=====>    ] 412/844 21.0k samples/s
 * loss 0.5123 accuracy 0.8100 ETA 0:12". Queued and starting jobs say so. */
void progress_format_bar(const json_t *job, int width, char *buf, size_t len);

/* The same facts as one plain line, for logs and pipes. */
void progress_format_line(const json_t *job, char *buf, size_t len);

/* "epoch 3/5: loss 0.4120 accuracy 0.8510 val_loss 0.4400 val_accuracy
 * 0.8400 lr 0.001 (2.5s)" for history index i (0-based) of epochs. */
void progress_format_epoch(const json_t *history, size_t i, int epochs, char *buf,
                           size_t len);

/* Number of epochs history.json holds (length of "loss"). */
size_t progress_history_epochs(const json_t *history);

/* "0:07", "12:05", "1:02:03"; "?" for a negative or non-finite value. */
void progress_format_duration(double seconds, char *buf, size_t len);

/* "950", "21.0k", "1.25M". */
void progress_format_rate(double per_s, char *buf, size_t len);

#endif
