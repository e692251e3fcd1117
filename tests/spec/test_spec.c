/* test_spec.c — the job-spec library: defaults, presets, shape inference,
 * the resolved-JSON round trip, and every class of error naming its field. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "jobspec/spec.h"

static job_spec *parse(const char *text, spec_error *err)
{
    return spec_parse(text, strlen(text), err);
}

/* A minimal valid job with `extra` spliced in as further top-level keys or
 * replacing sections: callers pass complete sections. */
#define DATA "\"data\":{\"train\":\"fashion-mnist/train\"}"

static void test_defaults(void **state)
{
    (void)state;
    spec_error err;
    job_spec *s = parse("{\"model\":\"mlp\"," DATA "}", &err);
    assert_non_null(s);
    assert_string_equal(s->name, "job");
    assert_string_equal(s->preset, "mlp");
    assert_int_equal(s->training.epochs, 5);
    assert_int_equal(s->training.batch_size, 64);
    assert_int_equal(s->training.optimizer.name, OPT_ADAM);
    assert_true(s->training.optimizer.learning_rate == 0.001);
    assert_int_equal(s->training.loss, LOSS_CATEGORICAL_CROSSENTROPY);
    assert_int_equal(s->training.n_metrics, 1);
    assert_int_equal(s->training.metrics[0], METRIC_ACCURACY);
    assert_int_equal(s->distributed.trainer, TRAINER_SINGLE);
    assert_int_equal(s->distributed.workers, 1);
    assert_int_equal(spec_ranks_needed(s), 1);
    assert_int_equal(s->data.num_classes, 10);
    assert_false(s->data.float_targets);
    assert_int_equal(s->input.rank, 3);
    assert_int_equal(s->input.dim[1], 28);
    spec_free(s);
}

/* A regression: one output under mse, float y read as targets. */
static void test_regression(void **state)
{
    (void)state;
    spec_error err;
    job_spec *s = parse("{\"model\":{\"input\":[8],\"layers\":[{\"type\":\"dense\","
                        "\"units\":1}]},\"data\":{\"format\":\"npz\",\"train\":\"t\","
                        "\"num_classes\":1},\"training\":{\"loss\":\"mse\","
                        "\"metrics\":[\"mae\"]}}", &err);
    assert_non_null(s);
    assert_int_equal(s->data.num_classes, 1);
    assert_true(s->data.float_targets);
    spec_free(s);
}

static void test_presets(void **state)
{
    (void)state;
    static const struct { const char *name; long params; int layers; } cases[] = {
        {"mlp", 784L * 128 + 128 + 128 * 10 + 10, 3},
        {"simplecnn", 40 + 148 + 784L * 128 + 128 + 1290, 7},
        {"convnet", 3274634, 8},
    };
    for (size_t i = 0; i < sizeof cases / sizeof *cases; i++) {
        char text[256];
        snprintf(text, sizeof text, "{\"model\":\"%s\"," DATA "}", cases[i].name);
        spec_error err;
        job_spec *s = parse(text, &err);
        assert_non_null(s);
        assert_int_equal(s->n_params, cases[i].params);
        assert_int_equal(s->n_layers, cases[i].layers);
        assert_int_equal(s->layers[s->n_layers - 1].out_shape.dim[0], 10);
        spec_free(s);
    }
}

/* PyDTNN's zoo by its names: layer count, the features reaching the
 * classifier, and the parameter counts. PyDTNN prints 15,245,130 for
 * vgg16_cifar10 and 101,958 for simplecnn on MNIST; the others follow
 * from its layer lists (its convolutions and dense layers have biases, but
 * MobileNet's convolutions have none; its depthwise ones have 9 weights a
 * channel). */
static void test_zoo_presets(void **state)
{
    (void)state;
    static const struct {
        const char *name, *input;
        int classes, layers;
        long features, params, nontrainable;
    } cases[] = {
        {"simplemlp", "[1,28,28]", 10, 5, 784, 932362, 0},
        {"simplecnn_pydtnn", "[1,28,28]", 10, 7, 784, 101958, 0},
        {"alexnet_cifar10", "[3,32,32]", 10, 14, 1024, 23272266, 0},
        {"alexnet_imagenet", "[3,224,224]", 1000, 14, 6400, 50844008, 0},
        {"vgg11_cifar10", "[3,32,32]", 10, 19, 512, 9750922, 0},
        {"vgg11bn_cifar10", "[3,32,32]", 10, 39, 512, 9758474, 7552},
        {"vgg16_cifar10", "[3,32,32]", 10, 24, 512, 15245130, 0},
        {"vgg16bn_cifar10", "[3,32,32]", 10, 54, 512, 15255626, 10496},
        {"vgg16_imagenet", "[3,224,224]", 1000, 24, 25088, 138357544, 0},
        {"resnet20_cifar10", "[3,32,32]", 10, 75, 64, 277546, 1696},
        {"resnet32_cifar10", "[3,32,32]", 10, 117, 64, 472426, 2592},
        {"resnet56_cifar10", "[3,32,32]", 10, 203, 64, 862490, 4416},
        {"resnet18_imagenet", "[3,224,224]", 1000, 67, 512, 11686632, 9600},
        {"resnet34_imagenet", "[3,224,224]", 1000, 123, 512, 21798504, 17024},
        {"resnet50_imagenet", "[3,224,224]", 1000, 173, 2048, 25583464, 52992},
        {"densenet121_cifar10", "[3,32,32]", 10, 424, 1024, 6956298, 83520},
        {"googlenet_cifar10", "[3,32,32]", 10, 218, 1024, 7217898, 17856},
        {"mobilenetv1_cifar10", "[3,32,32]", 10, 82, 1024, 4266762, 21824},
    };
    for (size_t i = 0; i < sizeof cases / sizeof *cases; i++) {
        char text[256];
        snprintf(text, sizeof text,
                 "{\"model\":{\"preset\":\"%s\",\"input\":%s},"
                 "\"data\":{\"format\":\"synthetic\",\"num_classes\":%d}}",
                 cases[i].name, cases[i].input, cases[i].classes);
        spec_error err;
        job_spec *s = parse(text, &err);
        if (!s) {
            char msg[600];
            fail_msg("%s: %s", cases[i].name, spec_error_str(&err, msg, sizeof msg));
        }
        assert_string_equal(s->preset, cases[i].name);
        assert_int_equal(s->n_layers, cases[i].layers);
        assert_int_equal(s->n_params, cases[i].params);
        assert_int_equal(s->n_state, cases[i].nontrainable);
        const spec_layer *out = &s->layers[s->n_layers - 1];
        assert_int_equal(out->out_shape.dim[0], cases[i].classes);
        assert_int_equal(out->activation, ACT_SOFTMAX);
        int flatten = s->n_layers - 1;
        while (flatten >= 0 && s->layers[flatten].type != LAYER_FLATTEN)
            flatten--;
        assert_true(flatten >= 0);
        assert_int_equal(s->layers[flatten].out_shape.dim[0], cases[i].features);
        spec_free(s);
    }
}

/* PyDTNN's simplecnn has no ReLU after its convolutions; ours keeps it.
 * The string form takes the input shape from the data (IDX: 1x28x28). */
static void test_zoo_simplecnn_names(void **state)
{
    (void)state;
    spec_error err;
    job_spec *ours = parse("{\"model\":\"simplecnn\"," DATA "}", &err);
    job_spec *theirs = parse("{\"model\":\"simplecnn_pydtnn\"," DATA "}", &err);
    assert_non_null(ours);
    assert_non_null(theirs);
    for (int i = 0; i < 2; i++) {
        assert_int_equal(ours->layers[i].activation, ACT_RELU);
        assert_int_equal(theirs->layers[i].type, LAYER_CONV2D);
        assert_int_equal(theirs->layers[i].activation, ACT_NONE);
    }
    assert_int_equal(theirs->n_params, 101958);
    spec_free(ours);
    spec_free(theirs);
    job_spec *s = parse("{\"model\":\"vgg16_cifar\"," DATA "}", &err);
    assert_null(s);
    assert_non_null(strstr(err.message, "vgg16_cifar10"));
}

