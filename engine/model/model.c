/* model.c — builds the layer graph of a job spec, carves every layer's
 * parameters, gradients, state and activations out of a few flat buffers,
 * and runs forward, loss and backward through the backend. */
#include "model/model.h"
#include "model/batch_steps.h"

#include "layers/dense.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static long model_input_size(const model *m, int input)
{
    if (input < 0)
        return m->in_size;
    return spec_shape_size(&m->spec->layers[input].out_shape);
}

/* Decide how the loss meets the last layer (see model_output_kind). */
static int model_choose_output(model *m, char *err, size_t errlen)
{
    const spec_layer *last = &m->spec->layers[m->n_layers - 1];
    spec_activation act = layer_final_activation(last);
    m->output_kind = OUTPUT_PLAIN;
    if (m->out_steps > 0 && m->spec->training.loss != LOSS_CATEGORICAL_CROSSENTROPY) {
        snprintf(err, errlen, "training.loss: a label per step (data.per_step_labels) is "
                 "trained with categorical_crossentropy only in this version, not %s",
                 spec_loss_name(m->spec->training.loss));
        return -1;
    }
    if (m->spec->training.loss != LOSS_CATEGORICAL_CROSSENTROPY)
        return 0;
    if (act == ACT_SOFTMAX) {
        /* The fused loss applies the softmax; the layer emits logits. */
        m->layers[m->n_layers - 1].act = ACT_NONE;
        m->output_kind = OUTPUT_SOFTMAX_LOGITS;
        return 0;
    }
    if (act == ACT_NONE) {
        m->output_kind = OUTPUT_SOFTMAX_LOGITS;
        return 0;
    }
    snprintf(err, errlen, "training.loss: categorical_crossentropy needs a softmax or linear "
             "last layer, but layer %d ends in %s", m->n_layers - 1, spec_activation_name(act));
    return -1;
}

static int model_setup_layers(model *m, char *err, size_t errlen)
{
    const job_spec *spec = m->spec;
    for (int i = 0; i < m->n_layers; i++) {
        layer *l = &m->layers[i];
        const spec_layer *s = &spec->layers[i];
        l->spec = s;
        l->index = i;
        l->ops = layer_ops_for(s->type);
        l->max_batch = m->max_batch;
        l->act = layer_final_activation(s);
        l->in_size = spec_shape_size(&s->in_shape);
        l->out_size = spec_shape_size(&s->out_shape);
        l->n_in = s->n_inputs;
        if (!l->ops || s->n_inputs < 1 || s->n_inputs > SPEC_MAX_INPUTS) {
            snprintf(err, errlen, "model.layers[%d]: unsupported layer", i);
            return -1;
        }
        for (int k = 0; k < s->n_inputs; k++) {
            if (s->inputs[k] >= i || s->inputs[k] < -1) {
                snprintf(err, errlen, "model.layers[%d].inputs: %d is not an earlier layer", i,
                         s->inputs[k]);
                return -1;
            }
            l->x_size[k] = model_input_size(m, s->inputs[k]);
        }
    }
    if (model_choose_output(m, err, errlen) < 0)
        return -1;
    for (int i = 0; i < m->n_layers; i++) {
        layer *l = &m->layers[i];
        char why[256];
        if (l->ops->setup(l, m->be, why, sizeof why) < 0) {
            snprintf(err, errlen, "model.layers[%d] (%s): %s", i,
                     spec_layer_type_name(l->spec->type), why);
            return -1;
        }
        if (l->n_params != l->spec->n_params || l->n_state != l->spec->n_state) {
            snprintf(err, errlen, "model.layers[%d] (%s): engine counts %ld parameters, spec %ld",
                     i, spec_layer_type_name(l->spec->type), l->n_params, l->spec->n_params);
            return -1;
        }
    }
    layer_fuse_relu_maxpool(m->layers, m->n_layers, m->be);
    return 0;
}

