/* spec_hparams.c — a job's key hyperparameters (spec_hparams.h). */
#include "jobspec/spec_hparams.h"

static const char *spec_hparams_model(const job_spec *spec)
{
    if (spec->preset)
        return spec->preset;
    return spec->model_file ? "onnx" : "custom";
}

json_t *spec_hparams(const job_spec *spec)
{
    const spec_training *t = &spec->training;
    if (spec->task == TASK_PREDICT)
        return json_pack("{s:s}", "model", spec_hparams_model(spec));
    return json_pack("{s:s, s:s, s:f, s:i, s:i}", "model", spec_hparams_model(spec),
                     "optimizer", spec_optimizer_name_str(t->optimizer.name), "lr",
                     t->optimizer.learning_rate, "batch_size", t->batch_size, "epochs",
                     t->epochs);
}

char *spec_hparams_text(const job_spec *spec)
{
    json_t *o = spec_hparams(spec);
    char *text = o ? json_dumps(o, JSON_COMPACT | JSON_REAL_PRECISION(9)) : NULL;
    json_decref(o);
    return text;
}
