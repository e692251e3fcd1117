/* train_optim.c — the single trainer's host or device optimizer; see
 * train_optim.h. */
#include "train/train_optim.h"

#include <stdio.h>
#include <stdlib.h>

int train_optim_open(train_optim *t, model *m, const spec_optimizer *cfg, char *err,
                     size_t errlen)
{
    t->host = optim_create(cfg, m->n_params);
    t->dev = NULL;
    if (!t->host) {
        snprintf(err, errlen, "optimizer: out of memory for %ld parameters", m->n_params);
        return -1;
    }
    if (m->be->host_memory)
        return 0;
    char why[512];
    t->dev = gpu_optim_create(m->be, cfg, m->n_params, why, sizeof why);
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
    t->dev = NULL;
    t->host = NULL;
}

void train_optim_backward_step(train_optim *t, model *m, int batch, float lr)
{
    if (!t->dev) {
        model_backward_step(m, batch, t->host, lr);
        return;
    }
    /* Queued on the backend's stream after the backward pass: nothing
     * waits here and nothing leaves the device. */
    model_backward(m, batch);
    gpu_optim_step(t->dev, m->params, m->grads, lr);
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
