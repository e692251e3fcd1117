/* spec_internal.h — helpers shared by the spec library's files: reading
 * typed JSON fields with their path, and the name tables. Not installed. */
#ifndef PUNCH_SPEC_INTERNAL_H
#define PUNCH_SPEC_INTERNAL_H

#include "jobspec/spec.h"

/* Record an error at `path` (printf-style message) and return false, so
 * parsers can `return spec_fail(...)`. */
bool spec_fail(spec_error *err, const char *path, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));

/* Join a parent path and a key ("training" + "epochs" → "training.epochs";
 * "" + "name" → "name") or an index ("model.layers" + 3 → "model.layers[3]"). */
void spec_path_key(char *out, size_t len, const char *parent, const char *key);
void spec_path_index(char *out, size_t len, const char *parent, size_t index);

/* Fail on any key of `obj` not in the NULL-terminated `allowed` list. */
bool spec_check_keys(const json_t *obj, const char *path, const char *const *allowed,
                     spec_error *err);

/* "a, b, c" of names[0..n) into buf; a JSON value's type for a message
 * ("a string", "an array"). */
void spec_join_names(char *buf, size_t len, const char *const *names, int n);
const char *spec_json_type_name(const json_t *v);

/* obj's member key, NULL when absent or null. */
const json_t *spec_field(const json_t *obj, const char *key);

/* The training section (spec_training.c), and what of it depends on the
 * trainer, read after the distributed section. */
bool spec_parse_training(const json_t *t, job_spec *spec, spec_error *err);
bool spec_resolve_training(const json_t *t, job_spec *spec, spec_error *err);

/* Typed field readers: a missing (or null) field keeps *out (the default);
 * a present one must have the right type and lie in [min, max]. */
bool spec_get_int(const json_t *obj, const char *path, const char *key, long min,
                  long max, long *out, spec_error *err);
bool spec_get_double(const json_t *obj, const char *path, const char *key, double min,
                     double max, bool min_exclusive, bool max_exclusive, double *out,
                     spec_error *err);
bool spec_get_bool(const json_t *obj, const char *path, const char *key, bool *out,
                   spec_error *err);
/* *out is a borrowed pointer into obj; NULL stays NULL when absent. */
bool spec_get_string(const json_t *obj, const char *path, const char *key,
                     const char **out, spec_error *err);
/* The same, and the field's path into p when present, for a caller that
 * checks the value further and names the field in its error. */
bool spec_get_string_at(const json_t *obj, const char *path, const char *key,
                        const char **out, char *p, size_t plen, spec_error *err);
/* A string field that must be one of names[0..n); *out is its index. */
bool spec_get_enum(const json_t *obj, const char *path, const char *key,
                   const char *const *names, int n, const char *what, int *out,
                   spec_error *err);
/* Match a string against names[0..n), or fail listing them. */
bool spec_match_enum(const char *value, const char *path, const char *const *names,
                     int n, const char *what, int *out, spec_error *err);
/* An int or an [a, b] pair of ints in [min, max]. */
bool spec_get_pair(const json_t *obj, const char *path, const char *key, long min,
                   long max, int out[2], spec_error *err);

extern const char *const spec_layer_type_names[LAYER_TYPE_COUNT];
extern const char *const spec_activation_names[SPEC_ACTIVATION_COUNT];
extern const char *const spec_loss_names[4];
extern const char *const spec_metric_names[3];
extern const char *const spec_optimizer_names[5];

/* Another system's name for one of ours (PyDTNN's loss and metric names). */
typedef struct spec_alias {
    const char *alias, *name;
} spec_alias;
extern const spec_alias spec_loss_aliases[];
extern const spec_alias spec_metric_aliases[];
/* Our name for `name` when the table has it as an alias, else `name`. */
const char *spec_alias_resolve(const char *name, const spec_alias *table);
extern const char *const spec_schedule_names[6];
extern const char *const spec_trainer_names[9];
extern const char *const spec_data_format_names[7];
extern const char *const spec_scaling_names[3];
extern const char *const spec_padding_names[3];

/* Section parsers (spec.c drives them in order: data, model, training,
 * distributed, resources). */
bool spec_parse_model(const json_t *model, job_spec *spec, spec_error *err);
/* Preset `name` as a model object {"input", "layers"} in *model (caller
 * owns), for spec_parse_model to parse as if written out; `knobs` is the
 * model object holding the preset's knobs beside "preset" (NULL for the
 * plain string form). Reads the spec's model input (parsed before). */
bool spec_preset_model(const char *name, const char *path, const json_t *knobs,
                       const job_spec *spec, json_t **model, spec_error *err);
/* Whether `key` is a preset knob ("n_layer", ...) the model object may hold. */
bool spec_preset_is_knob(const char *key);
bool spec_infer_shapes(job_spec *spec, spec_error *err);

/* Imported models (spec_import.c): whether model is "@...MODEL.onnx";
 * import it as our model object {"input", "layers", "imported"} in *layers
 * (caller owns) for spec_parse_model to parse; record model.imported, the
 * file the initial weights come from. */
bool spec_model_is_import(const json_t *model);
bool spec_import_model(const json_t *model, json_t **layers, spec_error *err);
bool spec_model_set_file(const char *ref, const char *path, job_spec *spec, spec_error *err);
/* "model": {"keras": CONFIG} (keras.c): Keras's to_json() as our model
 * object {"input", "layers"} in *model (caller owns). */
bool spec_keras_model(const json_t *keras, json_t **model, spec_error *err);

#endif