static void test_shapes(void **state)
{
    (void)state;
    spec_error err;
    job_spec *s = parse("{\"model\":{\"input\":[3,32,32],\"layers\":["
                        "{\"type\":\"conv2d\",\"filters\":6,\"kernel\":5,\"stride\":2},"
                        "{\"type\":\"conv2d\",\"filters\":6,\"kernel\":3,\"padding\":\"same\","
                        "\"dilation\":2},"
                        "{\"type\":\"add\",\"inputs\":[0,1]},"
                        "{\"type\":\"concat\",\"inputs\":[2,0]},"
                        "{\"type\":\"avgpool2d\",\"pool\":[2,3]},"
                        "{\"type\":\"batchnorm\"},"
                        "{\"type\":\"flatten\"},{\"type\":\"dense\",\"units\":10}]},"
                        "\"data\":{\"format\":\"cifar10\",\"train\":\"cifar-10\"}}",
                        &err);
    char msg[600];
    if (!s)
        fail_msg("%s", spec_error_str(&err, msg, sizeof msg));
    /* valid 5x5 stride 2 on 32: (32-5)/2+1 = 14 */
    assert_int_equal(s->layers[0].out_shape.dim[1], 14);
    assert_int_equal(s->layers[1].out_shape.dim[1], 14);
    assert_int_equal(s->layers[1].pad[0], 2);
    assert_int_equal(s->layers[3].out_shape.dim[0], 12);
    /* pool [2,3] with default stride = window: 14/2=7, (14-3)/3+1=4 */
    assert_int_equal(s->layers[4].out_shape.dim[1], 7);
    assert_int_equal(s->layers[4].out_shape.dim[2], 4);
    assert_int_equal(s->layers[5].n_params, 24);
    assert_int_equal(s->layers[5].n_state, 24);
    assert_int_equal(s->layers[6].out_shape.dim[0], 12 * 7 * 4);
    assert_int_equal(s->layers[0].n_params, 6 * 3 * 25 + 6);
    spec_free(s);
}

/* The resolved spec of `a` parses back to a spec whose resolved spec is
 * the same text. */
static void assert_roundtrip(const job_spec *a, const char *what)
{
    json_t *ja = spec_to_json(a);
    assert_non_null(ja);
    char *text = json_dumps(ja, JSON_SORT_KEYS);
    spec_error err;
    job_spec *b = parse(text, &err);
    char msg[600];
    if (!b)
        fail_msg("%s: %s", what, spec_error_str(&err, msg, sizeof msg));
    json_t *jb = spec_to_json(b);
    char *text2 = json_dumps(jb, JSON_SORT_KEYS);
    assert_string_equal(text, text2);
    assert_int_equal(a->n_params, b->n_params);
    free(text);
    free(text2);
    json_decref(ja);
    json_decref(jb);
    spec_free(b);
}

static void test_roundtrip(void **state)
{
    (void)state;
    const char *files[] = {"fmnist-mlp.json", "fmnist-convnet.json", "residual-cnn.json",
                           "fmnist-mlp-adag.json"};
    const char *root = getenv("PUNCH_SOURCE_ROOT");
    assert_non_null(root);
    for (size_t i = 0; i < sizeof files / sizeof *files; i++) {
        char path[1024];
        snprintf(path, sizeof path, "%s/etc/jobs/%s", root, files[i]);
        spec_error err;
        job_spec *a = spec_load_file(path, &err);
        assert_non_null(a);
        assert_roundtrip(a, files[i]);
        spec_free(a);
    }
}

/* distributed.learning_rate is dist-keras's trainer rate (default 0.1)
 * for the elastic trainers; each knob reaches the trainers that use it,
 * and the resolved spec names only those, so it parses again. */
static void test_distributed_knobs(void **state)
{
    (void)state;
    spec_error err;
    job_spec *s = parse("{\"model\":\"mlp\"," DATA ",\"distributed\":{\"trainer\":\"aeasgd\","
                        "\"workers\":2}}", &err);
    assert_non_null(s);
    assert_true(s->distributed.learning_rate == 0.1);
    assert_true(s->distributed.rho == 5.0);
    assert_int_equal(s->distributed.communication_window, 32);
    json_t *j = spec_to_json(s);
    json_t *d = json_object_get(j, "distributed");
    assert_true(json_real_value(json_object_get(d, "learning_rate")) == 0.1);
    assert_non_null(json_object_get(d, "rho"));
    assert_null(json_object_get(d, "momentum"));
    assert_null(json_object_get(d, "bucket_mb"));
    assert_null(json_object_get(d, "learning_rate_scaling"));
    json_decref(j);
    spec_free(s);
    s = parse("{\"model\":\"mlp\"," DATA ",\"distributed\":{\"trainer\":\"eamsgd\","
              "\"workers\":2,\"learning_rate\":0.05,\"rho\":10,\"momentum\":0.5,"
              "\"communication_window\":8}}", &err);
    assert_non_null(s);
    assert_true(s->distributed.learning_rate == 0.05);
    assert_true(s->distributed.rho == 10.0);
    assert_true(s->distributed.momentum == 0.5);
    spec_free(s);
    /* null counts as absent, as for every field. */
    s = parse("{\"model\":\"mlp\"," DATA ",\"distributed\":{\"trainer\":\"downpour\","
              "\"workers\":2,\"rho\":null}}", &err);
    assert_non_null(s);
    spec_free(s);
    assert_true(spec_distributed_uses(TRAINER_ALLREDUCE, "learning_rate_scaling"));
    assert_false(spec_distributed_uses(TRAINER_AVERAGING, "learning_rate_scaling"));
    assert_true(spec_distributed_uses(TRAINER_AVERAGING, "sync_every_epochs"));
    assert_false(spec_distributed_uses(TRAINER_DOWNPOUR, "learning_rate"));
    assert_true(spec_distributed_uses(TRAINER_EAMSGD, "momentum"));
    assert_true(spec_distributed_uses(TRAINER_SINGLE, "workers"));
    assert_false(spec_distributed_uses(TRAINER_EAMSGD, "bogus"));
    /* Every trainer's resolved spec parses back to itself. */
    for (int t = TRAINER_SINGLE; t <= TRAINER_EAMSGD; t++) {
        char text[512];
        snprintf(text, sizeof text,
                 "{\"model\":\"mlp\"," DATA ",\"distributed\":{\"trainer\":\"%s\","
                 "\"workers\":%d}}", spec_trainer_name((spec_trainer)t),
                 t == TRAINER_SINGLE ? 1 : 2);
        s = parse(text, &err);
        assert_non_null(s);
        assert_roundtrip(s, spec_trainer_name((spec_trainer)t));
        spec_free(s);
    }
}

static void test_ranks(void **state)
{
    (void)state;
    spec_error err;
    job_spec *s = parse("{\"model\":\"mlp\"," DATA ",\"distributed\":{\"trainer\":\"adag\","
                        "\"workers\":4}}", &err);
    assert_non_null(s);
    assert_int_equal(spec_ranks_needed(s), 5);
    assert_int_equal(s->distributed.communication_window, 12);
    spec_free(s);
    s = parse("{\"model\":\"mlp\"," DATA ",\"distributed\":{\"trainer\":\"allreduce\","
              "\"workers\":3}}", &err);
    assert_non_null(s);
    assert_int_equal(spec_ranks_needed(s), 3);
    spec_free(s);
}

/* Each error class: the spec, the path the error must name, and a piece of
 * the message that tells the user what was expected. */
