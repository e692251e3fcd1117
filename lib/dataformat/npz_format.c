/* npz_format.c — a dataset npz's x/y pairs (npz_format.h). */
#include "dataformat/npz_format.h"

#include <stdio.h>
#include <string.h>

#include "io/io_file.h"

const char *const npzfmt_pairs[NPZFMT_PAIRS][2] = {
    {"x_train", "y_train"}, {"x", "y"}, {"x_test", "y_test"}, {"x_val", "y_val"}};

int npzfmt_pair_find(const npz_index *ix, const char *xn, const char *yn, npzfmt_pair *out,
                     char *err, size_t errlen)
{
    const npz_array *x = npz_index_find(ix, xn), *y = npz_index_find(ix, yn);
    memset(out, 0, sizeof *out);
    if (!x && !y)
        return 0;
    if (!x || !y)
        return io_errf(err, errlen, "%s without %s", x ? xn : yn, x ? yn : xn);
    if (x->h.rank < 2)
        return io_errf(err, errlen, "%s has shape of rank %d; expected [N, features...]", xn,
                       x->h.rank);
    if (y->h.rank < 1 || y->h.rank > 2)
        return io_errf(err, errlen, "%s has rank %d; expected [N] class ids or [N, K]", yn,
                       y->h.rank);
    if (x->h.dims[0] != y->h.dims[0])
        return io_errf(err, errlen, "%s has %ld rows but %s %ld", xn, x->h.dims[0], yn,
                       y->h.dims[0]);
    char ln[96];
    snprintf(ln, sizeof ln, "len%s", xn + 1);
    const npz_array *len = npz_index_find(ix, ln);
    if (len && (len->h.rank != 1 || len->h.dims[0] != x->h.dims[0]))
        return io_errf(err, errlen, "%s must be [N] with %s's %ld rows", ln, xn, x->h.dims[0]);
    *out = (npzfmt_pair){x, y, len};
    return 0;
}