/* Allocate the flat buffers and point every layer into them. */
static int model_allocate(model *m, char *err, size_t errlen)
{
    backend *be = m->be;
    long act_floats = 0;
    m->n_params = m->n_trainable = m->n_state = m->workspace_floats = 0;
    for (int i = 0; i < m->n_layers; i++) {
        const layer *l = &m->layers[i];
        m->n_params += l->param_span;
        m->n_trainable += l->n_params;
        m->n_state += l->n_state;
        act_floats += 2L * m->max_batch * l->out_size + l->aux_floats;
        if (l->workspace_floats > m->workspace_floats)
            m->workspace_floats = l->workspace_floats;
    }
    long nb = (long)m->max_batch;
    m->params = be->alloc(be, m->n_params);
    m->grads = be->alloc(be, m->n_params);
    m->state = be->alloc(be, m->n_state);
    m->activations = be->alloc(be, act_floats);
    m->workspace = be->alloc(be, m->workspace_floats);
    m->x = be->alloc(be, nb * m->in_size);
    m->targets = be->alloc(be, nb * m->n_out);
    m->probs = be->alloc(be, nb * m->n_out);
    m->grad_written = calloc((size_t)m->n_layers, sizeof *m->grad_written);
    if (be->host_memory) {
        /* Batches are gathered straight into the model's input; the
         * upload is then a copy onto itself, which the backend skips. */
        m->host_x = m->x;
        m->host_t = m->targets;
    } else {
        m->host_x = malloc((size_t)(nb * m->in_size) * sizeof(float));
        m->host_t = malloc((size_t)(nb * m->n_out) * sizeof(float));
        m->host_params = malloc((size_t)(m->n_params > 0 ? m->n_params : 1) * sizeof(float));
        m->host_grads = malloc((size_t)(m->n_params > 0 ? m->n_params : 1) * sizeof(float));
    }
    if (!m->params || !m->grads || !m->state || !m->activations || !m->workspace || !m->x ||
        !m->targets || !m->probs || !m->grad_written || !m->host_x || !m->host_t ||
        (!be->host_memory && (!m->host_params || !m->host_grads))) {
        snprintf(err, errlen, "model: out of memory (%ld parameters, %ld activation floats)",
                 m->n_params, act_floats);
        return -1;
    }
    /* The padding between tensors must start (and so stay) zero. */
    be->zero(be, m->params, m->n_params);
    be->zero(be, m->grads, m->n_params);
    /* A layer's output gradient is wanted only when it or a layer upstream
     * has parameters: mlp's first dense layer then skips dz @ w^T, whose
     * result would only flow back through flatten into the model input.
     * grad_written (reset by every backward pass) holds the answer here. */
    for (int i = 0; i < m->n_layers; i++) {
        const layer *l = &m->layers[i];
        m->grad_written[i] = l->n_params > 0;
        for (int k = 0; k < l->n_in; k++)
            if (l->spec->inputs[k] >= 0 && m->grad_written[l->spec->inputs[k]])
                m->grad_written[i] = true;
    }
    long p = 0, s = 0, a = 0;
    for (int i = 0; i < m->n_layers; i++) {
        layer *l = &m->layers[i];
        l->params = m->params + p;
        l->grads = m->grads + p;
        l->state = m->state + s;
        l->y = m->activations + a;
        l->dy = l->y + nb * l->out_size;
        l->aux = l->dy + nb * l->out_size;
        l->workspace = m->workspace;
        p += l->param_span;
        s += l->n_state;
        a += 2 * nb * l->out_size + l->aux_floats;
        for (int k = 0; k < l->n_in; k++) {
            int src = l->spec->inputs[k];
            l->x[k] = src < 0 ? m->x : m->layers[src].y;
            l->dx[k] = src < 0 || !m->grad_written[src] ? NULL : m->layers[src].dy;
        }
        /* flatten's output is its input's memory read as rows: no copy
         * (its forward's copy onto itself is skipped by the backend). Its
         * gradient keeps its own buffer, since the input may have other
         * readers whose gradients add up there. */
        if (l->spec->type == LAYER_FLATTEN)
            l->y = (float *)l->x[0];
    }
    /* Tied weights (layers/layer.h): the dense layer reads the
     * embedding's table, the embedding adds the dense layer's gradient. */
    for (int i = 0; i < m->n_layers; i++) {
        layer *l = &m->layers[i];
        if (l->spec->type != LAYER_DENSE || !l->spec->tied)
            continue;
        l->tied_weight = m->layers[l->spec->tie_embedding].params;
        m->layers[l->spec->tie_embedding].tied_grad = l->aux;
    }
    const layer *last = &m->layers[m->n_layers - 1];
    m->output = m->output_kind == OUTPUT_SOFTMAX_LOGITS ? m->probs : last->y;
    return 0;
}

/* A layer with several sequence inputs reads its first input's lengths,
 * so every input must shorten time alike: two branches whose windows give
 * a sample of some length different lengths (a strided "same" conv1d and a
 * "valid" pooling, say) are refused, for each length up to T. */