static const struct bad_case {
    const char *json;
    const char *path;
    const char *expect;
} bad_cases[] = {
    {"", "", "empty"},
    {"{\"model\":\"mlp\",", "", "invalid JSON"},
    {"[1,2]", "", "must be a JSON object"},
    {"{\"model\":\"mlp\"," DATA ",\"bogus\":1}", "bogus", "unknown key"},
    {"{\"model\":\"mlp\"," DATA ",\"training\":{\"epochs\":-3}}", "training.epochs", ">= 1"},
    {"{\"model\":\"mlp\"," DATA ",\"training\":{\"epochs\":\"five\"}}", "training.epochs",
     "expected an integer"},
    {"{\"model\":\"mlp\"," DATA ",\"training\":{\"batch_size\":0}}", "training.batch_size",
     ">= 1"},
    {"{\"model\":\"mlp\"," DATA ",\"training\":{\"optimizer\":{\"name\":\"adagrad\"}}}",
     "training.optimizer.name", "expected one of sgd, rmsprop, adam, nadam, adamw"},
    {"{\"model\":\"mlp\"," DATA ",\"training\":{\"optimizer\":{\"name\":\"adam\","
     "\"momentum\":0.9}}}", "training.optimizer.momentum", "unknown key"},
    {"{\"model\":\"mlp\"," DATA ",\"training\":{\"loss\":\"hinge\"}}", "training.loss",
     "unknown loss"},
    {"{\"model\":\"mlp\"," DATA ",\"training\":{\"metrics\":[\"f1\"]}}", "training.metrics[0]",
     "unknown metric"},
    {"{\"model\":\"mlp\"," DATA ",\"training\":{\"lr_schedulers\":[{\"name\":\"one_cycle\"}]}}",
     "training.lr_schedulers[0].name", "unknown schedule"},
    {"{\"model\":\"mlp\"," DATA ",\"training\":{\"lr_schedulers\":[{\"name\":"
     "\"early_stopping\",\"monitor\":\"loss\",\"metric\":\"val_loss\"}]}}",
     "training.lr_schedulers[0].metric", "the same parameter as \"monitor\""},
    {"{\"model\":\"mlp\"," DATA ",\"training\":{\"lr_schedulers\":[{\"name\":"
     "\"model_checkpoint\",\"save_freq\":2,\"epoch_save_frequency\":2}]}}",
     "training.lr_schedulers[0].save_freq", "the same parameter as \"epoch_save_frequency\""},
    {"{\"model\":\"mlp\"," DATA ",\"training\":{\"lr_schedulers\":[{\"name\":"
     "\"model_checkpoint\",\"loss_or_metric\":\"val_categorical_hinge\"}]}}",
     "training.lr_schedulers[0].loss_or_metric", "unknown metric"},
    {"{\"model\":\"mlp\"," DATA ",\"training\":{\"global_batch_size\":256,\"batch_size\":64},"
     "\"distributed\":{\"trainer\":\"allreduce\",\"workers\":4}}", "training.global_batch_size",
     "not both"},
    {"{\"model\":\"mlp\"," DATA ",\"training\":{\"global_batch_size\":100},"
     "\"distributed\":{\"trainer\":\"allreduce\",\"workers\":3}}", "training.global_batch_size",
     "not a multiple of the 3 workers"},
    {"{\"model\":\"mlp\"," DATA ",\"training\":{\"stop_at_loss\":{\"metric\":\"loss\"}}}",
     "training.stop_at_loss", "needs both"},
    {"{\"model\":\"mlp\"," DATA ",\"training\":{\"stop_at_loss\":{\"metric\":\"f1\","
     "\"threshold\":1}}}", "training.stop_at_loss.metric", "unknown metric"},
    {"{\"model\":\"mlp\"," DATA ",\"training\":{\"metrics\":[\"categorical_hinge\"]}}",
     "training.metrics[0]", "a loss here, not a metric"},
    {"{\"model\":\"mlp\"," DATA ",\"training\":{\"metrics\":[\"accuracy\","
     "\"categorical_accuracy\"]}}", "training.metrics[1]", "\"accuracy\" listed twice"},
    {"{\"model\":\"mlp\"," DATA ",\"training\":{\"lr_schedulers\":[{\"name\":"
     "\"reduce_lr_every_nepochs\",\"metric\":\"loss\"}]}}",
     "training.lr_schedulers[0].metric", "unknown key"},
    {"{\"model\":\"mlp\"," DATA ",\"distributed\":{\"trainer\":\"horovod\"}}",
     "distributed.trainer", "unknown trainer"},
    {"{\"model\":\"mlp\"," DATA ",\"distributed\":{\"workers\":2}}", "distributed.workers",
     "single"},
    /* A knob the trainer does not use is refused, naming the trainer and
     * the ones that use it. */
    {"{\"model\":\"mlp\"," DATA ",\"distributed\":{\"trainer\":\"downpour\",\"workers\":2,"
     "\"learning_rate_scaling\":true}}",
     "distributed.learning_rate_scaling",
     "trainer \"downpour\" does not use it (only allreduce does)"},
    {"{\"model\":\"mlp\"," DATA ",\"distributed\":{\"trainer\":\"averaging\",\"workers\":2,"
     "\"learning_rate_scaling\":false}}",
     "distributed.learning_rate_scaling", "trainer \"averaging\""},
    {"{\"model\":\"mlp\"," DATA ",\"distributed\":{\"trainer\":\"adag\",\"workers\":2,"
     "\"rho\":5}}", "distributed.rho", "(only aeasgd, eamsgd do)"},
    {"{\"model\":\"mlp\"," DATA ",\"distributed\":{\"trainer\":\"aeasgd\",\"workers\":2,"
     "\"momentum\":0.9}}", "distributed.momentum",
     "trainer \"aeasgd\" does not use it (only eamsgd"},
    {"{\"model\":\"mlp\"," DATA ",\"distributed\":{\"trainer\":\"dynsgd\",\"workers\":2,"
     "\"learning_rate\":0.1}}", "distributed.learning_rate", "trainer \"dynsgd\""},
    {"{\"model\":\"mlp\"," DATA ",\"distributed\":{\"trainer\":\"allreduce\",\"workers\":2,"
     "\"communication_window\":4}}", "distributed.communication_window", "trainer \"allreduce\""},
    {"{\"model\":\"mlp\"," DATA ",\"distributed\":{\"trainer\":\"ensemble\",\"workers\":2,"
     "\"sync_every_epochs\":2}}", "distributed.sync_every_epochs", "(only averaging does)"},
    {"{\"model\":\"mlp\"," DATA ",\"distributed\":{\"trainer\":\"eamsgd\",\"workers\":2,"
     "\"bucket_mb\":1}}", "distributed.bucket_mb", "trainer \"eamsgd\""},
    {"{\"model\":\"mlp\"," DATA ",\"distributed\":{\"rho\":5}}", "distributed.rho",
     "trainer \"single\""},
    /* The elastic force must attract: alpha = rho * learning_rate < 1. */
    {"{\"model\":\"mlp\"," DATA ",\"distributed\":{\"trainer\":\"aeasgd\",\"workers\":2,"
     "\"rho\":20}}", "distributed.rho", "rho * learning_rate must be < 1, got 20 * 0.1 = 2"},
    {"{\"model\":\"mlp\"," DATA ",\"distributed\":{\"trainer\":\"eamsgd\",\"workers\":2,"
     "\"learning_rate\":0.2}}", "distributed.learning_rate", "= 1"},
    {"{\"model\":\"mlp\"," DATA ",\"distributed\":{\"trainer\":\"eamsgd\",\"workers\":2,"
     "\"learning_rate\":0}}", "distributed.learning_rate", "> 0"},
    {"{\"model\":\"resnet\"," DATA "}", "model", "unknown model preset"},
    {"{\"model\":{\"layers\":[{\"type\":\"conv3d\"}]}," DATA "}", "model.layers[0].type",
     "unknown layer type"},
    {"{\"model\":{\"layers\":[{\"type\":\"dropout\",\"rate\":1.0},{\"type\":\"flatten\"},"
     "{\"type\":\"dense\",\"units\":10}]}," DATA "}", "model.layers[0].rate", "< 1"},
    {"{\"model\":{\"layers\":[{\"type\":\"conv2d\",\"filters\":4,\"kernel\":3},"
     "{\"type\":\"dense\",\"units\":10}]}," DATA "}", "model.layers[1]", "flatten"},
    {"{\"model\":{\"layers\":[{\"type\":\"conv2d\",\"filters\":4}]}," DATA "}",
     "model.layers[0].kernel", "missing"},
    {"{\"model\":{\"layers\":[{\"type\":\"conv2d\",\"filters\":4,\"kernel\":40}]}," DATA "}",
     "model.layers[0]", "does not fit"},
    {"{\"model\":{\"layers\":[{\"type\":\"flatten\"},{\"type\":\"dense\",\"units\":12}]},"
     DATA "}", "model.layers[1]", "num_classes"},
    {"{\"model\":{\"layers\":[{\"type\":\"flatten\"},{\"type\":\"dense\",\"units\":5},"
     "{\"type\":\"dense\",\"units\":10,\"inputs\":[2]}]}," DATA "}", "model.layers[2].inputs[0]",
     "earlier layer"},
    {"{\"model\":{\"layers\":[{\"type\":\"flatten\"},{\"type\":\"dense\",\"units\":5},"
     "{\"type\":\"add\",\"inputs\":[0,1]}]}," DATA "}", "model.layers[2]", "one shape"},
    {"{\"model\":{\"input\":[8],\"layers\":[{\"type\":\"dense\",\"units\":1}]},"
     "\"data\":{\"train\":\"t\",\"num_classes\":1}}", "data.num_classes", "training.loss"},
    {"{\"model\":\"mlp\",\"data\":{\"train\":\"../../etc/passwd\"}}", "data.train", ".."},
    {"{\"model\":\"mlp\",\"data\":{\"train\":\"/etc/passwd\"}}", "data.train", "absolute"},
    {"{\"model\":\"mlp\",\"data\":{\"train\":\"a/.hidden\"}}", "data.train", "\".\""},
    {"{\"model\":\"mlp\",\"data\":{}}", "data.train", "missing"},
    {"{\"model\":\"mlp\"}", "data", "missing"},
    {"{" DATA "}", "model", "missing"},
    {"{\"model\":\"mlp\",\"data\":{\"format\":\"csv\",\"train\":\"x.csv\"}}", "model.input",
     "missing"},
    {"{\"model\":\"mlp\"," DATA ",\"data\":{\"train\":\"x\"}}", "", "invalid JSON"},
    {"{\"model\":\"mlp\"," DATA ",\"resources\":{\"gpus\":-1}}", "resources.gpus", ">= 0"},
    {"{\"model\":\"mlp\"," DATA ",\"training\":{\"optimizer\":{\"name\":\"sgd\","
     "\"nesterov\":true}}}", "training.optimizer.nesterov", "momentum"},
};

