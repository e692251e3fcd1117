/* spec_presets.c — the named model presets, expanded into ordinary layers
 * so everything downstream (summary, weights keys, the engine) sees one
 * representation. The last dense layer has data.num_classes units. */
#include <stdlib.h>
#include <string.h>

#include "jobspec/spec_internal.h"

typedef struct preset {
    const char *name;
    const char *layers; /* the preset's layers as spec JSON; CLASSES is replaced */
} preset;

/* Presets are written in the spec language itself and parsed like a user's
 * model, so they can never disagree with the parser. */
static const preset presets[] = {
    {"mlp", "[{\"type\":\"flatten\"},"
            "{\"type\":\"dense\",\"units\":128,\"activation\":\"relu\"},"
            "{\"type\":\"dense\",\"units\":CLASSES,\"activation\":\"softmax\"}]"},
    /* PyDTNN's SimpleCNN. */
    {"simplecnn",
     "[{\"type\":\"conv2d\",\"filters\":4,\"kernel\":3,\"padding\":\"same\",\"activation\":\"relu\"},"
     "{\"type\":\"conv2d\",\"filters\":4,\"kernel\":3,\"padding\":\"same\",\"activation\":\"relu\"},"
     "{\"type\":\"maxpool2d\",\"pool\":2},"
     "{\"type\":\"flatten\"},"
     "{\"type\":\"dense\",\"units\":128,\"activation\":\"relu\"},"
     "{\"type\":\"dropout\",\"rate\":0.5},"
     "{\"type\":\"dense\",\"units\":CLASSES,\"activation\":\"softmax\"}]"},
    /* The TensorFlow tutorial's MNIST convnet. */
    {"convnet",
     "[{\"type\":\"conv2d\",\"filters\":32,\"kernel\":5,\"padding\":\"same\",\"activation\":\"relu\"},"
     "{\"type\":\"maxpool2d\",\"pool\":2},"
     "{\"type\":\"conv2d\",\"filters\":64,\"kernel\":5,\"padding\":\"same\",\"activation\":\"relu\"},"
     "{\"type\":\"maxpool2d\",\"pool\":2},"
     "{\"type\":\"flatten\"},"
     "{\"type\":\"dense\",\"units\":1024,\"activation\":\"relu\"},"
     "{\"type\":\"dropout\",\"rate\":0.4},"
     "{\"type\":\"dense\",\"units\":CLASSES,\"activation\":\"softmax\"}]"},
};

static char *substitute_classes(const char *text, int classes)
{
    const char *at = strstr(text, "CLASSES");
    size_t len = strlen(text) + 16;
    char *out = malloc(len);
    if (!out)
        return NULL;
    snprintf(out, len, "%.*s%d%s", (int)(at - text), text, classes, at + strlen("CLASSES"));
    return out;
}

bool spec_preset_expand(const char *name, const char *path, job_spec *spec, spec_error *err)
{
    const preset *p = NULL;
    const char *names[sizeof presets / sizeof *presets];
    int n = (int)(sizeof presets / sizeof *presets);
    for (int i = 0; i < n; i++) {
        names[i] = presets[i].name;
        if (strcmp(name, presets[i].name) == 0)
            p = &presets[i];
    }
    int unused;
    if (!p)
        return spec_match_enum(name, path, names, n, "model preset", &unused, err);
    char *text = substitute_classes(p->layers, spec->data.num_classes);
    if (!text)
        return spec_fail(err, path, "out of memory");
    json_error_t jerr;
    json_t *layers = json_loads(text, 0, &jerr);
    free(text);
    json_t *input = json_array();
    for (int i = 0; input && i < spec->input.rank; i++)
        json_array_append_new(input, json_integer(spec->input.dim[i]));
    json_t *model = layers && input ? json_pack("{s:o,s:o}", "layers", layers, "input", input)
                                    : NULL;
    if (!model)
        return spec_fail(err, path, "internal error: preset %s does not parse", name);
    bool ok = spec_parse_model(model, spec, err);
    json_decref(model);
    if (ok && !(spec->preset = strdup(name)))
        ok = spec_fail(err, path, "out of memory");
    return ok;
}
