/* npz_format.h — the arrays a dataset npz holds: pairs x_train/y_train,
 * x/y, x_test/y_test, x_val/y_val, each x [N, features...] with y [N] class
 * ids or [N, K] (one-hot or targets) of the same N, and a sequence set's
 * lengths len_* (x's name with "len" for "x") [N]. */
#ifndef PUNCH_NPZ_FORMAT_H
#define PUNCH_NPZ_FORMAT_H

#include <stddef.h>

#include "io/npzarray.h"

/* The pairs an upload may hold, in the order its record count is taken. */
#define NPZFMT_PAIRS 4
extern const char *const npzfmt_pairs[NPZFMT_PAIRS][2];

typedef struct npzfmt_pair {
    const npz_array *x, *y;  /* both NULL: the file has neither */
    const npz_array *len;    /* the lengths, NULL when absent */
} npzfmt_pair;

/* The pair xn/yn of ix, checked: both or neither, x of rank 2 or more, y
 * of rank 1 or 2, the same rows, lengths [N]. 0, or -1 with a message
 * (without the file's name) in err. */
int npzfmt_pair_find(const npz_index *ix, const char *xn, const char *yn, npzfmt_pair *out,
                     char *err, size_t errlen);

#endif
