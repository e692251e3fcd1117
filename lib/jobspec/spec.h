/* spec.h — the job spec: the one language the engine, the daemon and the
 * client share. A job is plain JSON (see schema/job.schema.json); this module
 * parses it, validates every field against its JSON path, fills defaults,
 * expands model presets and infers every layer's output shape, so a bad job
 * is refused with the same one-line message wherever it is submitted.
 *
 * Ownership: spec_parse*() return a heap job_spec the caller frees with
 * spec_free(); every string inside belongs to it. */
#ifndef PUNCH_SPEC_H
#define PUNCH_SPEC_H

#include <stdbool.h>
#include <stddef.h>
#include <stdio.h>

#include <jansson.h>

#define SPEC_MAX_LAYERS 1024 /* densenet121_cifar10 has 424 */
#define SPEC_MAX_INPUTS 8
#define SPEC_MAX_SCHEDULES 8
#define SPEC_MAX_METRICS 4

/* An error names the JSON path of the offending field ("training.epochs")
 * and says what was expected. spec_error_str() joins them as
 * "training.epochs: must be >= 1, got -3". The message has room for the
 * longest we write (every model preset, every key of a section), so none is
 * cut; SPEC_ERROR_STR_MAX holds the joined text. */
#define SPEC_MESSAGE_MAX 2048
#define SPEC_ERROR_STR_MAX (160 + 2 + SPEC_MESSAGE_MAX)
typedef struct spec_error {
    char path[160];
    char message[SPEC_MESSAGE_MAX];
} spec_error;

const char *spec_error_str(const spec_error *err, char *buf, size_t len);

/* A tensor shape without the batch dimension: rank 1 ({features}), rank 3
 * ({channels, height, width}) or rank 2, a sequence ({steps, features}):
 * steps is data.max_length, the longest sequence a batch may hold; each
 * sample has its own length (<= steps) and its steps from that length on
 * are padding (docs/sequences.md: padding holds zeros in every activation
 * and every gradient, and no loss, metric or reduction over time reads
 * it). A model input of token ids is a sequence of 1 feature, the id as a
 * float (exact below 2^24), with job_spec.input_tokens = the vocabulary. */
typedef struct spec_shape {
    int rank;
    int dim[3];
} spec_shape;

long spec_shape_size(const spec_shape *s);

typedef enum spec_layer_type {
    LAYER_DENSE,
    LAYER_CONV2D,
    LAYER_MAXPOOL2D,
    LAYER_AVGPOOL2D,
    LAYER_DROPOUT,
    LAYER_FLATTEN,
    LAYER_BATCHNORM,
    LAYER_RELU,
    LAYER_SIGMOID,
    LAYER_TANH,
    LAYER_SOFTMAX,
    LAYER_ADD,    /* residual: element-wise sum of its inputs */
    LAYER_CONCAT, /* channel concatenation of its inputs */
    /* Sequence layers: on {steps, features} inputs (Keras's names). */
    LAYER_EMBEDDING,        /* token ids {T, 1} -> {T, output_dim} */
    LAYER_LSTM,             /* {T, F} -> {T, units} or {units} (the last real step) */
    LAYER_GRU,              /* likewise; reset_after as Keras and cuDNN */
    LAYER_BIDIRECTIONAL,    /* an lstm or gru both ways, merged by merge_mode */
    LAYER_CONV1D,           /* {T, F} -> {T', filters}, channels last */
    LAYER_MAXPOOL1D,        /* {T, F} -> {T', F} */
    LAYER_AVGPOOL1D,
    LAYER_GLOBAL_MAXPOOL1D, /* {T, F} -> {F} over the real steps */
    LAYER_GLOBAL_AVGPOOL1D,
    /* Transformers (docs/transformers.md). */
    LAYER_LAYER_NORM,           /* per step (or per sample) over the features */
    LAYER_POSITIONAL_EMBEDDING, /* {T, F} + a learned {max_length, F} table */
    LAYER_SINUSOIDAL_POSITION,  /* {T, F} + the fixed sine/cosine table */
    LAYER_MULTI_HEAD_ATTENTION, /* {T, F} (query; [q, kv] for cross-attention) -> {T, F} */
    LAYER_TYPE_COUNT
} spec_layer_type;