static void test_errors(void **state)
{
    (void)state;
    for (size_t i = 0; i < sizeof bad_cases / sizeof *bad_cases; i++) {
        const struct bad_case *c = &bad_cases[i];
        spec_error err;
        memset(&err, 0, sizeof err);
        job_spec *s = parse(c->json, &err);
        if (s)
            fail_msg("case %zu accepted: %s", i, c->json);
        char msg[600];
        spec_error_str(&err, msg, sizeof msg);
        if (strcmp(err.path, c->path) != 0 || !strstr(err.message, c->expect))
            fail_msg("case %zu: got \"%s\" (path \"%s\"), want path \"%s\" and \"%s\"", i, msg,
                     err.path, c->path, c->expect);
    }
}

/* lstm, gru and bidirectional (issue 28): Keras's parameter counts,
 * sequence or last-step shapes, the resolved spec's round trip, and each
 * bad field named by its path. */
#define SEQ_JOB(layers)                                                                     \
    "{\"model\":{\"input\":{\"sequence\":[8]},\"layers\":[" layers                           \
    ",{\"type\":\"flatten\"},{\"type\":\"dense\",\"units\":2}]},\"data\":{\"format\":"       \
    "\"synthetic\",\"num_classes\":2,\"max_length\":12}}"

static void test_rnn_layers(void **state)
{
    (void)state;
    static const struct {
        const char *json;
        long params;
        int rank, d0, d1;
    } good[] = {
        /* LSTM 4U(F+U+1), GRU 3U(F+U+2) (reset_after) or 3U(F+U+1). */
        {SEQ_JOB("{\"type\":\"lstm\",\"units\":16}"), 4 * 16 * (8 + 16 + 1), 1, 16, 0},
        {SEQ_JOB("{\"type\":\"gru\",\"units\":16,\"return_sequences\":true}"),
         3 * 16 * (8 + 16 + 2), 2, 12, 16},
        {SEQ_JOB("{\"type\":\"gru\",\"units\":16,\"reset_after\":false,\"go_backwards\":true}"),
         3 * 16 * (8 + 16 + 1), 1, 16, 0},
        {SEQ_JOB("{\"type\":\"bidirectional\",\"layer\":{\"type\":\"lstm\",\"units\":5,"
                 "\"return_sequences\":true}}"), 2 * 4 * 5 * (8 + 5 + 1), 2, 12, 10},
        {SEQ_JOB("{\"type\":\"bidirectional\",\"merge_mode\":\"mul\",\"layer\":{\"type\":"
                 "\"gru\",\"units\":5}}"), 2 * 3 * 5 * (8 + 5 + 2), 1, 5, 0},
        {SEQ_JOB("{\"type\":\"lstm\",\"units\":6,\"return_sequences\":true},"
                 "{\"type\":\"lstm\",\"units\":3}"), 4 * 6 * (8 + 6 + 1), 2, 12, 6},
    };
    for (size_t i = 0; i < sizeof good / sizeof *good; i++) {
        spec_error err;
        job_spec *s = parse(good[i].json, &err);
        char msg[600];
        if (!s)
            fail_msg("case %zu: %s", i, spec_error_str(&err, msg, sizeof msg));
        const spec_layer *l = &s->layers[0];
        assert_int_equal(l->n_params, good[i].params);
        assert_int_equal(l->out_shape.rank, good[i].rank);
        assert_int_equal(l->out_shape.dim[0], good[i].d0);
        if (good[i].rank == 2)
            assert_int_equal(l->out_shape.dim[1], good[i].d1);
        assert_roundtrip(s, good[i].json);
        spec_free(s);
    }
    /* On token ids the kernel has a row per id, as for a one-hot input. */
    static const struct {
        const char *layers;
        long params;
    } tok[] = {
        {"{\"type\":\"lstm\",\"units\":16}", 4 * 16 * (300 + 16 + 1)},
        {"{\"type\":\"gru\",\"units\":16,\"return_sequences\":true}",
         3 * 16 * (300 + 16 + 2)},
        {"{\"type\":\"bidirectional\",\"layer\":{\"type\":\"gru\",\"units\":5,"
         "\"reset_after\":false}}", 2 * 3 * 5 * (300 + 5 + 1)},
    };
    for (size_t i = 0; i < sizeof tok / sizeof *tok; i++) {
        char json[600], msg[600];
        snprintf(json, sizeof json,
                 "{\"model\":{\"input\":{\"tokens\":300},\"layers\":[%s,{\"type\":"
                 "\"flatten\"},{\"type\":\"dense\",\"units\":2}]},\"data\":{\"format\":"
                 "\"synthetic\",\"num_classes\":2,\"max_length\":12}}", tok[i].layers);
        spec_error err;
        job_spec *s = parse(json, &err);
        if (!s)
            fail_msg("token case %zu: %s", i, spec_error_str(&err, msg, sizeof msg));
        assert_int_equal(s->layers[0].token_vocab, 300);
        assert_int_equal(s->layers[0].n_params, tok[i].params);
        assert_int_equal(s->layers[0].in_shape.dim[1], 1);
        assert_roundtrip(s, json);
        spec_free(s);
    }
    /* Only a layer reading the model input itself reads ids. */
    job_spec *d = parse("{\"model\":{\"input\":{\"tokens\":300},\"layers\":[{\"type\":"
                        "\"lstm\",\"units\":6,\"return_sequences\":true},{\"type\":\"lstm\","
                        "\"units\":3},{\"type\":\"dense\",\"units\":2}]},\"data\":{"
                        "\"format\":\"synthetic\",\"num_classes\":2,\"max_length\":12}}",
                        &(spec_error){0});
    assert_non_null(d);
    assert_int_equal(d->layers[0].token_vocab, 300);
    assert_int_equal(d->layers[1].token_vocab, 0);
    assert_int_equal(d->layers[1].n_params, 4 * 3 * (6 + 3 + 1));
    spec_free(d);
    d = parse(SEQ_JOB("{\"type\":\"gru\",\"units\":4}"), &(spec_error){0});
    assert_int_equal(d->layers[0].token_vocab, 0);
    assert_non_null(d);
    assert_true(d->layers[0].reset_after);
    assert_false(d->layers[0].return_sequences);
    assert_false(d->layers[0].go_backwards);
    spec_free(d);
    d = parse(SEQ_JOB("{\"type\":\"bidirectional\",\"layer\":{\"type\":\"gru\",\"units\":4}}"),
              &(spec_error){0});
    assert_non_null(d);
    assert_int_equal(d->layers[0].merge_mode, MERGE_CONCAT);
    assert_int_equal(d->layers[0].rnn, LAYER_GRU);
    spec_free(d);

    static const struct bad_case bad[] = {
        {"{\"model\":{\"input\":[784],\"layers\":[{\"type\":\"lstm\",\"units\":4},"
         "{\"type\":\"dense\",\"units\":10}]}," DATA "}", "model.layers[0]",
         "lstm needs a sequence input {steps, features}, got 784"},
        {SEQ_JOB("{\"type\":\"lstm\"}"), "model.layers[0].units", "missing"},
        {SEQ_JOB("{\"type\":\"gru\",\"units\":0}"), "model.layers[0].units", ""},
        {SEQ_JOB("{\"type\":\"lstm\",\"units\":4,\"reset_after\":true}"),
         "model.layers[0].reset_after", ""},
        {SEQ_JOB("{\"type\":\"gru\",\"units\":4,\"return_sequences\":1}"),
         "model.layers[0].return_sequences", ""},
        {SEQ_JOB("{\"type\":\"bidirectional\"}"), "model.layers[0].layer", "missing"},
        {SEQ_JOB("{\"type\":\"bidirectional\",\"layer\":{\"type\":\"dense\",\"units\":4}}"),
         "model.layers[0].layer.type", "lstm"},
        {SEQ_JOB("{\"type\":\"bidirectional\",\"layer\":{\"units\":4}}"),
         "model.layers[0].layer.type", "missing"},
        {SEQ_JOB("{\"type\":\"bidirectional\",\"layer\":{\"type\":\"gru\"}}"),
         "model.layers[0].layer.units", "missing"},
        {SEQ_JOB("{\"type\":\"bidirectional\",\"layer\":{\"type\":\"lstm\",\"units\":4,"
                 "\"go_backwards\":true}}"), "model.layers[0].layer.go_backwards", "unknown key"},
        {SEQ_JOB("{\"type\":\"bidirectional\",\"merge_mode\":\"max\",\"layer\":{\"type\":"
                 "\"lstm\",\"units\":4}}"), "model.layers[0].merge_mode", "concat"},
    };
    for (size_t i = 0; i < sizeof bad / sizeof *bad; i++) {
        spec_error err;
        memset(&err, 0, sizeof err);
        job_spec *s = parse(bad[i].json, &err);
        if (s)
            fail_msg("rnn case %zu accepted: %s", i, bad[i].json);
        char msg[600];
        spec_error_str(&err, msg, sizeof msg);
        if (strcmp(err.path, bad[i].path) != 0 || !strstr(err.message, bad[i].expect))
            fail_msg("rnn case %zu: got \"%s\" (path \"%s\"), want path \"%s\" and \"%s\"", i,
                     msg, err.path, bad[i].path, bad[i].expect);
    }
}

