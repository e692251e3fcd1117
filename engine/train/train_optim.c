/* train_optim.c — the single trainer's host or device optimizer, with
 * gradient accumulation, clipping and AdamW's decay ranges; see
 * train_optim.h. */
#include "train/train_optim.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* Whether AdamW decays parameter tensor `t` (train_optim.h says which). */
static bool train_optim_decays(const layer_tensor *t)
{
    return !t->is_state && t->rank >= 2 && !strstr(t->name, "bias") &&
           !strstr(t->name, "embedding");
}

static int train_optim_cmp_range(const void *a, const void *b)
{
    long x = *(const long *)a, y = *(const long *)b;
    return (x > y) - (x < y);
}

int train_optim_decay_ranges(optimizer *o, const model *m, const spec_optimizer *cfg)
{
    if (cfg->name != OPT_ADAMW || cfg->decay_all)
        return 0;
    int cap = 0;
    for (int i = 0; i < m->n_layers; i++)
        cap += m->layers[i].n_tensors;
    long *r = malloc((size_t)(cap > 0 ? 2 * cap : 1) * sizeof *r);
    if (!r)
        return -1;
    int n = 0;
    for (int i = 0; i < m->n_layers; i++) {
        const layer *l = &m->layers[i];
        if (l->spec->type == LAYER_EMBEDDING || !l->params)
            continue;
        long base = (long)(l->params - m->params);
        for (int k = 0; k < l->n_tensors; k++) {
            const layer_tensor *t = &l->tensors[k];
            if (!train_optim_decays(t))
                continue;
            r[2 * n] = base + t->offset;
            r[2 * n + 1] = base + t->offset + layer_tensor_size(t);
            n++;
        }
    }
    /* Layers and their tensors come in buffer order, but sorting costs
     * nothing and keeps the optimizer's walk correct whatever a layer
     * declares first. */
    qsort(r, (size_t)n, 2 * sizeof *r, train_optim_cmp_range);
    int rc = optim_set_decay_ranges(o, r, n);
    free(r);
    return rc;
}

int train_optim_device_check(const spec_training *tr, char *err, size_t errlen)
{
    const char *what = tr->optimizer.name == OPT_ADAMW ? "training.optimizer: adamw"
                       : tr->clip_norm > 0            ? "training.clip_norm"
                       : tr->grad_accum_steps > 1     ? "training.grad_accum_steps"
                                                      : NULL;
    if (!what)
        return 0;
    snprintf(err, errlen, "%s is not implemented on the GPU backend yet; run the job on the "
             "CPU (resources.gpus 0) or leave it out", what);
    return -1;
}

int train_optim_open(train_optim *t, model *m, const spec_training *tr, char *err,
                     size_t errlen)
{
    memset(t, 0, sizeof *t);
    t->clip_norm = tr->clip_norm;
    t->host = optim_create(&tr->optimizer, m->n_params);
    if (!t->host || train_optim_decay_ranges(t->host, m, &tr->optimizer) != 0 ||
        grad_accum_init(&t->acc, m->n_params, m->be->host_memory ? tr->grad_accum_steps : 1)) {
        snprintf(err, errlen, "optimizer: out of memory for %ld parameters", m->n_params);
        return -1;
    }
    if (m->be->host_memory)
        return 0;
    if (train_optim_device_check(tr, err, errlen) != 0)
        return -1;
    char why[512];
    t->dev = gpu_optim_create(m->be, &tr->optimizer, m->n_params, why, sizeof why);
    if (!t->dev) {
        snprintf(err, errlen, "%s", why);
        return -1;
    }
    return 0;
}

void train_optim_close(train_optim *t)
{
    gpu_optim_free(t->dev);
    optim_free(t->host);
    grad_accum_free(&t->acc);
    t->dev = NULL;
    t->host = NULL;
}

void train_optim_backward_step(train_optim *t, model *m, int batch, float lr, bool last)
{
    if (t->dev) {
        /* Queued on the backend's stream after the backward pass: nothing
         * waits here and nothing leaves the device. */
        model_backward(m, batch);
        gpu_optim_step(t->dev, m->params, m->grads, lr);
        return;
    }
    if (t->acc.k == 1 && t->clip_norm <= 0) {
        model_backward_step(m, batch, t->host, lr);
        return;
    }
    model_backward(m, batch);
    float *g = grad_accum_add(&t->acc, m->grads);
    if (!g && last)
        g = grad_accum_mean(&t->acc);
    if (!g)
        return;
    /* The group's mean back where the optimizer reads it (n floats, once
     * per optimizer step). */
    if (g != m->grads)
        memcpy(m->grads, g, (size_t)m->n_params * sizeof *g);
    optim_clip_norm(m->grads, m->n_params, t->clip_norm);
    model_optimizer_step(m, t->host, lr);
}

bool train_optim_group_open(const train_optim *t)
{
    return t->acc.count > 0;
}

/* A buffer of the state's floats, or NULL + message. */
static float *train_optim_buffer(const train_optim *t, char *err, size_t errlen)
{
    long n = optim_state_floats(t->host);
    if (gpu_optim_state_floats(t->dev) != n) {
        snprintf(err, errlen, "optimizer: device state of %ld floats, host layout %ld",
                 gpu_optim_state_floats(t->dev), n);
        return NULL;
    }
    float *buf = malloc((size_t)(n > 0 ? n : 1) * sizeof *buf);
    if (!buf)
        snprintf(err, errlen, "optimizer: out of memory for %ld floats of state", n);
    return buf;
}

int train_optim_pull(train_optim *t, char *err, size_t errlen)
{
    if (!t->dev)
        return 0;
    float *buf = train_optim_buffer(t, err, errlen);
    if (!buf)
        return -1;
    gpu_optim_state_save(t->dev, buf);
    optim_state_load(t->host, buf);
    free(buf);
    return 0;
}

int train_optim_push(train_optim *t, char *err, size_t errlen)
{
    if (!t->dev)
        return 0;
    float *buf = train_optim_buffer(t, err, errlen);
    if (!buf)
        return -1;
    optim_state_save(t->host, buf);
    gpu_optim_state_load(t->dev, buf);
    free(buf);
    return 0;
}