static int model_check_merge_lengths(const model *m, char *err, size_t errlen)
{
    const job_spec *spec = m->spec;
    int *len = malloc((size_t)m->n_layers * sizeof *len);
    if (!len) {
        snprintf(err, errlen, "model: out of memory");
        return -1;
    }
    int rc = 0;
    for (int t = 1; t <= m->steps && rc == 0; t++)
        for (int i = 0; i < m->n_layers && rc == 0; i++) {
            const spec_layer *s = &spec->layers[i];
            int src = s->inputs[0];
            len[i] = src < 0 ? t : len[src];
            for (int k = 1; k < s->n_inputs; k++) {
                int o = s->inputs[k];
                const spec_shape *shape = o < 0 ? &spec->input : &spec->layers[o].out_shape;
                if (shape->rank != 2 || (o < 0 ? t : len[o]) == len[i])
                    continue;
                char a[32] = "the input", b[32] = "the input";
                if (src >= 0)
                    snprintf(a, sizeof a, "layers[%d]", src);
                if (o >= 0)
                    snprintf(b, sizeof b, "layers[%d]", o);
                snprintf(err, errlen, "model.layers[%d]: its inputs shorten time differently: a "
                         "sequence of %d steps reaches it with %d steps from %s and %d from %s; "
                         "give the branches the same windows", i, t, len[i], a,
                         o < 0 ? t : len[o], b);
                rc = -1;
                break;
            }
            layer_seq_length(s, &len[i]);
        }
    free(len);
    return rc;
}

/* A sequence input: the lengths every layer reads. The backend must have
 * the sequence ops (the padding mask at least; each layer checks its own).
 * A last layer with a sequence output [T, classes] makes a per-step model
 * (data.per_step_labels), its T the input's: a label belongs to a step. */
static int model_setup_sequences(model *m, char *err, size_t errlen)
{
    const job_spec *spec = m->spec;
    if (spec->input.rank != 2)
        return 0;
    if (!m->be->sequence_mask) {
        snprintf(err, errlen, "model: sequence models run on the CPU backend in this version "
                 "(backend %s)", m->be->name);
        return -1;
    }
    m->steps = spec->input.dim[0];
    const spec_shape *out = &spec->layers[spec->n_layers - 1].out_shape;
    if (spec->data.per_step_labels != (out->rank == 2) ||
        (out->rank == 2 && out->dim[0] != m->steps)) {
        snprintf(err, errlen, "model: a label per step (data.per_step_labels) needs a last "
                 "layer with an output at every input step ({%d, classes}), and a sequence "
                 "output needs data.per_step_labels; end a one-label model with "
                 "global_maxpool1d, global_avgpool1d or flatten before the last dense layer",
                 m->steps);
        return -1;
    }
    if (out->rank == 2) {
        m->out_steps = out->dim[0];
        m->classes = out->dim[1];
    }
    if (model_check_merge_lengths(m, err, errlen) != 0)
        return -1;
    int windows = 0;
    for (int i = 0; i < m->n_layers; i++) {
        int len = m->steps;
        windows += layer_seq_length(&spec->layers[i], &len);
    }
    m->lengths = calloc((size_t)m->max_batch, sizeof *m->lengths);
    m->out_lengths = calloc((size_t)m->n_layers, sizeof *m->out_lengths);
    m->seq_lengths = calloc((size_t)(windows * m->max_batch + 1), sizeof *m->seq_lengths);
    if (!m->lengths || !m->out_lengths || !m->seq_lengths) {
        snprintf(err, errlen, "model: out of memory");
        return -1;
    }
    for (int r = 0; r < m->max_batch; r++)
        m->lengths[r] = m->steps;
    m->short_steps = batch_steps_allowed(m);
    m->batch_steps = m->steps;
    int32_t *next = m->seq_lengths;
    for (int i = 0; i < m->n_layers; i++) {
        int src = spec->layers[i].inputs[0];
        m->layers[i].lengths = src < 0 ? m->lengths : m->out_lengths[src];
        m->out_lengths[i] = m->layers[i].lengths;
        int len = m->steps;
        if (layer_seq_length(&spec->layers[i], &len)) {
            m->out_lengths[i] = next;
            next += m->max_batch;
        }
    }
    return 0;
}

/* Rows [0, batch) of the output lengths of every layer that shortens
 * sequences, from its input's, in layer order (an input's lengths are
 * final before its readers'). */
static void model_window_lengths(model *m, int batch)
{
    for (int i = 0; i < m->n_layers; i++) {
        if (m->out_lengths[i] == m->layers[i].lengths)
            continue;
        int32_t *out = (int32_t *)m->out_lengths[i];
        for (int r = 0; r < batch; r++) {
            out[r] = m->layers[i].lengths[r];
            layer_seq_length(m->layers[i].spec, &out[r]);
        }
    }
}

