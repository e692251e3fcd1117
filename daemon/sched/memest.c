/* memest.c — a job's memory from its spec (contract in memest.h). */
#include "sched/memest.h"

#include <stdio.h>

/* Floats of optimizer state per parameter; an unknown optimizer counts as
 * the largest (2). */
static int memest_optimizer_slots(const spec_optimizer *o)
{
    int slots = spec_optimizer_slots(o);
    return slots < 0 ? 2 : slots;
}

/* Samples held of a data set of `full` samples limited to `limit` (0: all). */
static double memest_samples(long full, long limit)
{
    return (double)(limit > 0 && limit < full ? limit : full);
}

void memest_job(const job_spec *spec, memest *out)
{
    const double f = sizeof(float);
    double params = (double)spec->n_params;
    double batch = spec->training.batch_size;
    double in_size = (double)spec_shape_size(&spec->input);
    double outputs = 0;
    for (int i = 0; i < spec->n_layers; i++)
        outputs += (double)spec_shape_size(&spec->layers[i].out_shape);
    double n_out = spec->n_layers > 0
                       ? (double)spec_shape_size(&spec->layers[spec->n_layers - 1].out_shape)
                       : 0;
    out->params = params * f;
    out->grads = params * f;
    out->optimizer = params * f * memest_optimizer_slots(&spec->training.optimizer);
    out->state = (double)spec->n_state * f;
    /* Each layer's output and its gradient (model_allocate: 2 x batch x out). */
    out->activations = 2 * batch * outputs * f;
    /* The batch's inputs, targets and probabilities. */
    out->batch = batch * (in_size + 2 * n_out) * f;
    /* A sample in memory: its inputs as floats and its label. */
    double samples = 0;
    const spec_data *d = &spec->data;
    if (d->format == DATA_SYNTHETIC)
        samples = memest_samples(d->synthetic_train, d->train_samples) +
                  memest_samples(d->synthetic_test, d->test_samples);
    else
        samples = (double)d->train_samples + (double)d->test_samples;
    out->data = samples * (in_size + 1) * f;
    out->runtime = MEMEST_RANK_RUNTIME;
    out->per_rank = out->params + out->grads + out->optimizer + out->state + out->activations +
                    out->batch + out->data + out->runtime;
    out->ranks = spec_ranks_needed(spec);
    out->total = out->per_rank * out->ranks;
}

const char *memest_format(double bytes, char *buf, size_t cap)
{
    const double mib = 1024.0 * 1024, gib = mib * 1024;
    if (bytes >= gib)
        snprintf(buf, cap, "%.1f GiB", bytes / gib);
    else
        snprintf(buf, cap, "%.1f MiB", bytes / mib);
    return buf;
}

double memest_host_memory(long host_memory_mb)
{
    const double mib = 1024.0 * 1024;
    if (host_memory_mb > 0)
        return (double)host_memory_mb * mib;
    FILE *f = fopen("/proc/meminfo", "re");
    if (!f)
        return 0;
    char line[128];
    double total = 0;
    while (fgets(line, sizeof line, f)) {
        unsigned long long kib;
        if (sscanf(line, "MemTotal: %llu kB", &kib) == 1) {
            total = (double)kib * 1024;
            break;
        }
    }
    fclose(f);
    double headroom = total / 10 > 1024 * mib ? total / 10 : 1024 * mib;
    return total > headroom ? total - headroom : 0;
}

double memest_ceiling(const memest *m, double host_memory)
{
    const double gib = 1024.0 * 1024 * 1024;
    double ceiling = 2 * m->total > m->total + 2 * gib ? 2 * m->total : m->total + 2 * gib;
    return host_memory > 0 && host_memory < ceiling ? host_memory : ceiling;
}