typedef enum spec_activation {
    ACT_NONE,
    ACT_RELU,
    ACT_SIGMOID,
    ACT_TANH,
    ACT_SOFTMAX,
    ACT_GELU,       /* GPT-2's tanh approximation */
    ACT_GELU_EXACT, /* x * Phi(x), with erf */
} spec_activation;

#define SPEC_ACTIVATION_COUNT 7

/* causal: conv1d only; pads kernel-1 dilated steps before, none after. */
typedef enum spec_padding { PAD_VALID, PAD_SAME, PAD_CAUSAL } spec_padding;

/* bidirectional: how the two directions' outputs combine. */
typedef enum spec_merge_mode { MERGE_CONCAT, MERGE_SUM, MERGE_AVE, MERGE_MUL } spec_merge_mode;

typedef struct spec_layer {
    spec_layer_type type;
    spec_activation activation; /* fused into dense/conv2d; ACT_NONE otherwise */
    int units;                  /* dense */
    int filters;                /* conv2d */
    int kernel[2];              /* conv2d (kh, kw); pooling window (ph, pw) */
    int stride[2];              /* conv2d default 1; pooling default = window */
    int dilation[2];            /* conv2d, default 1 */
    int groups;                 /* conv2d, default 1: channels and filters split into this
                                 * many independent groups (= channels: depthwise) */
    spec_padding padding;       /* conv2d, pooling; default valid */
    int pad[2];                 /* resolved top/left padding (same: computed) */
    bool use_bias;              /* dense, conv2d; default true */
    float rate;                 /* dropout, in [0, 1) */
    float momentum;             /* batchnorm running-stat momentum, default 0.9 */
    float epsilon;              /* batchnorm, default 1e-5 */
    /* Sequence layers. For conv1d and the 1-d pools, kernel[0], stride[0],
     * dilation[0] and pad[0] hold the window along time (kernel[1] etc. 1). */
    int output_dim;             /* embedding */
    int input_dim;              /* embedding: vocabulary, default job_spec.input_tokens */
    bool mask_zero;             /* embedding: id 0 is padding (a sample's length ends
                                 * before its first trailing run of zeros) */
    bool return_sequences;      /* lstm, gru, bidirectional: default false = the last
                                 * real step of each sample, {units} */
    bool go_backwards;          /* lstm, gru: run from the last real step to the first */
    bool reset_after;           /* gru: default true (Keras 2+, cuDNN) */
    spec_layer_type rnn;        /* bidirectional: LAYER_LSTM or LAYER_GRU (its "layer") */
    spec_merge_mode merge_mode; /* bidirectional, default concat */
    /* Transformers. epsilon (above) is layer_norm's too, default 1e-5;
     * rate is multi_head_attention's "dropout" on the attention weights;
     * use_bias its projections' biases (default true). */
    int heads;                  /* multi_head_attention */
    int key_dim;                /* multi_head_attention: per head, default F / heads */
    bool causal;                /* multi_head_attention: step t attends to steps <= t */
    int max_length;             /* positional_embedding: rows of its table, default the
                                 * input's steps */
    int tie_embedding;          /* dense: index of an embedding layer whose table {V, E}
                                 * it uses transposed as its weight (y = x E^T: GPT-2's
                                 * tied output), its gradient added to the table's;
                                 * read only when `tied` */
    bool tied;                  /* dense: "tie_embedding" given */
    /* Indices of the layers feeding this one; -1 is the model input. Every
     * layer but add/concat has exactly one: the previous layer. */
    int inputs[SPEC_MAX_INPUTS];
    int n_inputs;
    /* Resolved by validation. */
    spec_shape in_shape;  /* shape of inputs[0] */
    spec_shape out_shape;
    long n_params;        /* trainable parameters (weights + biases; gamma + beta) */
    long n_state;         /* non-trainable state (batchnorm running mean/var) */
    /* lstm, gru, bidirectional fed by the model's token ids: V, each id read
     * as a one-hot row of V features (kernel {V, G}, counted so) without
     * ever being spread out; 0 otherwise. */
    int token_vocab;
} spec_layer;