/* PyDTNN's parameter names are aliases: loss_or_metric and metric for
 * monitor, epoch_save_frequency and save_freq for every_epochs; the
 * resolved spec uses this engine's names. */
static void test_schedule_aliases(void **state)
{
    (void)state;
    spec_error err;
    job_spec *s = parse("{\"model\":\"mlp\"," DATA ",\"training\":{\"lr_schedulers\":["
                        "{\"name\":\"model_checkpoint\",\"epoch_save_frequency\":2,"
                        "\"loss_or_metric\":\"val_accuracy\"},"
                        "{\"name\":\"early_stopping\",\"metric\":\"loss\",\"patience\":3},"
                        "{\"name\":\"reduce_lr_on_plateau\",\"loss_or_metric\":\"accuracy\"},"
                        "{\"name\":\"model_checkpoint\",\"save_freq\":3}]}}", &err);
    char msg[600];
    if (!s)
        fail_msg("%s", spec_error_str(&err, msg, sizeof msg));
    const spec_schedule *sc = s->training.schedules;
    assert_int_equal(s->training.n_schedules, 4);
    assert_int_equal(sc[0].every_epochs, 2);
    assert_string_equal(sc[0].monitor, "val_accuracy");
    assert_string_equal(sc[1].monitor, "loss");
    assert_int_equal(sc[1].patience, 3);
    assert_string_equal(sc[2].monitor, "accuracy");
    assert_int_equal(sc[3].every_epochs, 3);
    assert_string_equal(sc[3].monitor, "");
    json_t *j = spec_to_json(s);
    assert_non_null(j);
    json_t *first = json_array_get(json_object_get(json_object_get(j, "training"),
                                                   "lr_schedulers"), 0);
    assert_int_equal(json_integer_value(json_object_get(first, "every_epochs")), 2);
    assert_string_equal(json_string_value(json_object_get(first, "monitor")), "val_accuracy");
    assert_null(json_object_get(first, "epoch_save_frequency"));
    assert_null(json_object_get(first, "loss_or_metric"));
    json_decref(j);
    spec_free(s);
}

/* PyDTNN's loss and metric names (--loss_func, --metrics, and the
 * monitored names derived from them) resolve to ours. */
static void test_name_aliases(void **state)
{
    (void)state;
    spec_error err;
    job_spec *s = parse("{\"model\":\"mlp\"," DATA ",\"training\":{"
                        "\"loss\":\"categorical_cross_entropy\",\"metrics\":["
                        "\"categorical_accuracy\",\"regression_mse\",\"categorical_mae\"],"
                        "\"lr_schedulers\":["
                        "{\"name\":\"early_stopping\",\"metric\":"
                        "\"val_categorical_cross_entropy\"},"
                        "{\"name\":\"reduce_lr_on_plateau\",\"monitor\":"
                        "\"val_categorical_accuracy\"},"
                        "{\"name\":\"model_checkpoint\",\"monitor\":\"regression_mae\"}]}}",
                        &err);
    char msg[600];
    if (!s)
        fail_msg("%s", spec_error_str(&err, msg, sizeof msg));
    assert_int_equal(s->training.loss, LOSS_CATEGORICAL_CROSSENTROPY);
    assert_int_equal(s->training.n_metrics, 3);
    assert_int_equal(s->training.metrics[0], METRIC_ACCURACY);
    assert_int_equal(s->training.metrics[1], METRIC_MSE);
    assert_int_equal(s->training.metrics[2], METRIC_MAE);
    assert_string_equal(s->training.schedules[0].monitor, "val_loss");
    assert_string_equal(s->training.schedules[1].monitor, "val_accuracy");
    assert_string_equal(s->training.schedules[2].monitor, "mae");
    spec_free(s);
    s = parse("{\"model\":\"mlp\"," DATA ",\"training\":{"
              "\"loss\":\"binary_cross_entropy\"}}", &err);
    if (!s)
        fail_msg("%s", spec_error_str(&err, msg, sizeof msg));
    assert_int_equal(s->training.loss, LOSS_BINARY_CROSSENTROPY);
    json_t *j = spec_to_json(s);
    assert_non_null(j);
    assert_string_equal(json_string_value(json_object_get(json_object_get(j, "training"),
                                                          "loss")), "binary_crossentropy");
    json_decref(j);
    spec_free(s);
    /* PyDTNN's categorical_hinge is a loss of its own, by the same name. */
    s = parse("{\"model\":\"mlp\"," DATA ",\"training\":{\"loss\":\"categorical_hinge\"}}",
              &err);
    if (!s)
        fail_msg("%s", spec_error_str(&err, msg, sizeof msg));
    assert_int_equal(s->training.loss, LOSS_CATEGORICAL_HINGE);
    assert_false(s->data.float_targets);
    j = spec_to_json(s);
    assert_non_null(j);
    assert_string_equal(json_string_value(json_object_get(json_object_get(j, "training"),
                                                          "loss")), "categorical_hinge");
    json_decref(j);
    spec_free(s);
}

/* PyDTNN's training options: global_batch_size is split over the
 * workers; stop_at_loss takes PyDTNN's metric names; all survive the
 * resolved-JSON round trip. */
static void test_pydtnn_options(void **state)
{
    (void)state;
    spec_error err;
    char msg[600];
    job_spec *s = parse("{\"model\":\"mlp\"," DATA ",\"training\":{\"global_batch_size\":256},"
                        "\"distributed\":{\"trainer\":\"allreduce\",\"workers\":4}}", &err);
    if (!s)
        fail_msg("%s", spec_error_str(&err, msg, sizeof msg));
    assert_int_equal(s->training.batch_size, 64);
    assert_roundtrip(s, "global_batch_size");
    spec_free(s);
    s = parse("{\"model\":\"mlp\"," DATA ",\"training\":{\"evaluate\":true,\"profile\":true,"
              "\"warm_up_batches\":20,\"stop_at_loss\":{\"metric\":\"val_categorical_accuracy\","
              "\"threshold\":0.7}}}", &err);
    if (!s)
        fail_msg("%s", spec_error_str(&err, msg, sizeof msg));
    assert_true(s->training.evaluate);
    assert_true(s->training.profile);
    assert_int_equal(s->training.warm_up_batches, 20);
    assert_string_equal(s->training.stop_metric, "val_accuracy");
    assert_true(s->training.stop_threshold == 0.7);
    assert_roundtrip(s, "evaluate, warm_up_batches, stop_at_loss");
    spec_free(s);
    /* Every distributed trainer takes them too (docs/distributed.md). */
    static const char *const trainers[] = {"allreduce", "averaging", "ensemble", "downpour",
                                           "adag",      "dynsgd",    "aeasgd",   "eamsgd"};
    for (size_t i = 0; i < sizeof trainers / sizeof *trainers; i++) {
        char text[512];
        snprintf(text, sizeof text,
                 "{\"model\":\"mlp\"," DATA ",\"training\":{\"evaluate\":true,"
                 "\"profile\":true,\"warm_up_batches\":10},\"distributed\":{\"trainer\":"
                 "\"%s\",\"workers\":2}}", trainers[i]);
        s = parse(text, &err);
        if (!s)
            fail_msg("%s: %s", trainers[i], spec_error_str(&err, msg, sizeof msg));
        assert_true(s->training.evaluate && s->training.profile);
        assert_int_equal(s->training.warm_up_batches, 10);
        assert_roundtrip(s, trainers[i]);
        spec_free(s);
    }
    s = parse("{\"model\":\"mlp\"," DATA "}", &err);
    assert_non_null(s);
    assert_false(s->training.evaluate);
    assert_int_equal(s->training.warm_up_batches, 0);
    assert_string_equal(s->training.stop_metric, "");
    assert_false(s->training.nondeterministic); /* reproducible by default */
    spec_free(s);
    /* training.deterministic: false is kept through the resolved spec;
     * true is the default; anything else names the field. */
    s = parse("{\"model\":\"mlp\"," DATA ",\"training\":{\"deterministic\":false}}", &err);
    if (!s)
        fail_msg("%s", spec_error_str(&err, msg, sizeof msg));
    assert_true(s->training.nondeterministic);
    assert_roundtrip(s, "deterministic false");
    json_t *j = spec_to_json(s);
    assert_true(json_is_false(json_object_get(json_object_get(j, "training"), "deterministic")));
    json_decref(j);
    spec_free(s);
    s = parse("{\"model\":\"mlp\"," DATA ",\"training\":{\"deterministic\":true}}", &err);
    assert_non_null(s);
    assert_false(s->training.nondeterministic);
    spec_free(s);
    assert_null(parse("{\"model\":\"mlp\"," DATA ",\"training\":{\"deterministic\":0}}", &err));
    assert_string_equal(err.path, "training.deterministic");
}