model *model_create(const job_spec *spec, backend *be, int max_batch, char *err, size_t errlen)
{
    if (spec->n_layers < 1 || max_batch < 1) {
        snprintf(err, errlen, "model: needs at least one layer and a batch of at least 1");
        return NULL;
    }
    model *m = calloc(1, sizeof *m);
    if (!m) {
        snprintf(err, errlen, "model: out of memory");
        return NULL;
    }
    m->spec = spec;
    m->be = be;
    m->max_batch = max_batch;
    m->n_layers = spec->n_layers;
    m->in_size = spec_shape_size(&spec->input);
    m->n_out = (int)spec_shape_size(&spec->layers[spec->n_layers - 1].out_shape);
    m->classes = m->n_out;
    m->layers = calloc((size_t)m->n_layers, sizeof *m->layers);
    if (!m->layers) {
        snprintf(err, errlen, "model: out of memory");
        free(m);
        return NULL;
    }
    if (model_setup_sequences(m, err, errlen) < 0) {
        model_free(m);
        return NULL;
    }
    if (m->classes != spec->data.num_classes) {
        snprintf(err, errlen, "model: the last layer has %d outputs%s but data.num_classes is "
                 "%d", m->classes, m->out_steps ? " per step" : "", spec->data.num_classes);
        model_free(m);
        return NULL;
    }
    if (model_setup_layers(m, err, errlen) < 0 || model_allocate(m, err, errlen) < 0) {
        model_free(m);
        return NULL;
    }
    return m;
}

void model_free(model *m)
{
    if (!m)
        return;
    backend *be = m->be;
    model_profile_free(m->profile);
    for (int i = 0; i < m->n_layers && m->layers; i++)
        if (m->layers[i].ops && m->layers[i].ops->release)
            m->layers[i].ops->release(&m->layers[i], be);
    float *bufs[] = {m->params, m->grads, m->state, m->activations, m->workspace, m->x,
                     m->targets, m->probs};
    for (size_t i = 0; i < sizeof bufs / sizeof bufs[0]; i++)
        if (bufs[i])
            be->free(be, bufs[i]);
    free(m->layers);
    free(m->grad_written);
    free(m->lengths);
    free(m->out_lengths);
    free(m->seq_lengths);
    if (!be->host_memory) {
        free(m->host_x);
        free(m->host_t);
    }
    free(m->host_params);
    free(m->host_grads);
    free(m);
}

int model_init_params(model *m, unsigned long seed, char *err, size_t errlen)
{
    float *hp = calloc((size_t)(m->n_params + 1), sizeof *hp);
    float *hs = calloc((size_t)(m->n_state + 1), sizeof *hs);
    if (!hp || !hs) {
        free(hp);
        free(hs);
        snprintf(err, errlen, "model: out of memory initialising %ld parameters", m->n_params);
        return -1;
    }
    for (int i = 0; i < m->n_layers; i++) {
        const layer *l = &m->layers[i];
        if (!l->ops->init)
            continue;
        rng r = rng_make(seed, (uint64_t)i);
        l->ops->init(l, hp + (l->params - m->params), hs + (l->state - m->state), &r);
    }
    model_set_params(m, hp);
    model_set_state(m, hs);
    m->be->zero(m->be, m->grads, m->n_params);
    m->seed = backend_hash64(seed ^ 0x5eedd20b0u);
    free(hp);
    free(hs);
    return 0;
}

static int model_sample_length(const model *m, const dataset *d, long src, int32_t *out,
                               char *err, size_t errlen);

/* The targets of a per-step row: the one-hot label of each real step,
 * zeros at the padding steps (a zero target adds no loss; the mask of
 * model_loss_steps removes their gradient and metric count). */
static int model_stage_step_targets(model *m, const dataset *d, long src, int row, char *err,
                                    size_t errlen)
{
    int32_t len;
    if (model_sample_length(m, d, src, &len, err, errlen) < 0)
        return -1;
    if (d->label_steps != m->out_steps || d->t) {
        snprintf(err, errlen, "the data has %ld %s per sample but the model predicts one "
                 "class at each of %d steps", d->label_steps,
                 d->t ? "float targets" : "labels", m->out_steps);
        return -1;
    }
    float *t = m->host_t + (long)row * m->n_out;
    memset(t, 0, (size_t)m->n_out * sizeof *t);
    const int32_t *y = d->y + src * d->label_steps;
    for (int s = 0; s < len; s++) {
        if (y[s] < 0 || y[s] >= m->classes) {
            snprintf(err, errlen, "sample %ld step %d: label %d out of range [0, %d)", src, s,
                     y[s], m->classes);
            return -1;
        }
        t[(long)s * m->classes + y[s]] = 1.0f;
    }
    return 0;
}

/* The target of row `row`: sample src's regression targets as they are,
 * or the one-hot vector of its label (of each step's, per step). */
