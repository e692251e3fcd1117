/* model_tensors.c — a model's named tensors ("<layer>.<type>.<name>"),
 * as weight files hold them, and loading them back by name with each
 * shape checked. */
#include "model/model.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "io/tensorfile.h"

int model_tensors(const model *m, float *params, float *state, tensor_entry **out)
{
    int n = 0;
    for (int i = 0; i < m->n_layers; i++)
        n += m->layers[i].n_tensors;
    tensor_entry *t = calloc((size_t)(n > 0 ? n : 1), sizeof *t);
    if (!t)
        return -1;
    int k = 0;
    for (int i = 0; i < m->n_layers; i++) {
        const layer *l = &m->layers[i];
        for (int j = 0; j < l->n_tensors; j++, k++) {
            const layer_tensor *lt = &l->tensors[j];
            snprintf(t[k].name, sizeof t[k].name, "%d.%s.%s", i,
                     spec_layer_type_name(l->spec->type), lt->name);
            t[k].rank = lt->rank;
            for (int r = 0; r < lt->rank; r++)
                t[k].dims[r] = lt->dims[r];
            t[k].data = lt->is_state ? state + (l->state - m->state) + lt->offset
                                     : params + (l->params - m->params) + lt->offset;
        }
    }
    *out = t;
    return n;
}

static const tensor_entry *model_find_tensor(const tensor_entry *t, int n, const char *name)
{
    for (int i = 0; i < n; i++)
        if (strcmp(t[i].name, name) == 0)
            return &t[i];
    return NULL;
}

int model_load_tensors(model *m, const tensor_entry *t, int n, char *err, size_t errlen)
{
    float *hp = calloc((size_t)(m->n_params + 1), sizeof *hp);
    float *hs = calloc((size_t)(m->n_state + 1), sizeof *hs);
    tensor_entry *mine = NULL;
    int count = (hp && hs) ? model_tensors(m, hp, hs, &mine) : -1;
    int rc = -1;
    if (count < 0) {
        snprintf(err, errlen, "model: out of memory loading weights");
        goto out;
    }
    for (int i = 0; i < count; i++) {
        const tensor_entry *src = model_find_tensor(t, n, mine[i].name);
        if (!src) {
            snprintf(err, errlen, "weights: no tensor \"%s\"", mine[i].name);
            goto out;
        }
        if (!tensor_entry_same_shape(src, &mine[i])) {
            snprintf(err, errlen, "weights: \"%s\" has rank %d shape [%ld, ...], the model "
                     "needs rank %d [%ld, ...]", mine[i].name, src->rank, src->dims[0],
                     mine[i].rank, mine[i].dims[0]);
            goto out;
        }
        memcpy(mine[i].data, src->data, (size_t)tensor_entry_size(src) * sizeof(float));
    }
    model_set_params(m, hp);
    model_set_state(m, hs);
    rc = 0;
out:
    free(mine);
    free(hp);
    free(hs);
    return rc;
}
