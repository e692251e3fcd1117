/* spec_names.c — the spelling of every enumerated spec value, shared by
 * the parser (to match and to list alternatives in errors), the summary,
 * the weight-file keys and the JSON writer. */
#include "jobspec/spec_internal.h"

#include <string.h>

const char *const spec_layer_type_names[LAYER_TYPE_COUNT] = {
    "dense", "conv2d", "maxpool2d", "avgpool2d", "dropout", "flatten", "batchnorm",
    "relu",  "sigmoid", "tanh",     "softmax",   "add",     "concat",
    "embedding", "lstm", "gru", "bidirectional", "conv1d", "maxpool1d", "avgpool1d",
    "global_maxpool1d", "global_avgpool1d",
    "layer_norm", "positional_embedding", "sinusoidal_position", "multi_head_attention",
};
const char *const spec_activation_names[SPEC_ACTIVATION_COUNT] = {
    "none", "relu", "sigmoid", "tanh", "softmax", "gelu", "gelu_exact"};
const char *const spec_loss_names[4] = {"categorical_crossentropy", "binary_crossentropy",
                                        "mse", "categorical_hinge"};
const char *const spec_metric_names[3] = {"accuracy", "mse", "mae"};
/* PyDTNN's spellings (its --loss_func and --metrics) and ours; a table
 * ends with a NULL alias. PyDTNN's categorical_ and regression_ error
 * metrics both compare the model's output with the targets, as ours do. */
const spec_alias spec_loss_aliases[] = {
    {"categorical_cross_entropy", "categorical_crossentropy"},
    {"binary_cross_entropy", "binary_crossentropy"},
    {NULL, NULL},
};
const spec_alias spec_metric_aliases[] = {
    {"categorical_accuracy", "accuracy"}, {"categorical_mse", "mse"},
    {"categorical_mae", "mae"},           {"regression_mse", "mse"},
    {"regression_mae", "mae"},            {NULL, NULL},
};

const char *spec_alias_resolve(const char *name, const spec_alias *table)
{
    for (const spec_alias *a = table; a->alias; a++)
        if (strcmp(name, a->alias) == 0)
            return a->name;
    return name;
}

const char *const spec_optimizer_names[5] = {"sgd", "rmsprop", "adam", "nadam", "adamw"};
const char *const spec_schedule_names[6] = {"warm_up", "early_stopping",
                                            "reduce_lr_on_plateau",
                                            "reduce_lr_every_nepochs", "model_checkpoint",
                                            "cosine"};
const char *const spec_trainer_names[9] = {"single",  "allreduce", "averaging",
                                           "ensemble", "downpour", "adag",
                                           "dynsgd",  "aeasgd",    "eamsgd"};
const char *const spec_data_format_names[7] = {"idx",       "cifar10", "csv", "synthetic",
                                                "npz",       "ctf",     "text"};
const char *const spec_scaling_names[3] = {"unit", "standard", "none"};
const char *const spec_padding_names[3] = {"valid", "same", "causal"};

const char *spec_layer_type_name(spec_layer_type t) { return spec_layer_type_names[t]; }
const char *spec_activation_name(spec_activation a) { return spec_activation_names[a]; }
const char *spec_loss_name(spec_loss l) { return spec_loss_names[l]; }
const char *spec_metric_name(spec_metric m) { return spec_metric_names[m]; }
const char *spec_optimizer_name_str(spec_optimizer_name o) { return spec_optimizer_names[o]; }
const char *spec_schedule_name(spec_schedule_kind k) { return spec_schedule_names[k]; }
const char *spec_trainer_name(spec_trainer t) { return spec_trainer_names[t]; }
const char *spec_data_format_name(spec_data_format f) { return spec_data_format_names[f]; }