typedef enum spec_data_format {
    DATA_IDX,
    DATA_CIFAR10,
    DATA_CSV,
    DATA_SYNTHETIC,
    DATA_NPZ,       /* numpy .npz: x_train/y_train, x_test/y_test or x/y;
                       sequences: x int [N, T] token ids or float [N, T, F],
                       optional len_* [N], y [N] or [N, T] (per step) */
    DATA_CTF,       /* CNTK Text Format: "SEQID |name idx:val ..." lines */
    DATA_TEXT,      /* UTF-8 text cut into block_size windows (language model) */
} spec_data_format;

typedef enum spec_tokenizer { TOKENIZER_BYTE, TOKENIZER_CHAR } spec_tokenizer;

typedef enum spec_scaling {
    SCALE_UNIT,     /* divide by the maximum raw value (255 for bytes): [0, 1] */
    SCALE_STANDARD, /* zero mean, unit variance per feature, from the train set */
    SCALE_NONE,
} spec_scaling;

/* Augmentation of training samples, PyDTNN's --flip_images and
 * --crop_images: drawn per sample per epoch from training.seed, never
 * applied to validation or test data. Images only ({C, H, W} samples). */
typedef struct spec_augment {
    double flip_prob;  /* mirror left-right with this probability; 0 = off */
    int crop_size;     /* keep a random crop_size x crop_size window in place,
                          zero the rest; 0 = off */
    double crop_prob;  /* probability of cropping a sample */
} spec_augment;

enum { SPEC_HEADER_NO = 0, SPEC_HEADER_YES = 1, SPEC_HEADER_AUTO = 2 };

typedef struct spec_data {
    spec_data_format format;
    char *train;      /* dataset names relative to a dataset root; NULL = none */
    char *test;
    char *validation; /* explicit validation set; else validation_split */
    double validation_split; /* fraction of train held out, [0, 1) */
    spec_scaling scaling;
    bool shuffle;            /* reshuffle each epoch from the seed; default true */
    long train_samples;      /* use only the first N train samples (0 = all) */
    long test_samples;       /* likewise for test */
    int num_classes;         /* default 10 */
    /* csv */
    int label_column;        /* default 0 */
    /* CSV: the first line is a header (SPEC_HEADER_YES), data
     * (SPEC_HEADER_NO), or a header when a field of it is not a number
     * (SPEC_HEADER_AUTO, the default: the rule uploads are checked by). */
    int header;
    /* synthetic: random inputs of model.input shape and random labels */
    long synthetic_train;    /* default 60000 */
    long synthetic_test;     /* default 10000 */
    /* Set from training.loss == mse: float y in an npz file are regression
     * targets (num_classes of them per record), not class ids. */
    bool float_targets;
    /* Set from model.input {"tokens": V}: V, so that the loaders check
     * every token id against it; 0 for float inputs. */
    int input_tokens;
    spec_augment augment;    /* data.augment; all zero = none */
    /* Sequences. */
    int max_length;          /* steps of a sequence input (longer ones are cut);
                                default 256 */
    bool bucket_by_length;   /* batches of similar lengths, default true */
    bool per_step_labels;    /* a label per step (y [N, T]): the last layer's
                                output is {T, classes}; padding steps excluded
                                from the loss and the metrics */
    char *ctf_features;      /* ctf: the input stream's name, default "x" */
    char *ctf_labels;        /* ctf: the label stream's name, default "y" */
    spec_tokenizer tokenizer;/* text: byte (256 ids, default) or char */
    int block_size;          /* text: window length, default = max_length */
} spec_data;

typedef enum spec_loss {
    LOSS_CATEGORICAL_CROSSENTROPY,
    LOSS_BINARY_CROSSENTROPY,
    LOSS_MSE,
    LOSS_CATEGORICAL_HINGE,  /* Keras's and PyDTNN's, on the last layer's output */
} spec_loss;

typedef enum spec_metric {
    METRIC_ACCURACY,
    METRIC_MSE,
    METRIC_MAE,
} spec_metric;

typedef enum spec_optimizer_name {
    OPT_SGD,
    OPT_RMSPROP,
    OPT_ADAM,
    OPT_NADAM,
    OPT_ADAMW,      /* PyTorch's AdamW: decoupled weight decay */
} spec_optimizer_name;

