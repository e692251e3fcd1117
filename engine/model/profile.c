/* profile.c — per-layer and per-phase training times (profile.h). */
#include "model/profile.h"

#include <stdlib.h>

#include "model/model.h"
#include "timeutil/timeutil.h"

int model_profile_enable(model *m)
{
    model_profile *p = calloc(1, sizeof *p);
    if (!p)
        return -1;
    p->n_layers = m->n_layers;
    p->forward = calloc((size_t)m->n_layers, sizeof *p->forward);
    p->backward = calloc((size_t)m->n_layers, sizeof *p->backward);
    if (!p->forward || !p->backward) {
        model_profile_free(p);
        return -1;
    }
    m->profile = p;
    return 0;
}

void model_profile_free(model_profile *p)
{
    if (!p)
        return;
    free(p->forward);
    free(p->backward);
    free(p);
}

double model_profile_now(const model *m)
{
    if (!m->be->host_memory)
        m->be->synchronize(m->be);
    return timeutil_mono_s();
}

void profile_stat_add(profile_stat *s, double seconds)
{
    s->total += seconds;
    s->n++;
    if (seconds > s->max)
        s->max = seconds;
}

void profile_stat_merge(profile_stat *into, const profile_stat *s)
{
    into->total += s->total;
    into->n += s->n;
    if (s->max > into->max)
        into->max = s->max;
}

json_t *profile_stat_json(const profile_stat *s)
{
    return json_pack("{s:f,s:f,s:f}", "mean", s->n ? 1e3 * s->total / (double)s->n : 0.0,
                     "max", 1e3 * s->max, "total", 1e3 * s->total);
}

json_t *model_profile_json(const model *m)
{
    return model_profile_json_of(m, m->profile);
}

json_t *model_profile_json_of(const model *m, const model_profile *p)
{
    static const char *const phases[PROFILE_PHASES] = {"load", "forward", "loss", "backward"};
    json_t *layers = json_array(), *steps = json_object();
    for (int i = 0; layers && i < p->n_layers; i++)
        json_array_append_new(
            layers, json_pack("{s:i,s:s,s:o,s:o}", "index", i, "type",
                              spec_layer_type_name(m->layers[i].spec->type), "forward_ms",
                              profile_stat_json(&p->forward[i]), "backward_ms",
                              profile_stat_json(&p->backward[i])));
    for (int k = 0; steps && k < PROFILE_PHASES; k++)
        json_object_set_new(steps, phases[k], profile_stat_json(&p->phase[k]));
    if (!layers || !steps) {
        json_decref(layers);
        json_decref(steps);
        return NULL;
    }
    return json_pack("{s:I,s:o,s:o}", "steps", (json_int_t)p->phase[PROFILE_FORWARD].n,
                     "layers", layers, "step_ms", steps);
}