/* training.precision: fp32 by default, bf16 kept through the resolved
 * spec, unknown names refused; bf16 refused with a message that says how
 * to run it anyway on a CPU without bf16 (PUNCH_CPU_NO_BF16 simulates one). */
static void test_precision(void **state)
{
    (void)state;
    spec_error err;
    char msg[512];
    job_spec *s = parse("{\"model\":\"mlp\"," DATA "}", &err);
    assert_non_null(s);
    assert_int_equal(s->training.precision, PRECISION_FP32);
    spec_free(s);
    assert_null(parse("{\"model\":\"mlp\"," DATA ",\"training\":{\"precision\":\"fp16\"}}",
                      &err));
    assert_string_equal(err.path, "training.precision");
    assert_int_equal(setenv("PUNCH_CPU_NO_BF16", "1", 1), 0);
    assert_false(spec_cpu_has_bf16());
    assert_null(parse("{\"model\":\"mlp\"," DATA ",\"training\":{\"precision\":\"bf16\"}}",
                      &err));
    assert_string_equal(err.path, "training.precision");
    spec_error_str(&err, msg, sizeof msg);
    assert_non_null(strstr(msg, "bf16 needs a CPU with AVX512_BF16 or AMX; this one has neither; "
                                "set training.allow_emulation: true to run it slowly"));
    s = parse("{\"model\":\"mlp\"," DATA
              ",\"training\":{\"precision\":\"bf16\",\"allow_emulation\":true}}", &err);
    if (!s)
        fail_msg("%s", spec_error_str(&err, msg, sizeof msg));
    assert_int_equal(s->training.precision, PRECISION_BF16);
    assert_true(s->training.allow_emulation);
    assert_roundtrip(s, "bf16 emulated");
    json_t *j = spec_to_json(s);
    assert_string_equal(json_string_value(json_object_get(json_object_get(j, "training"),
                                                          "precision")), "bf16");
    json_decref(j);
    spec_free(s);
    assert_int_equal(unsetenv("PUNCH_CPU_NO_BF16"), 0);
}

/* adamw, the cosine schedule, clip_norm and grad_accum_steps: defaults,
 * the resolved spec parses again to the same spec, and bad values name
 * their field. */
static void test_optim_fields(void **state)
{
    (void)state;
    spec_error err;
    char msg[512];
    job_spec *s = parse("{\"model\":\"mlp\"," DATA ",\"training\":{\"optimizer\":\"adamw\"}}",
                        &err);
    if (!s)
        fail_msg("%s", spec_error_str(&err, msg, sizeof msg));
    assert_int_equal(s->training.optimizer.name, OPT_ADAMW);
    assert_true(s->training.optimizer.weight_decay == 0.01); /* torch's defaults */
    assert_true(s->training.optimizer.epsilon == 1e-8);
    assert_false(s->training.optimizer.decay_all);
    assert_int_equal(s->training.grad_accum_steps, 1);
    assert_true(s->training.clip_norm == 0.0);
    assert_roundtrip(s, "adamw defaults");
    spec_free(s);
    s = parse("{\"model\":\"mlp\"," DATA ",\"training\":{\"optimizer\":{\"name\":\"adamw\","
              "\"learning_rate\":6e-4,\"weight_decay\":0.1,\"beta2\":0.95,\"decay_all\":true},"
              "\"lr_schedulers\":[{\"name\":\"cosine\",\"warmup_steps\":100,"
              "\"decay_steps\":5000,\"min_lr\":6e-5}],\"clip_norm\":1.0,"
              "\"grad_accum_steps\":4},\"distributed\":{\"trainer\":\"allreduce\","
              "\"workers\":2}}", &err);
    if (!s)
        fail_msg("%s", spec_error_str(&err, msg, sizeof msg));
    assert_true(s->training.optimizer.decay_all);
    assert_true(s->training.optimizer.weight_decay == 0.1);
    assert_int_equal(s->training.n_schedules, 1);
    assert_int_equal(s->training.schedules[0].kind, SCHED_COSINE);
    assert_int_equal(s->training.schedules[0].warmup_steps, 100);
    assert_int_equal(s->training.schedules[0].decay_steps, 5000);
    assert_true(s->training.schedules[0].min_lr == 6e-5);
    assert_true(s->training.clip_norm == 1.0);
    assert_int_equal(s->training.grad_accum_steps, 4);
    assert_roundtrip(s, "adamw, cosine, clip_norm, grad_accum_steps");
    spec_free(s);
    static const struct {
        const char *training, *path;
    } bad[] = {
        {"\"optimizer\":{\"name\":\"adamw\",\"momentum\":0.9}",
         "training.optimizer.momentum"},
        {"\"optimizer\":{\"name\":\"adam\",\"decay_all\":true}",
         "training.optimizer.decay_all"},
        {"\"optimizer\":{\"name\":\"adamw\",\"decay_all\":1}", "training.optimizer.decay_all"},
        {"\"clip_norm\":-1", "training.clip_norm"},
        {"\"grad_accum_steps\":0", "training.grad_accum_steps"},
        {"\"grad_accum_steps\":1.5", "training.grad_accum_steps"},
        {"\"lr_schedulers\":[{\"name\":\"cosine\",\"min_lr\":1}]",
         "training.lr_schedulers[0].min_lr"},
        {"\"lr_schedulers\":[{\"name\":\"cosine\",\"warmup_steps\":10,\"decay_steps\":10}]",
         "training.lr_schedulers[0].decay_steps"},
        {"\"lr_schedulers\":[{\"name\":\"cosine\",\"warmup_steps\":-1}]",
         "training.lr_schedulers[0].warmup_steps"},
        {"\"lr_schedulers\":[{\"name\":\"cosine\",\"patience\":3}]",
         "training.lr_schedulers[0].patience"},
        {"\"lr_schedulers\":[{\"name\":\"cosine\"},{\"name\":\"cosine\"}]",
         "training.lr_schedulers[1]"},
        {"\"warm_up_batches\":5,\"lr_schedulers\":[{\"name\":\"cosine\"}]",
         "training.lr_schedulers[0]"},
    };
    for (size_t i = 0; i < sizeof bad / sizeof *bad; i++) {
        char text[512];
        snprintf(text, sizeof text, "{\"model\":\"mlp\"," DATA ",\"training\":{%s}}",
                 bad[i].training);
        s = parse(text, &err);
        if (s)
            fail_msg("accepted %s", bad[i].training);
        if (strcmp(err.path, bad[i].path) != 0)
            fail_msg("%s: error at %s (%s), want %s", bad[i].training, err.path, err.message,
                     bad[i].path);
    }
}

/* data.augment: PyDTNN's defaults when a transform is named, the
 * resolved spec parses again, and malformed values name their field. */
