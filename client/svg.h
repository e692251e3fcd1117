/* svg.h — training curves as a standalone SVG file: one panel per metric
 * (loss first, then accuracy, mse, ... in history order), each with its
 * training series and, when present, its validation series ("val_" prefix)
 * against the epoch, with axes, ticks and a legend. Every series is one
 * <path class="series" data-series="KEY">, so a program can find them. */
#ifndef PUNCH_CLIENT_SVG_H
#define PUNCH_CLIENT_SVG_H

#include <stdbool.h>
#include <stdio.h>

#include <jansson.h>

/* Write the curves of a history.json object to out; title heads the
 * picture (e.g. "fmnist-mlp (a1b2c3d4e5f6)"). Values that are not numbers
 * (a diverged loss written as null) leave a gap. Returns 0, or -1 when
 * writing failed (errno set). */
int svg_write_curves(const json_t *history, const char *title, FILE *out);

/* Whether history key names a per-epoch metric series svg draws. */
bool svg_is_series(const char *key, const json_t *value);

#endif