static int model_stage_target(model *m, const dataset *d, long src, int row, char *err,
                              size_t errlen)
{
    if (m->out_steps > 0)
        return model_stage_step_targets(m, d, src, row, err, errlen);
    if (d->label_steps > 1) {
        snprintf(err, errlen, "the data has a label per step (%ld) but the model one "
                 "prediction per sample", d->label_steps);
        return -1;
    }
    if (d->t) {
        if (d->num_classes != m->n_out) {
            snprintf(err, errlen, "the data has %d targets per sample but the model %d outputs",
                     d->num_classes, m->n_out);
            return -1;
        }
        memcpy(m->host_t + (long)row * m->n_out, d->t + src * m->n_out,
               (size_t)m->n_out * sizeof *m->host_t);
        return 0;
    }
    int32_t label = d->y[src];
    if (label < 0 || label >= m->n_out) {
        snprintf(err, errlen, "sample %ld: label %d out of range [0, %d)", src, label, m->n_out);
        return -1;
    }
    float *t = m->host_t + (long)row * m->n_out;
    memset(t, 0, (size_t)m->n_out * sizeof *t);
    t[label] = 1.0f;
    return 0;
}

static int model_check_batch(const model *m, const dataset *d, int batch, char *err,
                             size_t errlen)
{
    if (d->features != m->in_size) {
        snprintf(err, errlen, "data has %ld features per sample, model input needs %ld",
                 d->features, m->in_size);
        return -1;
    }
    if (batch < 1 || batch > m->max_batch) {
        snprintf(err, errlen, "batch of %d outside [1, %d]", batch, m->max_batch);
        return -1;
    }
    return 0;
}

/* Below this many floats a batch is gathered by the caller alone. */
#define MODEL_GATHER_MIN_PARALLEL (1L << 15)

typedef struct gather_job {
    model *m;
    const dataset *d;
    const int64_t *idx;     /* rows idx[r], or first + r when NULL */
    long first;
} gather_job;

static void model_gather_rows(void *ctx, long begin, long end, int tid)
{
    (void)tid;
    const gather_job *j = ctx;
    long f = j->m->in_size;
    if (!j->idx) {
        memcpy(j->m->host_x + begin * f, j->d->x + (j->first + begin) * f,
               (size_t)((end - begin) * f) * sizeof(float));
        return;
    }
    for (long r = begin; r < end; r++)
        memcpy(j->m->host_x + r * f, j->d->x + j->idx[r] * f, (size_t)f * sizeof(float));
}

/* The rows are copied by the backend's threads: a gather of scattered
 * rows is bound by memory latency, and two cores have twice the misses in
 * flight. (Reading a contiguous range in place instead of copying it was
 * slower: OpenBLAS then packs the GEMM's operand straight from DRAM, with
 * access patterns the prefetchers follow worse than a copy's.) */
static void model_gather(model *m, const dataset *d, const int64_t *idx, long first,
                         int batch)
{
    gather_job j = {m, d, idx, first};
    if (m->be->host_parallel && (long)batch * m->in_size >= MODEL_GATHER_MIN_PARALLEL)
        m->be->host_parallel(m->be, batch, model_gather_rows, &j);
    else
        model_gather_rows(&j, 0, batch, 0);
}

/* Sample src's real length, checked against the model's steps. */
static int model_sample_length(const model *m, const dataset *d, long src, int32_t *out,
                               char *err, size_t errlen)
{
    int32_t len = d->len ? d->len[src] : m->steps;
    if (len < 1 || len > m->steps) {
        snprintf(err, errlen, "sample %ld: length %d outside [1, %d] (data.max_length)", src,
                 len, m->steps);
        return -1;
    }
    *out = len;
    return 0;
}

/* A token id at a real step must be a row of the embedding table. */
static int model_check_tokens(const model *m, const float *ids, int len, long src, char *err,
                              size_t errlen)
{
    int vocab = m->spec->input_tokens;
    for (int t = 0; t < len; t++) {
        float id = ids[t];
        if (!(id >= 0.0f && id < (float)vocab) || id != (float)(int32_t)id) {
            snprintf(err, errlen, "sample %ld step %d: token id %g outside [0, %d) "
                     "(model.input.tokens)", src, t, (double)id, vocab);
            return -1;
        }
    }
    return 0;
}

/* The lengths of the gathered rows (sample src(r) of d at row r), token
 * ids checked, padding zeroed: what arrives past a sample's length is
 * never seen by a layer, whatever the data holds there. */