static void test_augment(void **state)
{
    (void)state;
    spec_error err;
    char msg[600];
    job_spec *s = parse("{\"model\":\"mlp\",\"data\":{\"train\":\"t\",\"augment\":"
                        "{\"flip\":{},\"crop\":{\"size\":8,\"prob\":0.25}}}}", &err);
    if (!s)
        fail_msg("%s", spec_error_str(&err, msg, sizeof msg));
    assert_true(s->data.augment.flip_prob == 0.5);
    assert_int_equal(s->data.augment.crop_size, 8);
    assert_true(s->data.augment.crop_prob == 0.25);
    assert_roundtrip(s, "augment");
    spec_free(s);
    s = parse("{\"model\":\"mlp\"," DATA "}", &err);
    assert_non_null(s);
    assert_true(s->data.augment.flip_prob == 0 && s->data.augment.crop_size == 0);
    spec_free(s);
    static const struct {
        const char *augment, *path, *expect;
    } bad[] = {
        {"true", "data.augment", "expected an object"},
        {"{\"rotate\":{}}", "data.augment.rotate", "unknown"},
        {"{\"flip\":0.5}", "data.augment.flip", "expected an object"},
        {"{\"flip\":{\"prob\":0}}", "data.augment.flip.prob", ""},
        {"{\"crop\":{\"size\":0}}", "data.augment.crop.size", ""},
        {"{\"crop\":{\"pad\":4}}", "data.augment.crop.pad", "unknown"},
    };
    for (size_t i = 0; i < sizeof bad / sizeof *bad; i++) {
        char json[256];
        snprintf(json, sizeof json, "{\"data\":{\"train\":\"t\",\"augment\":%s}}",
                 bad[i].augment);
        memset(&err, 0, sizeof err);
        s = parse(json, &err);
        if (s)
            fail_msg("accepted: %s", json);
        spec_error_str(&err, msg, sizeof msg);
        if (strcmp(err.path, bad[i].path) != 0 || !strstr(err.message, bad[i].expect))
            fail_msg("%s: got \"%s\" (path \"%s\")", bad[i].augment, msg, err.path);
    }
    /* Only images, and a crop that fits them. */
    memset(&err, 0, sizeof err);
    assert_null(parse("{\"model\":{\"input\":[784],\"layers\":[{\"type\":\"dense\","
                      "\"units\":10,\"activation\":\"softmax\"}]},\"data\":{\"format\":"
                      "\"synthetic\",\"augment\":{\"flip\":{}}}}", &err));
    assert_string_equal(err.path, "data.augment");
    assert_non_null(strstr(err.message, "image samples"));
    memset(&err, 0, sizeof err);
    assert_null(parse("{\"model\":\"resnet20_cifar10\",\"data\":{\"format\":\"cifar10\","
                      "\"train\":\"t\",\"augment\":{\"crop\":{\"size\":40}}}}", &err));
    assert_string_equal(err.path, "data.augment.crop.size");
    assert_non_null(strstr(err.message, "40 is larger than the 32x32 images"));
}

static void test_hostile_bytes(void **state)
{
    (void)state;
    spec_error err;
    /* 10 MB of nesting: refused as JSON, no stack overflow. */
    size_t n = 10u << 20;
    char *deep = malloc(n);
    assert_non_null(deep);
    memset(deep, '[', n);
    assert_null(spec_parse(deep, n, &err));
    assert_non_null(strstr(err.message, "invalid JSON"));
    memset(deep, '{', n);
    assert_null(spec_parse(deep, n, &err));
    free(deep);
    /* Not UTF-8. */
    const char bad_utf8[] = "{\"name\":\"\xff\xfe\"," DATA ",\"model\":\"mlp\"}";
    assert_null(spec_parse(bad_utf8, sizeof bad_utf8 - 1, &err));
    assert_non_null(strstr(err.message, "invalid JSON"));
    /* Embedded NUL in a string. */
    const char nul[] = "{\"name\":\"a\\u0000b\"," DATA ",\"model\":\"mlp\"}";
    assert_null(spec_parse(nul, sizeof nul - 1, &err));
    /* Every prefix of a valid spec: rejected or accepted, never a crash. */
    const char *good = "{\"model\":{\"input\":[1,28,28],\"layers\":[{\"type\":\"flatten\"},"
                       "{\"type\":\"dense\",\"units\":10}]}," DATA "}";
    for (size_t len = 0; len < strlen(good); len++)
        assert_null(spec_parse(good, len, &err));
    job_spec *s = spec_parse(good, strlen(good), &err);
    assert_non_null(s);
    spec_free(s);
}

static void test_dataset_names(void **state)
{
    (void)state;
    const char *ok[] = {"fashion-mnist/train", "a", "x/y/z.csv", "cifar-10-batches-bin"};
    const char *bad[] = {"", "/abs", "..", "a/../b", "a//b", "a/", ".hidden", "a\\b", "a\nb"};
    for (size_t i = 0; i < sizeof ok / sizeof *ok; i++)
        assert_true(spec_dataset_name_ok(ok[i], NULL));
    for (size_t i = 0; i < sizeof bad / sizeof *bad; i++) {
        const char *why = NULL;
        assert_false(spec_dataset_name_ok(bad[i], &why));
        assert_non_null(why);
    }
}

static void test_summary(void **state)
{
    (void)state;
    spec_error err;
    job_spec *s = parse("{\"model\":\"convnet\"," DATA "}", &err);
    assert_non_null(s);
    char *buf = NULL;
    size_t len = 0;
    FILE *f = open_memstream(&buf, &len);
    assert_non_null(f);
    spec_print_summary(s, f);
    fclose(f);
    assert_non_null(strstr(buf, "5.dense 1024 relu"));
    assert_non_null(strstr(buf, "3,212,288"));
    assert_non_null(strstr(buf, "Trainable params: 3,274,634"));
    assert_non_null(strstr(buf, "MPI ranks needed: 1"));
    free(buf);
    spec_free(s);
}

/* A token model for the sequence data tests: tokens -> flatten -> dense. */
#define SEQ_MODEL(tokens, classes)                                                         \
    "\"model\":{\"input\":{\"tokens\":" #tokens "},\"layers\":[{\"type\":\"flatten\"},"   \
    "{\"type\":\"dense\",\"units\":" #classes ",\"activation\":\"softmax\"}]}"

static void expect_data_error(const char *json, const char *path, const char *part)
{
    spec_error err;
    char msg[600];
    memset(&err, 0, sizeof err);
    job_spec *s = parse(json, &err);
    if (s)
        fail_msg("accepted: %s", json);
    spec_error_str(&err, msg, sizeof msg);
    if (strcmp(err.path, path) != 0 || !strstr(err.message, part))
        fail_msg("%s: got \"%s\" (path \"%s\")", json, msg, err.path);
}

/* The sequence presets (issue 28): Keras's parameter counts on token and
 * feature-sequence inputs, the input kept as the user gave it, the
 * resolved spec's round trip, and a refusal naming model.preset on an
 * input the preset cannot read. */
static void test_sequence_presets(void **state)
{
    (void)state;
    static const struct {
        const char *name, *input, *data;
        int layers, vocab;
        long params;
    } cases[] = {
        /* The CNTK notebook: 2000-word one-hot input, LSTM(20), 5 classes:
         * 4 * 20 * (2000 + 20 + 1) + 20 * 5 + 5. */
        {"cntk_lstm", "{\"tokens\":2000}",
         "\"format\":\"ctf\",\"train\":\"t\",\"num_classes\":5,\"max_length\":40", 2,
         2000, 4L * 20 * (2000 + 20 + 1) + 20 * 5 + 5},
        {"cntk_lstm", "{\"sequence\":[8]}",
         "\"format\":\"synthetic\",\"num_classes\":5,\"max_length\":12", 2, 0,
         4L * 20 * (8 + 20 + 1) + 20 * 5 + 5},
        /* Keras's counts: embedding 256 x 64, LSTM(128) 4 * 128 * (64 + 128 + 1),
         * dense 128 x 5 + 5; the embedding, not the LSTM, reads the ids. */
        {"lstm_classifier", "{\"tokens\":256}",
         "\"format\":\"npz\",\"train\":\"@t\",\"num_classes\":5,\"max_length\":96", 3, 256,
         256L * 64 + 4L * 128 * (64 + 128 + 1) + 128 * 5 + 5},
        /* Per step: a bidirectional LSTM(128) concat (256 per step), then
         * dense 256 x 5 + 5 at every step. */
        {"bilstm_tagger", "{\"tokens\":256}",
         "\"format\":\"npz\",\"train\":\"@t\",\"num_classes\":5,\"max_length\":40,"
         "\"per_step_labels\":true", 3, 256,
         256L * 64 + 2 * 4L * 128 * (64 + 128 + 1) + 256 * 5 + 5},
        /* Two LSTM(256): 4 * 256 * (64 + 256 + 1), 4 * 256 * (256 + 256 + 1). */
        {"char_lstm_lm", "{\"tokens\":256}",
         "\"format\":\"npz\",\"train\":\"@t\",\"num_classes\":5,\"max_length\":64,"
         "\"per_step_labels\":true", 4, 256,
         256L * 64 + 4L * 256 * (64 + 256 + 1) + 4L * 256 * (256 + 256 + 1) + 256 * 5 + 5},
    };
    for (size_t i = 0; i < sizeof cases / sizeof *cases; i++) {
        char json[512], msg[600];
        snprintf(json, sizeof json, "{\"model\":{\"preset\":\"%s\",\"input\":%s},"
                 "\"data\":{%s}}", cases[i].name, cases[i].input, cases[i].data);
        spec_error err;
        job_spec *s = parse(json, &err);
        if (!s)
            fail_msg("%s: %s", json, spec_error_str(&err, msg, sizeof msg));
        assert_string_equal(s->preset, cases[i].name);
        assert_int_equal(s->n_layers, cases[i].layers);
        assert_int_equal(s->n_params, cases[i].params);
        assert_int_equal(s->input_tokens, cases[i].vocab);
        assert_int_equal(s->input.rank, 2);
        assert_int_equal(s->layers[0].token_vocab,
                         s->layers[0].type == LAYER_EMBEDDING ? 0 : cases[i].vocab);
        const spec_layer *out = &s->layers[s->n_layers - 1];
        assert_int_equal(out->out_shape.rank, s->data.per_step_labels ? 2 : 1);
        assert_int_equal(out->out_shape.dim[out->out_shape.rank - 1], 5);
        assert_int_equal(out->activation, ACT_SOFTMAX);
        assert_roundtrip(s, json);
        spec_free(s);
    }
    expect_data_error("{\"model\":{\"preset\":\"cntk_lstm\",\"input\":[784]}," DATA "}",
                      "model.preset", "cntk_lstm needs a sequence model input");
    expect_data_error("{\"model\":{\"preset\":\"lstm_classifier\",\"input\":{\"sequence\":"
                      "[4]}},\"data\":{\"format\":\"synthetic\",\"max_length\":8}}",
                      "model.preset", "lstm_classifier reads token ids");
}