typedef struct spec_optimizer {
    spec_optimizer_name name;
    double learning_rate; /* sgd 0.01; rmsprop 0.001; adam/nadam 0.001 */
    double momentum;      /* sgd, default 0 */
    bool nesterov;        /* sgd, default false */
    double decay;         /* lr /= (1 + decay * iterations), default 0 */
    double rho;           /* rmsprop, default 0.9 */
    double beta1;         /* adam/nadam, default 0.9 */
    double beta2;         /* adam/nadam, default 0.999 */
    double epsilon;       /* rmsprop/adam/nadam, default 1e-7 */
    double weight_decay;  /* L2 added to the gradient, default 0; adamw: decoupled
                             (p -= lr * wd * p), default 0.01 */
    bool decay_all;       /* adamw: decay every parameter, biases, norms and
                             embeddings too; default false (weight matrices and
                             kernels only) */
} spec_optimizer;

typedef enum spec_schedule_kind {
    SCHED_WARM_UP,
    SCHED_EARLY_STOPPING,
    SCHED_REDUCE_LR_ON_PLATEAU,
    SCHED_REDUCE_LR_EVERY_NEPOCHS,
    SCHED_MODEL_CHECKPOINT,
    SCHED_COSINE,        /* per optimizer step: nanoGPT's warmup + cosine decay */
} spec_schedule_kind;

/* PyDTNN's callbacks with their parameters. */
typedef struct spec_schedule {
    spec_schedule_kind kind;
    int warmup_epochs;   /* warm_up: default 5 */
    double init_lr;      /* warm_up: lr at epoch 0, default lr / 10 */
    char monitor[32];    /* early_stopping, reduce_lr_on_plateau, model_checkpoint:
                            "val_loss" (default), "loss", "val_accuracy", "accuracy" */
    int patience;        /* early_stopping default 10; plateau default 5 */
    double min_delta;    /* early_stopping/plateau, default 0 */
    double factor;       /* plateau / every_nepochs, default 0.1 */
    double min_lr;       /* default 0 */
    int nepochs;         /* reduce_lr_every_nepochs: default 5 */
    int every_epochs;    /* model_checkpoint: default 1 */
    long warmup_steps;   /* cosine: default 0 */
    long decay_steps;    /* cosine: the step where min_lr is reached (counted from
                            step 0, warm-up included); 0 = the run's last step */
} spec_schedule;

typedef enum spec_precision { PRECISION_FP32, PRECISION_BF16 } spec_precision;

typedef struct spec_training {
    int epochs;          /* default 5, >= 1 */
    int batch_size;      /* default 64, >= 1; per worker */
    long steps_per_epoch;/* 0 = a full pass over the (shard of the) train set */
    spec_loss loss;      /* default categorical_crossentropy */
    spec_metric metrics[SPEC_MAX_METRICS];
    int n_metrics;       /* default ["accuracy"] */
    spec_optimizer optimizer;
    spec_schedule schedules[SPEC_MAX_SCHEDULES];
    int n_schedules;
    unsigned long seed;  /* default 1 */
    /* training.init_from: start from these weights instead of random ones
     * (a warm start). init_from_job: {"job": ID}, a finished job of the
     * submitting user, which punchcardd resolves to its weights file in
     * init_from_file ("@PATH", also written as "path" in the stored spec);
     * {"dataset": "@NAME"} an uploaded .safetensors/.npz (resolved the
     * same way), or "@/abs/path" run by hand. NULL: none. */
    char *init_from_job;
    char *init_from_file;
    /* training.init_from.optimizer ("@PATH" of a checkpoints/ckpt.bin):
     * the warm start takes that checkpoint's optimizer state too (momenta,
     * Adam's moments and step). Written by punchcardd for PBT's exploit
     * beside "path"; NULL: the optimizer starts afresh. */
    char *init_optimizer_file;
    int checkpoint_keep; /* model_checkpoint saves kept, newest first; 0 = all;
                            default 1 (with a monitor, the latest is the best) */
    /* PyDTNN's options. */
    long global_batch_size; /* given instead of batch_size: batch_size = it / workers;
                               0 = not given */
    bool evaluate;       /* evaluate the test set before training too (single trainer) */
    char stop_metric[32];/* stop_at_loss: stop once this monitored value ("val_accuracy",
                            ...) reaches stop_threshold; "" = off */
    double stop_threshold;
    bool profile;        /* write profile.json: per-layer times (single trainer) */
    bool nondeterministic;/* "deterministic": false (default true): a GPU may run cuDNN's
                            fastest convolution algorithms, deterministic or not
                            (history.json then says "reproducible": false); the CPU is
                            deterministic either way. Stored negated so a zeroed spec
                            is the reproducible default. */
    long warm_up_batches;/* ramp the rate from lr/N to lr over the first N steps (single
                            trainer); 0 = off */
    double clip_norm;    /* global gradient-norm clipping; 0 = off */
    int grad_accum_steps;/* micro-batches per optimizer step, default 1 */
    /* training.precision: fp32 (default) or bf16 mixed precision (master
     * weights and optimizer state fp32, convolutions in bf16 with fp32
     * accumulation; docs/job-spec.md#mixed-precision). bf16 is refused at
     * parse on a CPU without AVX512_BF16 or AMX (spec_cpu_has_bf16) unless
     * allow_emulation. */
    spec_precision precision;
    bool allow_emulation;
} spec_training;