static int model_stage_lengths(model *m, const dataset *d, const int64_t *idx, long first,
                               int batch, char *err, size_t errlen)
{
    if (!m->lengths)
        return 0;
    for (int r = 0; r < batch; r++) {
        long src = idx ? (long)idx[r] : first + r;
        if (model_sample_length(m, d, src, &m->lengths[r], err, errlen) < 0)
            return -1;
        if (m->spec->input_tokens > 0 &&
            model_check_tokens(m, m->host_x + (long)r * m->in_size, m->lengths[r], src, err,
                               errlen) < 0)
            return -1;
    }
    long per_step = m->in_size / m->steps;
    for (int r = 0; r < batch; r++)
        memset(m->host_x + (long)r * m->in_size + m->lengths[r] * per_step, 0,
               (size_t)((m->steps - m->lengths[r]) * per_step) * sizeof *m->host_x);
    model_window_lengths(m, batch);
    batch_steps_set(m, batch);
    return 0;
}

static void model_upload_batch(model *m, int batch)
{
    m->be->upload(m->be, m->x, m->host_x, (long)batch * m->in_size);
    m->be->upload(m->be, m->targets, m->host_t, (long)batch * m->n_out);
}

/* Stage samples idx[0..batch) on the host: their targets and inputs
 * (model_upload_batch sends them). */
static int model_stage_batch(model *m, const dataset *d, const int64_t *idx, int batch,
                             char *err, size_t errlen)
{
    if (model_check_batch(m, d, batch, err, errlen) < 0)
        return -1;
    for (int r = 0; r < batch; r++)
        if (model_stage_target(m, d, (long)idx[r], r, err, errlen) < 0)
            return -1;
    model_gather(m, d, idx, 0, batch);
    return 0;
}

int model_load_batch(model *m, const dataset *d, const int64_t *idx, int batch, char *err,
                     size_t errlen)
{
    if (model_stage_batch(m, d, idx, batch, err, errlen) < 0 ||
        model_stage_lengths(m, d, idx, 0, batch, err, errlen) < 0)
        return -1;
    model_upload_batch(m, batch);
    return 0;
}

int model_load_train_batch(model *m, const dataset *d, const int64_t *idx, int batch,
                           int epoch, char *err, size_t errlen)
{
    const spec_augment *a = &m->spec->data.augment;
    if (!dataset_augment_on(a))
        return model_load_batch(m, d, idx, batch, err, errlen);
    if (model_stage_batch(m, d, idx, batch, err, errlen) < 0)
        return -1;
    for (int r = 0; r < batch; r++)
        dataset_augment_sample(a, &m->spec->input, m->spec->training.seed, epoch, idx[r],
                               m->host_x + (long)r * m->in_size);
    if (model_stage_lengths(m, d, idx, 0, batch, err, errlen) < 0)
        return -1;
    model_upload_batch(m, batch);
    return 0;
}

int model_load_range(model *m, const dataset *d, long first, int batch, char *err,
                     size_t errlen)
{
    if (model_check_batch(m, d, batch, err, errlen) < 0)
        return -1;
    for (int r = 0; r < batch; r++)
        if (model_stage_target(m, d, first + r, r, err, errlen) < 0)
            return -1;
    model_gather(m, d, NULL, first, batch);
    if (model_stage_lengths(m, d, NULL, first, batch, err, errlen) < 0)
        return -1;
    model_upload_batch(m, batch);
    return 0;
}

/* The padding invariant for layers that do not know about time (dense,
 * activations, dropout, add, concat on a sequence compute every step):
 * their sequence outputs and output gradients are zeroed past each
 * sample's length. A layer that knows already wrote zeros there; the
 * mask is cheap beside any layer's work. */
static void model_mask_steps(model *m, const layer *l, float *t, int batch)
{
    const spec_shape *o = &l->spec->out_shape;
    if (m->lengths && o->rank == 2)
        m->be->sequence_mask(m->be, batch, layer_out_steps(l), o->dim[1],
                             m->out_lengths[l->index], t);
}

void model_forward(model *m, int batch, bool training, uint64_t step)
{
    uint64_t step_seed = backend_hash64(m->seed + step * 0x9e3779b97f4a7c15ULL);
    for (int i = 0; i < m->n_layers; i++) {
        layer *l = &m->layers[i];
        uint64_t seed = backend_hash64(step_seed ^ ((uint64_t)(i + 1) * 0xd1b54a32d192ed03ULL));
        /* Only training steps are profiled, not evaluations. */
        double t0 = m->profile && training ? model_profile_now(m) : 0.0;
        l->ops->forward(l, m->be, batch, training, seed);
        model_mask_steps(m, l, l->y, batch);
        if (m->profile && training)
            profile_stat_add(&m->profile->forward[i], model_profile_now(m) - t0);
    }
    if (m->lengths)
        batch_steps_unpack_output(m, batch);
}

long model_loss_terms(const model *m, int batch)
{
    if (m->out_steps == 0)
        return batch;
    const int32_t *len = m->out_lengths[m->n_layers - 1];
    long terms = 0;
    for (int r = 0; r < batch; r++)
        terms += len[r];
    return terms;
}