/* The sequence fields of data: defaults, round trip, and each refusal
 * naming its field. */
static void test_sequence_data(void **state)
{
    (void)state;
    spec_error err;
    char msg[600];
    job_spec *s = parse("{" SEQ_MODEL(100, 3) ",\"data\":{\"format\":\"ctf\",\"train\":\"t\","
                        "\"num_classes\":3,\"max_length\":20,\"features\":\"w\"}}", &err);
    if (!s)
        fail_msg("%s", spec_error_str(&err, msg, sizeof msg));
    assert_int_equal(s->data.format, DATA_CTF);
    assert_string_equal(s->data.ctf_features, "w");
    assert_string_equal(s->data.ctf_labels, "y");
    assert_int_equal(s->data.scaling, SCALE_NONE);
    assert_true(s->data.bucket_by_length);
    assert_false(s->data.per_step_labels);
    assert_int_equal(s->data.input_tokens, 100);
    assert_int_equal(s->data.block_size, 20);
    assert_roundtrip(s, "ctf");
    spec_free(s);
    s = parse("{" SEQ_MODEL(100, 3) ",\"data\":{\"format\":\"npz\",\"train\":\"t\","
              "\"num_classes\":3,\"bucket_by_length\":false,\"scaling\":\"none\"}}", &err);
    assert_non_null(s);
    assert_false(s->data.bucket_by_length);
    assert_roundtrip(s, "npz sequences");
    spec_free(s);
    /* A text model's output is per step: until the model has one, a flat
     * output is refused with the reason. */
    expect_data_error("{" SEQ_MODEL(256, 256) ",\"data\":{\"format\":\"text\",\"train\":\"t\"}}",
                      "model.layers[1]", "needs an output at every step");
    static const struct {
        const char *data, *path, *expect;
    } bad[] = {
        {"\"format\":\"npz\",\"scaling\":\"unit\"", "data.scaling", "does not apply to sequences"},
        {"\"format\":\"npz\",\"scaling\":\"standard\"", "data.scaling", "\"standard\""},
        {"\"format\":\"ctf\",\"features\":\"a b\"", "data.features", "CTF stream name"},
        {"\"format\":\"ctf\",\"labels\":\"\"", "data.labels", "empty"},
        {"\"format\":\"ctf\",\"labels\":3", "data.labels", ""},
        {"\"format\":\"npz\",\"features\":\"x\"", "data.features", "only for data.format ctf"},
        {"\"format\":\"npz\",\"tokenizer\":\"byte\"", "data.tokenizer", "only for data.format"},
        {"\"format\":\"text\",\"tokenizer\":\"word\"", "data.tokenizer", "word"},
        {"\"format\":\"text\",\"block_size\":0", "data.block_size", ""},
        {"\"format\":\"text\",\"max_length\":8,\"block_size\":9", "data.block_size", ""},
        {"\"format\":\"text\",\"per_step_labels\":false", "data.per_step_labels", "cannot be"},
        {"\"format\":\"npz\",\"per_step_labels\":1", "data.per_step_labels", ""},
        {"\"format\":\"npz\",\"bucket_by_length\":\"yes\"", "data.bucket_by_length", ""},
        {"\"format\":\"npz\",\"per_step_labels\":true", "model.layers[1]", "every step"},
    };
    for (size_t i = 0; i < sizeof bad / sizeof *bad; i++) {
        char json[512];
        snprintf(json, sizeof json, "{" SEQ_MODEL(300, 3) ",\"data\":{\"train\":\"t\","
                 "\"num_classes\":3,%s}}", bad[i].data);
        expect_data_error(json, bad[i].path, bad[i].expect);
    }
    /* A model with an output per step trains with softmax cross-entropy
     * and accuracy over real steps; other losses and metrics are refused
     * at submit, by field. */
#define STEP_MODEL "\"model\":{\"input\":{\"tokens\":300},\"layers\":[{\"type\":" \
                   "\"embedding\",\"output_dim\":4},{\"type\":\"dense\",\"units\":3}]}," \
                   "\"data\":{\"format\":\"npz\",\"train\":\"t\",\"num_classes\":3," \
                   "\"per_step_labels\":true}"
    expect_data_error("{" STEP_MODEL ",\"training\":{\"loss\":\"categorical_hinge\"}}",
                      "training.loss", "categorical_crossentropy only");
    expect_data_error("{" STEP_MODEL ",\"training\":{\"metrics\":[\"accuracy\",\"mae\"]}}",
                      "training.metrics", "accuracy over real steps");
    expect_data_error("{" STEP_MODEL ",\"distributed\":{\"trainer\":\"ensemble\","
                      "\"workers\":2}}", "distributed.trainer", "ensemble");
#undef STEP_MODEL
    expect_data_error("{" SEQ_MODEL(300, 3) ",\"data\":{\"format\":\"text\",\"train\":"
                      "\"t\",\"tokenizer\":\"char\"}}", "data.num_classes", "char tokenizer");
    expect_data_error("{" SEQ_MODEL(300, 3) ",\"data\":{\"format\":\"csv\",\"train\":"
                      "\"t\",\"num_classes\":3,\"per_step_labels\":true}}",
                      "data.per_step_labels", "one label a sample");
    expect_data_error("{" SEQ_MODEL(100, 3) ",\"data\":{\"format\":\"synthetic\","
                      "\"num_classes\":3}}", "model.input.tokens", "ids 0..255");
    /* CTF and text need a sequence input; text token ids. */
    expect_data_error("{\"model\":{\"input\":[4],\"layers\":[{\"type\":\"dense\",\"units\":"
                      "10}]},\"data\":{\"format\":\"ctf\",\"train\":\"t\"}}",
                      "model.input", "holds sequences");
    expect_data_error("{\"model\":{\"input\":{\"sequence\":[4]},\"layers\":[{\"type\":"
                      "\"flatten\"},{\"type\":\"dense\",\"units\":256}]},\"data\":{\"format\":"
                      "\"text\",\"train\":\"t\"}}", "model.input", "token ids");
    expect_data_error("{" SEQ_MODEL(100, 256) ",\"data\":{\"format\":\"text\",\"train\":\"t\"}}",
                      "model.input.tokens", "256 ids");
    expect_data_error("{\"model\":\"mlp\",\"data\":{\"train\":\"t\",\"per_step_labels\":true}}",
                      "data.per_step_labels", "sequence input");
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_defaults),     cmocka_unit_test(test_presets),
        cmocka_unit_test(test_regression),
        cmocka_unit_test(test_zoo_presets),  cmocka_unit_test(test_zoo_simplecnn_names),
        cmocka_unit_test(test_shapes),       cmocka_unit_test(test_roundtrip),
        cmocka_unit_test(test_ranks),
        cmocka_unit_test(test_distributed_knobs),
        cmocka_unit_test(test_errors),
        cmocka_unit_test(test_hostile_bytes), cmocka_unit_test(test_dataset_names),
        cmocka_unit_test(test_summary),      cmocka_unit_test(test_schedule_aliases),
        cmocka_unit_test(test_name_aliases),
        cmocka_unit_test(test_pydtnn_options),
        cmocka_unit_test(test_augment),
        cmocka_unit_test(test_sequence_data),
        cmocka_unit_test(test_rnn_layers),
        cmocka_unit_test(test_sequence_presets),
        cmocka_unit_test(test_optim_fields),
        cmocka_unit_test(test_precision),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