typedef enum spec_trainer {
    TRAINER_SINGLE,
    TRAINER_ALLREDUCE,
    TRAINER_AVERAGING,
    TRAINER_ENSEMBLE,
    TRAINER_DOWNPOUR,
    TRAINER_ADAG,
    TRAINER_DYNSGD,
    TRAINER_AEASGD,
    TRAINER_EAMSGD,
} spec_trainer;

/* distributed.compression: how the allreduce trainer sends gradients.
 * bf16 rounds each rank's gradient (plus its carried rounding error) to
 * bfloat16 and sums in fp32 (docs/distributed.md). */
typedef enum spec_compression {
    SPEC_COMPRESSION_NONE,
    SPEC_COMPRESSION_BF16,
} spec_compression;

/* Each knob but trainer and workers belongs to the trainers named beside
 * it: a spec that gives one to another trainer is refused
 * (spec_distributed_uses), so nothing is silently ignored. */
typedef struct spec_distributed {
    spec_trainer trainer;      /* default single */
    int workers;               /* default 1 */
    int communication_window;  /* async family; dist-keras's defaults: 12 adag,
                                  32 aeasgd/eamsgd, 5 downpour/dynsgd */
    int sync_every_epochs;     /* averaging, default 1 */
    bool learning_rate_scaling;/* allreduce: lr *= workers, default false */
    double learning_rate;      /* aeasgd/eamsgd: dist-keras's trainer rate eta,
                                  default 0.1 (alpha = rho * eta < 1) */
    double rho;                /* aeasgd/eamsgd elasticity, default 5.0 */
    double momentum;           /* eamsgd, default 0.9 */
    double bucket_mb;          /* allreduce bucket size in MiB, default 4 */
    spec_compression compression; /* allreduce: gradients on the wire, default none */
} spec_distributed;

/* resources.preemptible: unset, a job is preempted only once it has a
 * checkpoint to resume from; true, even without one (it starts over);
 * false, never (where the daemon lets jobs opt out). */
typedef enum spec_preemptible {
    SPEC_PREEMPTIBLE_UNSET,
    SPEC_PREEMPTIBLE_YES,
    SPEC_PREEMPTIBLE_NO,
} spec_preemptible;

typedef struct spec_resources {
    int gpus;                  /* per worker; default 0 */
    int threads_per_worker;    /* default 1 */
    long time_limit_s;         /* 0 = none; default 0 */
    int priority;              /* higher runs first; default 0, range -10..10 */
    spec_preemptible preemptible; /* may a higher-priority job preempt it */
} spec_resources;

/* What a job does: train (the default), or "predict": apply the weights
 * of training.init_from to data.test's inputs (an npz's x_test or x) and
 * write predictions.npy, for input sets too large for one request. */
typedef enum spec_task {
    TASK_TRAIN,
    TASK_PREDICT,
} spec_task;

