/* onnx_export.c — the graph of a whole model (onnx_export.h): the input,
 * its scaling, every layer (onnx_layers.c), the softmax the loss applies
 * to a linear last layer, and the flat output; then the file. */
#include "export/onnx_export.h"

#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "export/onnx_graph.h"
#include "export/onnx_layers.h"
#include "export/onnx_write.h"
#include "layers/layer.h"

static const tensor_entry *export_find(const tensor_entry *t, int n, const char *name)
{
    for (int i = 0; i < n; i++)
        if (strcmp(t[i].name, name) == 0)
            return &t[i];
    return NULL;
}

static bool export_all_equal(const float *v, long n, float value)
{
    for (long i = 0; i < n; i++)
        if (v[i] != value)
            return false;
    return true;
}

/* x' = (x - shift) * factor as /predict applies it (predict.c), with a
 * zero shift left out and a uniform factor as one scalar. */
static const char *export_scaling(onnx_graph *g, const job_spec *spec, const tensor_entry *t,
                                  int n, const char *x)
{
    const tensor_entry *shift = export_find(t, n, "input.shift");
    const tensor_entry *factor = export_find(t, n, "input.factor");
    long features = spec_shape_size(&spec->input);
    if (!shift || !factor || tensor_entry_size(shift) != features ||
        tensor_entry_size(factor) != features)
        return x;
    int64_t dims[3];
    for (int r = 0; r < spec->input.rank; r++)
        dims[r] = spec->input.dim[r];
    if (!export_all_equal(shift->data, features, 0.0f)) {
        const char *in[2] = {x, onnx_graph_floats(g, "input.shift", dims, spec->input.rank,
                                                  shift->data)};
        x = onnx_node_out(onnx_graph_node(g, "Sub", in, 2, "input_centred"));
    }
    const char *f = export_all_equal(factor->data, features, factor->data[0])
                        ? onnx_graph_floats(g, "input.factor", dims, 0, factor->data)
                        : onnx_graph_floats(g, "input.factor", dims, spec->input.rank,
                                            factor->data);
    const char *in[2] = {x, f};
    return onnx_node_out(onnx_graph_node(g, "Mul", in, 2, "input_scaled"));
}

/* What /predict returns from the last layer's value y: the softmax the
 * loss fuses for a linear last layer (model.c's model_choose_output),
 * flattened to [N, outputs], named "output". */
static void export_output(onnx_emit *e, const char *y)
{
    const job_spec *spec = e->spec;
    const spec_layer *last = &spec->layers[spec->n_layers - 1];
    bool per_step = e->lens && last->out_shape.rank == 2;
    /* /predict returns an imported graph's own logits (predict.c's
     * predict_source): so does its model.onnx, softmax or not in training. */
    bool imported_logits = spec->model_file && last->type != LAYER_SOFTMAX &&
                           last->activation != ACT_SOFTMAX && !per_step;
    if (spec->training.loss == LOSS_CATEGORICAL_CROSSENTROPY &&
        layer_final_activation(last) == ACT_NONE && !imported_logits)
        y = onnx_emit_activation(e, ACT_SOFTMAX, y, &last->out_shape);
    if (per_step) {
        /* A label per step: [N, T, classes], zeros at padding as /predict. */
        int64_t dims[2] = {last->out_shape.dim[0], last->out_shape.dim[1]};
        const char *in[2] = {y, e->masks[spec->n_layers - 1]};
        onnx_graph_node(e->g, "Mul", in, 2, "output");
        onnx_graph_output(e->g, "output", dims, 2);
        return;
    }
    int64_t n_out = spec_shape_size(&last->out_shape);
    if (last->out_shape.rank != 1) {
        Onnx__NodeProto *f = onnx_graph_node(e->g, "Flatten", &y, 1, "output");
        onnx_node_int(e->g, f, "axis", 1);
    } else {
        onnx_graph_node(e->g, "Identity", &y, 1, "output");
    }
    onnx_graph_output(e->g, "output", &n_out, 1);
}

/* The graph's input: int64 token ids [N, T], float [N, T, F] steps, or
 * the float image or features; a sequence's lengths and padding mask. */