/* Per-step softmax cross-entropy over the batch's rows of steps, as one
 * batch of batch * T predictions: a padding step's zero target adds no
 * loss, its gradient and probabilities are masked to zero, and the
 * gradient is rescaled from the mean over batch * T rows to the mean over
 * the real steps. Metrics count real steps only. */
static double model_loss_steps(model *m, int batch, batch_metrics *metrics)
{
    backend *be = m->be;
    layer *last = &m->layers[m->n_layers - 1];
    const int32_t *len = m->out_lengths[m->n_layers - 1];
    int T = m->out_steps, C = m->classes;
    long rows = (long)batch * T;
    double loss = be->softmax_xent(be, (int)rows, C, last->y, m->targets, m->probs, last->dy);
    be->sequence_mask(be, batch, T, C, len, last->dy);
    be->sequence_mask(be, batch, T, C, len, m->probs);
    long terms = model_loss_terms(m, batch);
    if (terms > 0 && terms != rows)
        be->scale(be, rows * C, (float)((double)rows / (double)terms), last->dy);
    if (!metrics)
        return loss;
    memset(metrics, 0, sizeof *metrics);
    for (int r = 0; r < batch; r++) {
        batch_metrics b;
        long at = (long)r * m->n_out;
        be->metrics(be, len[r], C, m->probs + at, m->targets + at, &b);
        metrics->correct += b.correct;
        metrics->sq_err += b.sq_err;
        metrics->abs_err += b.abs_err;
    }
    return loss;
}

double model_loss(model *m, int batch, batch_metrics *metrics)
{
    backend *be = m->be;
    layer *last = &m->layers[m->n_layers - 1];
    double loss = 0.0;
    if (m->out_steps > 0)
        return model_loss_steps(m, batch, metrics);
    if (m->output_kind == OUTPUT_SOFTMAX_LOGITS) {
        loss = be->softmax_xent(be, batch, m->n_out, last->y, m->targets, m->probs, last->dy);
    } else if (m->spec->training.loss == LOSS_BINARY_CROSSENTROPY) {
        loss = be->binary_xent(be, batch, m->n_out, last->y, m->targets, last->dy);
    } else if (m->spec->training.loss == LOSS_CATEGORICAL_HINGE) {
        loss = be->categorical_hinge(be, batch, m->n_out, last->y, m->targets, last->dy);
    } else {
        loss = be->mse(be, batch, m->n_out, last->y, m->targets, last->dy);
    }
    if (metrics)
        be->metrics(be, batch, m->n_out, m->output, m->targets, metrics);
    return loss;
}

double model_metric(const batch_metrics *sums, double n, spec_metric metric, int n_out)
{
    if (n <= 0)
        return 0.0;
    switch (metric) {
    case METRIC_ACCURACY:
        return sums->correct / n;
    case METRIC_MSE:
        return sums->sq_err / (n * n_out);
    case METRIC_MAE:
        return sums->abs_err / (n * n_out);
    }
    return 0.0;
}

/* The fused optimizer step of model_backward_step: which optimizer, at
 * what rate, and where the layer being updated starts in the flat
 * buffers. */
typedef struct model_update {
    optimizer *opt;
    float *params;
    const float *grads;
    long offset;            /* the layer's first float (model_update_layer_range) */
    float lr;
    const layer *layer;     /* the layer of model_update_layer_range */
} model_update;

/* The optimizer step split over the backend's host threads in chunks of
 * MODEL_OPTIM_CHUNK parameters (whole vector blocks); each parameter's
 * update is independent, so the bits do not depend on the split. */
#define MODEL_OPTIM_CHUNK 4096L

typedef struct optim_job {
    const model_update *u;
    long begin, end;
} optim_job;

static void model_optim_chunk(void *ctx, long begin, long end, int tid)
{
    (void)tid;
    const optim_job *j = ctx;
    long lo = j->begin + begin * MODEL_OPTIM_CHUNK;
    long hi = j->begin + end * MODEL_OPTIM_CHUNK < j->end ? j->begin + end * MODEL_OPTIM_CHUNK
                                                          : j->end;
    optim_step_range(j->u->opt, j->u->params, j->u->grads, lo, hi, j->u->lr);
}

/* Parameters [begin, end) stepped (optim_step_end not called). */
static void model_optim_range(backend *be, const model_update *u, long begin, long end)
{
    long chunks = (end - begin + MODEL_OPTIM_CHUNK - 1) / MODEL_OPTIM_CHUNK;
    if (!be->host_parallel || chunks < 2) {
        optim_step_range(u->opt, u->params, u->grads, begin, end, u->lr);
        return;
    }
    optim_job j = {u, begin, end};
    be->host_parallel(be, chunks, model_optim_chunk, &j);
}