typedef struct job_spec {
    char *name;                /* default "job" */
    spec_task task;
    char *preset;              /* model preset name if the model was one, else NULL */
    spec_shape input;
    int input_tokens;          /* "input": {"tokens": V}: V; 0 for float inputs */
    spec_layer *layers;
    int n_layers;
    long n_params;             /* total trainable */
    long n_state;              /* total non-trainable */
    spec_data data;
    spec_training training;
    spec_distributed distributed;
    spec_resources resources;
    /* "model": "@/PATH.onnx" (docs/interchange.md): the imported file, whose
     * initializers are the initial weights (and a predict task's weights
     * when there is no init_from); NULL for a model written in the spec. */
    char *model_file;
} job_spec;

/* Parse and validate a job. On error return NULL and fill *err (never
 * crashes, whatever the bytes). */
job_spec *spec_parse(const char *text, size_t len, spec_error *err);
job_spec *spec_parse_json(const json_t *root, spec_error *err);
job_spec *spec_load_file(const char *path, spec_error *err);
/* The spec's text as JSON (size and syntax checked), or NULL with *err;
 * spec_parse_count() says how many texts were parsed in this process (a
 * server's submit parses once, a job's start never). */
json_t *spec_parse_text(const char *text, size_t len, spec_error *err);
unsigned long spec_parse_count(void);
void spec_free(job_spec *spec);

/* The resolved spec (every default filled, presets expanded, shapes inferred;
 * of distributed, only the knobs its trainer uses) as JSON;
 * spec_parse_json(spec_to_json(s)) reproduces s. Caller owns it. */
json_t *spec_to_json(const job_spec *spec);

/* MPI ranks the job needs: workers, plus one parameter server for the
 * asynchronous trainers. */
int spec_ranks_needed(const job_spec *spec);
bool spec_trainer_is_async(spec_trainer t);

/* Whether trainer t uses the knob distributed.<key> ("rho", "bucket_mb",
 * ...); trainer and workers belong to every trainer, unknown keys to none. */
bool spec_distributed_uses(spec_trainer t, const char *key);

/* A Keras-style summary: one row per layer with output shape and parameter
 * count, totals, and the ranks the job needs. */
void spec_print_summary(const job_spec *spec, FILE *out);

/* Check that a dataset name stays under its root: relative, no "..", no
 * empty or hidden components, no backslashes or control bytes. */
bool spec_dataset_name_ok(const char *name, const char **why);

/* Uploaded datasets. A user names one "@NAME" in data.train, data.test or
 * data.validation; punchcardd resolves that at submit to "@PATH", the
 * absolute path of the file, which is what punch-train reads (and what a
 * user running punch-train by hand may write). spec_upload_name_ok: NAME
 * is [A-Za-z0-9._-]{1,64} and does not start with a dot.
 * spec_dataset_ref_kind: what a data.* value is, or SPEC_REF_INVALID with
 * *why. */
typedef enum spec_ref_kind {
    SPEC_REF_INVALID,
    SPEC_REF_ROOT,          /* a name under the dataset roots */
    SPEC_REF_UPLOAD,        /* "@NAME" */
    SPEC_REF_UPLOAD_PATH,   /* "@/absolute/path" */
} spec_ref_kind;
bool spec_upload_name_ok(const char *name, const char **why);
spec_ref_kind spec_dataset_ref_kind(const char *ref, const char **why);

/* Names for messages and file keys ("conv2d", "adam", "allreduce", ...). */
const char *spec_layer_type_name(spec_layer_type t);
const char *spec_activation_name(spec_activation a);
const char *spec_loss_name(spec_loss l);
const char *spec_metric_name(spec_metric m);
const char *spec_optimizer_name_str(spec_optimizer_name o);
const char *spec_schedule_name(spec_schedule_kind k);
const char *spec_trainer_name(spec_trainer t);

/* Floats of optimizer state per parameter (sgd with momentum 1, rmsprop 1,
 * the adam family 2), or -1 for an unknown optimizer: engine/optim keeps
 * them and the daemon's memory estimate counts them. */
int spec_optimizer_slots(const spec_optimizer *o);
const char *spec_data_format_name(spec_data_format f);
const char *spec_precision_name(spec_precision p);
/* Whether this CPU runs bf16 arithmetic natively (AVX512_BF16 or AMX-BF16,
 * with the OS saving AVX-512 state). Test hook: PUNCH_CPU_NO_BF16=1 in the
 * environment makes it say no (tests of the refusal on any machine). */
bool spec_cpu_has_bf16(void);

#endif