static void export_input(onnx_emit *e, bool sequence)
{
    const job_spec *spec = e->spec;
    int64_t dims[3];
    for (int r = 0; r < spec->input.rank; r++)
        dims[r] = spec->input.dim[r];
    bool tokens = spec->input_tokens > 0;
    if (tokens)
        onnx_graph_input_int64(e->g, "input", dims, 1);
    else
        onnx_graph_input(e->g, "input", dims, spec->input.rank);
    if (!sequence) {
        e->input = export_scaling(e->g, spec, e->tensors, e->n_tensors, "input");
        return;
    }
    onnx_emit_seq_input(e, "input", tokens, spec->input.dim[0]);
    /* Ids are read as they are; float steps are scaled, and their padding,
     * which the scaling moves off zero, zeroed again. */
    e->input = tokens ? "input"
                      : onnx_emit_binary(e, "Mul", export_scaling(e->g, spec, e->tensors,
                                                                  e->n_tensors, "input"),
                                         e->in_mask);
}

static int export_graph(onnx_graph *g, const job_spec *spec, const tensor_entry *t, int n,
                        char *err, size_t errlen)
{
    bool sequence = spec->input.rank == 2 || spec->input_tokens > 0;
    size_t count = (size_t)spec->n_layers;
    const char **values = calloc(count, sizeof *values);
    const char **seq = sequence ? calloc(2 * count, sizeof *seq) : NULL;
    if (!values || (sequence && !seq)) {
        free(values);
        free(seq);
        snprintf(err, errlen, "ONNX export: out of memory");
        return -1;
    }
    onnx_emit e = {.g = g, .spec = spec, .tensors = t, .n_tensors = n, .values = values,
                   .lens = seq, .masks = seq ? seq + count : NULL};
    export_input(&e, sequence);
    int rc = 0;
    for (int i = 0; rc == 0 && i < spec->n_layers; i++)
        rc = onnx_emit_layer(&e, i, err, errlen);
    if (rc == 0)
        export_output(&e, values[spec->n_layers - 1]);
    free(values);
    free(seq);
    if (rc == 0 && g->failed) {
        snprintf(err, errlen, "ONNX export: out of memory");
        rc = -1;
    }
    return rc;
}

int onnx_export_tensors(const job_spec *spec, const tensor_entry *t, int n, const char *path,
                        char *err, size_t errlen)
{
    onnx_graph g;
    onnx_graph_init(&g, spec->name ? spec->name : "model");
    int rc = export_graph(&g, spec, t, n, err, errlen);
    char doc[256];
    snprintf(doc, sizeof doc, "Punchcard job \"%s\"%s%s: input = raw values as /predict takes "
             "them, output = /predict's outputs", spec->name ? spec->name : "job",
             spec->preset ? ", preset " : "", spec->preset ? spec->preset : "");
    if (rc == 0)
        rc = onnx_write_model(&g, doc, path, err, errlen);
    onnx_graph_free(&g);
    return rc;
}

int onnx_export_weights_file(const job_spec *spec, const char *weights, const char *path,
                             char *err, size_t errlen)
{
    tensor_entry *t = NULL;
    int n = 0;
    if (tensorfile_read(weights, &t, &n, err, errlen) != 0)
        return -1;
    int rc = onnx_export_tensors(spec, t, n, path, err, errlen);
    tensorfile_free(t, n);
    return rc;
}

int onnx_export_run_dir(const job_spec *spec, const char *dir)
{
    char weights[4096], path[4096], err[1024];
    snprintf(weights, sizeof weights, "%s/weights.safetensors", dir);
    snprintf(path, sizeof path, "%s/model.onnx", dir);
    if (onnx_export_weights_file(spec, weights, path, err, sizeof err) != 0) {
        fprintf(stderr, "punch-train: warning: no model.onnx: %s\n", err);
        return -1;
    }
    return 0;
}

int onnx_export_after_job(const job_spec *spec, const char *dir)
{
    const char *rank = getenv("OMPI_COMM_WORLD_RANK");
    if (!rank)
        rank = getenv("PMI_RANK");
    if (rank && strcmp(rank, "0") != 0)
        return 0;
    return onnx_export_run_dir(spec, dir);
}