/* Range [begin, end) of the current layer's parameters counted without
 * padding (a dense layer's bias right after its weight, as the backend's
 * fused update counts them), stepped tensor by tensor at their aligned
 * offsets. */
static void model_update_layer_range(void *ctx, long begin, long end)
{
    const model_update *u = ctx;
    const layer *l = u->layer;
    long packed = 0;
    for (int t = 0; t < l->n_tensors; t++) {
        const layer_tensor *lt = &l->tensors[t];
        if (lt->is_state)
            continue;
        long size = layer_tensor_size(lt);
        long lo = begin > packed ? begin : packed;
        long hi = end < packed + size ? end : packed + size;
        long at = u->offset + lt->offset - packed;
        if (lo < hi)
            optim_step_range(u->opt, u->params, u->grads, at + lo, at + hi, u->lr);
        packed += size;
    }
}

/* Layer i's backward; with `u`, its parameters are then stepped (inside
 * the backward op's own parallel chunks where the layer can). */
static void model_backward_layer(model *m, int i, int batch, model_update *u)
{
    layer *l = &m->layers[i];
    bool updated = false;
    if (!m->grad_written[i]) {
        /* Nothing downstream uses this layer's output. */
        if (l->n_params > 0)
            m->be->zero(m->be, l->grads, l->param_span);
    } else {
        for (int k = 0; k < l->n_in; k++) {
            int src = l->spec->inputs[k];
            if (src < 0 || !l->dx[k])
                continue;
            l->dx_accumulate[k] = m->grad_written[src];
            m->grad_written[src] = true;
        }
        if (m->lengths && i == m->n_layers - 1)
            batch_steps_pack_output_grad(m, batch);
        model_mask_steps(m, l, l->dy, batch);
        if (u && l->spec->type == LAYER_DENSE && l->n_params > 0) {
            u->offset = l->params - m->params;
            u->layer = l;
            updated = layer_dense_backward_update(l, m->be, batch, model_update_layer_range, u);
        }
        if (!updated)
            l->ops->backward(l, m->be, batch);
    }
    if (u && !updated && l->n_params > 0) {
        long off = l->params - m->params;
        model_optim_range(m->be, u, off, off + l->param_span);
    }
}

static void model_backward_run(model *m, int batch, model_layer_hook after_layer, void *ctx,
                               model_update *u)
{
    memset(m->grad_written, 0, (size_t)m->n_layers * sizeof *m->grad_written);
    m->grad_written[m->n_layers - 1] = true;
    for (int i = m->n_layers - 1; i >= 0; i--) {
        double t0 = m->profile ? model_profile_now(m) : 0.0;
        model_backward_layer(m, i, batch, u);
        if (m->profile)
            profile_stat_add(&m->profile->backward[i], model_profile_now(m) - t0);
        if (after_layer)
            after_layer(ctx, i);
    }
}

void model_backward_hooked(model *m, int batch, model_layer_hook after_layer, void *ctx)
{
    model_backward_run(m, batch, after_layer, ctx, NULL);
}

void model_backward(model *m, int batch)
{
    model_backward_run(m, batch, NULL, NULL, NULL);
}

void model_backward_step(model *m, int batch, optimizer *opt, float lr)
{
    if (!m->be->host_memory) {
        model_backward(m, batch);
        model_optimizer_step(m, opt, lr);
        return;
    }
    model_update u = {opt, m->params, m->grads, 0, lr};
    model_backward_run(m, batch, NULL, NULL, &u);
    optim_step_end(opt);
}

void model_optimizer_step(model *m, optimizer *opt, float lr)
{
    backend *be = m->be;
    if (be->host_memory) {
        model_update u = {opt, m->params, m->grads, 0, lr};
        model_optim_range(be, &u, 0, m->n_params);
        optim_step_end(opt);
        return;
    }
    be->download(be, m->host_grads, m->grads, m->n_params);
    be->download(be, m->host_params, m->params, m->n_params);
    optim_step(opt, m->host_params, m->host_grads, m->n_params, lr);
    be->upload(be, m->params, m->host_params, m->n_params);
}

void model_get_params(model *m, float *host)
{
    m->be->download(m->be, host, m->params, m->n_params);
}

void model_set_params(model *m, const float *host)
{
    m->be->upload(m->be, m->params, host, m->n_params);
}

void model_get_state(model *m, float *host)
{
    m->be->download(m->be, host, m->state, m->n_state);
}

void model_set_state(model *m, const float *host)
{
    m->be->upload(m->be, m->state, host, m->n_state);
}
