/* spec_presets.c — the named model presets, expanded into ordinary layers
 * so everything downstream (summary, weights keys, the engine) sees one
 * representation: our three small ones written as spec JSON, and PyDTNN's
 * model zoo under its names, built layer by layer because ResNet, DenseNet
 * and GoogLeNet repeat blocks hundreds of layers long. The last dense
 * layer has data.num_classes units. */
#include <stdlib.h>
#include <string.h>

#include "jobspec/spec_internal.h"

/* PyDTNN's model zoo (pydtnn/models/), rebuilt from its layer lists. Its
 * padding 1 on a 3x3 window is "same"; on a strided window "same" pads
 * the far edge where PyDTNN pads both, which keeps every shape and
 * parameter count. Layers are appended to a JSON array; each takes the
 * previous layer unless `from` names another (a branch). */
/* A preset's knobs ("n_layer", ... beside "preset" in the model object),
 * resolved with their defaults (preset_knobs_parse). */
typedef struct preset_knobs {
    int n_layer, n_head, n_embd, max_length, block_size;
    double dropout;
} preset_knobs;

typedef struct zoo {
    json_t *layers;
    const job_spec *spec;
    bool ok;
    const preset_knobs *knobs;
} zoo;

#define PREV (-2) /* the layer just appended; -1 is the model input */

static int zoo_push(zoo *z, json_t *layer, int from)
{
    if (!layer) {
        z->ok = false;
        return -1;
    }
    if (from != PREV && json_object_set_new(layer, "inputs", json_pack("[i]", from)) != 0)
        z->ok = false;
    if (json_array_append_new(z->layers, layer) != 0)
        z->ok = false;
    return (int)json_array_size(z->layers) - 1;
}

static int zoo_conv(zoo *z, int from, int filters, int k, int stride, const char *padding,
                    bool relu, bool bias)
{
    return zoo_push(z, json_pack("{s:s,s:i,s:i,s:i,s:s,s:s,s:b}", "type", "conv2d", "filters",
                                 filters, "kernel", k, "stride", stride, "padding", padding,
                                 "activation", relu ? "relu" : "none", "use_bias", bias),
                    from);
}

static int zoo_plain(zoo *z, int from, const char *type)
{
    return zoo_push(z, json_pack("{s:s}", "type", type), from);
}

static int zoo_pool(zoo *z, int from, const char *type, int k, int stride, const char *padding)
{
    return zoo_push(z, json_pack("{s:s,s:i,s:i,s:s}", "type", type, "pool", k, "stride", stride,
                                 "padding", padding),
                    from);
}

static int zoo_dense(zoo *z, int units, const char *activation)
{
    return zoo_push(z, json_pack("{s:s,s:i,s:s}", "type", "dense", "units", units, "activation",
                                 activation),
                    PREV);
}

static int zoo_dropout(zoo *z, double rate)
{
    return zoo_push(z, json_pack("{s:s,s:f}", "type", "dropout", "rate", rate), PREV);
}

static int zoo_merge(zoo *z, const char *type, const int *from, int n)
{
    json_t *inputs = json_array();
    for (int i = 0; inputs && i < n; i++)
        if (json_array_append_new(inputs, json_integer(from[i])) != 0)
            z->ok = false;
    return zoo_push(z, inputs ? json_pack("{s:s,s:o}", "type", type, "inputs", inputs) : NULL,
                    PREV);
}

/* A "same" convolution, batchnorm, and a ReLU when asked. */
static int zoo_conv_bn(zoo *z, int from, int filters, int k, int stride, bool relu, bool bias)
{
    zoo_conv(z, from, filters, k, stride, "same", false, bias);
    int last = zoo_plain(z, PREV, "batchnorm");
    return relu ? zoo_plain(z, PREV, "relu") : last;
}

/* Flatten and the softmax classifier with data.num_classes units. */
static void zoo_classifier(zoo *z)
{
    zoo_plain(z, PREV, "flatten");
    zoo_dense(z, z->spec->data.num_classes, "softmax");
}

/* Global average pooling after `downsample` halvings of the input. */
static void zoo_global_pool(zoo *z, int downsample)
{
    int h = z->spec->input.dim[1], w = z->spec->input.dim[2];
    for (int i = 0; i < downsample; i++) {
        h = (h + 1) / 2;
        w = (w + 1) / 2;
    }
    /* A flat input leaves no extent; the convolutions before will say so. */
    if (h < 1 || w < 1)
        h = w = 1;
    zoo_push(z, json_pack("{s:s,s:[ii]}", "type", "avgpool2d", "pool", h, w), PREV);
}

static void build_simplemlp(zoo *z)
{
    zoo_plain(z, PREV, "flatten");
    for (int i = 0; i < 3; i++)
        zoo_dense(z, 512, "relu");
    zoo_dense(z, z->spec->data.num_classes, "softmax");
}

/* As PyDTNN prints it: no activation after either convolution. */
static void build_simplecnn_pydtnn(zoo *z)
{
    zoo_conv(z, PREV, 4, 3, 1, "same", false, true);
    zoo_conv(z, PREV, 4, 3, 1, "same", false, true);
    zoo_pool(z, PREV, "maxpool2d", 2, 2, "valid");
    zoo_plain(z, PREV, "flatten");
    zoo_dense(z, 128, "relu");
    zoo_dropout(z, 0.5);
    zoo_dense(z, z->spec->data.num_classes, "softmax");
}

/* Two ReLU dense layers of `units`, each followed by dropout 0.5. */
static void zoo_relu_head(zoo *z, int units)
{
    zoo_plain(z, PREV, "flatten");
    for (int i = 0; i < 2; i++) {
        zoo_dense(z, units, "relu");
        zoo_dropout(z, 0.5);
    }
    zoo_dense(z, z->spec->data.num_classes, "softmax");
}

/* AlexNet: five ReLU convolutions (the first strided), max pools after
 * the first, second and fifth, and the 4096-unit head. */
typedef struct alexnet {
    int filters[5], kernel[5], stride;
    const char *stem_padding;
    int pool;
} alexnet;

static void zoo_alexnet(zoo *z, const alexnet *a)
{
    for (int i = 0; i < 5; i++) {
        zoo_conv(z, PREV, a->filters[i], a->kernel[i], i ? 1 : a->stride,
                 i ? "same" : a->stem_padding, true, true);
        if (i < 2 || i == 4)
            zoo_pool(z, PREV, "maxpool2d", a->pool, 2, "valid");
    }
    zoo_relu_head(z, 4096);
}

static void build_alexnet_cifar10(zoo *z)
{
    zoo_alexnet(z, &(alexnet){{64, 192, 384, 256, 256}, {3, 3, 3, 3, 3}, 2, "same", 2});
}

static void build_alexnet_imagenet(zoo *z)
{
    zoo_alexnet(z, &(alexnet){{96, 256, 384, 384, 256}, {11, 5, 3, 3, 3}, 4, "valid", 3});
}

/* VGG's five stages of 3x3 convolutions, each closed by a 2x2 max pool.
 * With batchnorm the head is PyDTNN's dropout-dense-batchnorm-ReLU. */
static void zoo_vgg(zoo *z, const int *convs, bool bn, int head)
{
    static const int filters[5] = {64, 128, 256, 512, 512};
    for (int s = 0; s < 5; s++) {
        for (int i = 0; i < convs[s]; i++) {
            if (bn)
                zoo_conv_bn(z, PREV, filters[s], 3, 1, true, true);
            else
                zoo_conv(z, PREV, filters[s], 3, 1, "same", true, true);
        }
        zoo_pool(z, PREV, "maxpool2d", 2, 2, "valid");
    }
    if (!bn) {
        zoo_relu_head(z, head);
        return;
    }
    zoo_plain(z, PREV, "flatten");
    for (int i = 0; i < 2; i++) {
        zoo_dropout(z, 0.5);
        zoo_dense(z, head, "none");
        zoo_plain(z, PREV, "batchnorm");
        zoo_plain(z, PREV, "relu");
    }
    zoo_dense(z, z->spec->data.num_classes, "softmax");
}

static const int vgg11_convs[5] = {1, 1, 2, 2, 2};
static const int vgg16_convs[5] = {2, 2, 3, 3, 3};

/* PyDTNN's printed vgg16_cifar10 (15,245,130 parameters) has a 512-unit
 * head; the CIFAR VGGs share it. */
static void build_vgg11_cifar10(zoo *z) { zoo_vgg(z, vgg11_convs, false, 512); }
static void build_vgg11bn_cifar10(zoo *z) { zoo_vgg(z, vgg11_convs, true, 512); }
static void build_vgg16_cifar10(zoo *z) { zoo_vgg(z, vgg16_convs, false, 512); }
static void build_vgg16bn_cifar10(zoo *z) { zoo_vgg(z, vgg16_convs, true, 512); }
static void build_vgg16_imagenet(zoo *z) { zoo_vgg(z, vgg16_convs, false, 4096); }

/* Residual stages: blocks[s] blocks of `filters` << s channels, the first
 * of each stage after the first striding by 2 with a 1x1 projection on
 * the shortcut; `project_first` projects every stage's first block, as
 * PyDTNN's ResNet-56 and -50 do. Bottleneck blocks (ResNet-50) are
 * 1x1-3x3-1x1 with four times the channels out. */
static void zoo_resnet(zoo *z, int filters, const int *blocks, bool bottleneck,
                       bool project_first)
{
    for (int s = 0; s < 4 && blocks[s]; s++) {
        int n = filters << s, out = bottleneck ? 4 * n : n;
        for (int b = 0; b < blocks[s]; b++) {
            int stride = s > 0 && b == 0 ? 2 : 1;
            int in = (int)json_array_size(z->layers) - 1;
            int last;
            if (bottleneck) {
                zoo_conv_bn(z, in, n, 1, 1, true, true);
                zoo_conv_bn(z, PREV, n, 3, stride, true, true);
                last = zoo_conv_bn(z, PREV, out, 1, 1, false, true);
            } else {
                zoo_conv_bn(z, in, n, 3, stride, true, true);
                last = zoo_conv_bn(z, PREV, n, 3, 1, false, true);
            }
            int shortcut = in;
            if (stride != 1 || (project_first && b == 0))
                shortcut = zoo_conv_bn(z, in, out, 1, stride, false, true);
            zoo_merge(z, "add", (int[]){last, shortcut}, 2);
            zoo_plain(z, PREV, "relu");
        }
    }
}

/* PyDTNN's CIFAR ResNets: a 3x3 stem with batchnorm (no ReLU), three
 * stages of 16/32/64, and a 64-unit dense-batchnorm-ReLU before the
 * classifier. */
static void zoo_resnet_cifar(zoo *z, int per_stage, bool project_first)
{
    zoo_conv_bn(z, PREV, 16, 3, 1, false, true);
    zoo_resnet(z, 16, (int[]){per_stage, per_stage, per_stage, 0}, false, project_first);
    zoo_global_pool(z, 2);
    zoo_plain(z, PREV, "flatten");
    zoo_dense(z, 64, "none");
    zoo_plain(z, PREV, "batchnorm");
    zoo_plain(z, PREV, "relu");
    zoo_dense(z, z->spec->data.num_classes, "softmax");
}

static void build_resnet20_cifar10(zoo *z) { zoo_resnet_cifar(z, 3, false); }
static void build_resnet32_cifar10(zoo *z) { zoo_resnet_cifar(z, 5, false); }
static void build_resnet56_cifar10(zoo *z) { zoo_resnet_cifar(z, 9, true); }

/* PyDTNN's ResNet-18/34 for ImageNet keep its CIFAR stem: a stride-1 3x3
 * convolution with batchnorm and no max pool. */
static void zoo_resnet_basic_imagenet(zoo *z, const int *blocks)
{
    zoo_conv_bn(z, PREV, 64, 3, 1, false, true);
    zoo_resnet(z, 64, blocks, false, false);
    zoo_global_pool(z, 3);
    zoo_classifier(z);
}

static void build_resnet18_imagenet(zoo *z) { zoo_resnet_basic_imagenet(z, (int[]){2, 2, 2, 2}); }
static void build_resnet34_imagenet(zoo *z) { zoo_resnet_basic_imagenet(z, (int[]){3, 4, 6, 3}); }

/* ResNet-50 v1.5 (the stride on the 3x3): a 7x7 stride-2 stem without
 * batchnorm, as PyDTNN has it, then a 3x3 stride-2 max pool. */
static void build_resnet50_imagenet(zoo *z)
{
    zoo_conv(z, PREV, 64, 7, 2, "same", false, true);
    zoo_pool(z, PREV, "maxpool2d", 3, 2, "same");
    zoo_resnet(z, 64, (int[]){3, 4, 6, 3}, true, true);
    zoo_global_pool(z, 5);
    zoo_classifier(z);
}

/* DenseNet-121 (growth 32, compression 0.5), convolutions without bias:
 * each dense layer's batchnorm-ReLU-1x1-batchnorm-ReLU-3x3 output is
 * concatenated to its input. */
static void build_densenet121_cifar10(zoo *z)
{
    static const int blocks[4] = {6, 12, 24, 16};
    const int growth = 32;
    int planes = 2 * growth;
    zoo_conv(z, PREV, planes, 3, 1, "same", false, false);
    for (int s = 0; s < 4; s++) {
        for (int b = 0; b < blocks[s]; b++) {
            int in = (int)json_array_size(z->layers) - 1;
            zoo_plain(z, PREV, "batchnorm");
            zoo_plain(z, PREV, "relu");
            zoo_conv(z, PREV, 4 * growth, 1, 1, "same", false, false);
            zoo_plain(z, PREV, "batchnorm");
            zoo_plain(z, PREV, "relu");
            int out = zoo_conv(z, PREV, growth, 3, 1, "same", false, false);
            zoo_merge(z, "concat", (int[]){out, in}, 2);
        }
        planes += blocks[s] * growth;
        if (s == 3)
            break;
        planes /= 2;
        zoo_plain(z, PREV, "batchnorm");
        zoo_plain(z, PREV, "relu");
        zoo_conv(z, PREV, planes, 1, 1, "same", false, false);
        zoo_pool(z, PREV, "avgpool2d", 2, 2, "valid");
    }
    zoo_plain(z, PREV, "batchnorm");
    zoo_plain(z, PREV, "relu");
    zoo_pool(z, PREV, "avgpool2d", 4, 4, "valid");
    zoo_classifier(z);
}

/* GoogLeNet for CIFAR: inception blocks of four branches (1x1; 1x1-3x3;
 * 1x1-3x3-3x3 for the 5x5; 3x3 max pool-1x1), every convolution with
 * batchnorm and ReLU; a zero row is a 3x3 stride-2 max pool. */
static void build_googlenet_cifar10(zoo *z)
{
    static const int inception[11][6] = {
        {64, 96, 128, 16, 32, 32},     {128, 128, 192, 32, 96, 64},  {0},
        {192, 96, 208, 16, 48, 64},    {160, 112, 224, 24, 64, 64},  {128, 128, 256, 24, 64, 64},
        {112, 144, 288, 32, 64, 64},   {256, 160, 320, 32, 128, 128}, {0},
        {256, 160, 320, 32, 128, 128}, {384, 192, 384, 48, 128, 128},
    };
    zoo_conv_bn(z, PREV, 192, 3, 1, true, true);
    for (int i = 0; i < 11; i++) {
        const int *c = inception[i];
        if (!c[0]) {
            zoo_pool(z, PREV, "maxpool2d", 3, 2, "same");
            continue;
        }
        int in = (int)json_array_size(z->layers) - 1, out[4];
        out[0] = zoo_conv_bn(z, in, c[0], 1, 1, true, true);
        zoo_conv_bn(z, in, c[1], 1, 1, true, true);
        out[1] = zoo_conv_bn(z, PREV, c[2], 3, 1, true, true);
        zoo_conv_bn(z, in, c[3], 1, 1, true, true);
        zoo_conv_bn(z, PREV, c[4], 3, 1, true, true);
        out[2] = zoo_conv_bn(z, PREV, c[4], 3, 1, true, true);
        zoo_pool(z, in, "maxpool2d", 3, 1, "same");
        out[3] = zoo_conv_bn(z, PREV, c[5], 1, 1, true, true);
        zoo_merge(z, "concat", out, 4);
    }
    zoo_pool(z, PREV, "avgpool2d", 8, 1, "valid");
    zoo_plain(z, PREV, "flatten");
    zoo_dense(z, 1024, "none");
    zoo_plain(z, PREV, "batchnorm");
    zoo_plain(z, PREV, "relu");
    zoo_dense(z, z->spec->data.num_classes, "softmax");
}

/* MobileNetV1: a strided 3x3 convolution with ReLU, then 13 depthwise
 * separable blocks (a depthwise 3x3 convolution, groups = channels, and a
 * pointwise 1x1, each without bias and followed by batchnorm and ReLU);
 * the first block of a stage of several strides 2. PyDTNN's 1x1 average
 * pool before the classifier is the identity and left out; its hidden
 * dense layer has no activation. */
static void build_mobilenetv1_cifar10(zoo *z)
{
    static const int stages[5][2] = {{64, 1}, {128, 2}, {256, 2}, {512, 6}, {1024, 2}};
    int channels = 32;
    zoo_conv(z, PREV, channels, 3, 2, "same", true, false);
    for (int s = 0; s < 5; s++) {
        for (int r = 0; r < stages[s][1]; r++) {
            int stride = stages[s][1] > 1 && r == 0 ? 2 : 1;
            zoo_push(z, json_pack("{s:s,s:i,s:i,s:i,s:i,s:s,s:b}", "type", "conv2d", "filters",
                                  channels, "kernel", 3, "stride", stride, "groups", channels,
                                  "padding", "same", "use_bias", false),
                     PREV);
            zoo_plain(z, PREV, "batchnorm");
            zoo_plain(z, PREV, "relu");
            zoo_conv_bn(z, PREV, stages[s][0], 1, 1, true, false);
            channels = stages[s][0];
        }
    }
    zoo_plain(z, PREV, "flatten");
    zoo_dense(z, 1024, "none");
    zoo_dense(z, z->spec->data.num_classes, "softmax");
}

/* Transformers (docs/transformers.md). One pre-LayerNorm block, GPT-2's
 * and nanoGPT's: x + attention(layer_norm(x)), then that + mlp(layer_norm
 * (that)), the mlp a dense of 4 x n_embd with gelu and a dense back to
 * n_embd. With dropout, nanoGPT's three: on the attention weights and
 * after each residual branch. Returns the block's output index. */
static int zoo_transformer_block(zoo *z, int x, bool causal)
{
    const preset_knobs *k = z->knobs;
    zoo_plain(z, x, "layer_norm");
    zoo_push(z, json_pack("{s:s,s:i,s:b,s:f}", "type", "multi_head_attention", "heads",
                          k->n_head, "causal", causal, "dropout", k->dropout),
             PREV);
    if (k->dropout > 0)
        zoo_dropout(z, k->dropout);
    int a = zoo_merge(z, "add", (int[]){x, (int)json_array_size(z->layers) - 1}, 2);
    zoo_plain(z, PREV, "layer_norm");
    zoo_dense(z, 4 * k->n_embd, "gelu");
    int p = zoo_dense(z, k->n_embd, "none");
    if (k->dropout > 0)
        p = zoo_dropout(z, k->dropout);
    return zoo_merge(z, "add", (int[]){a, p}, 2);
}

/* Token vectors of n_embd and learned position vectors over max_length
 * steps: the input end of the transformer presets. Returns the position
 * layer's index. */
static int zoo_token_positions(zoo *z, int max_length)
{
    zoo_push(z, json_pack("{s:s,s:i}", "type", "embedding", "output_dim", z->knobs->n_embd),
             PREV);
    return zoo_push(z, json_pack("{s:s,s:i}", "type", "positional_embedding", "max_length",
                                 max_length),
                    PREV);
}

/* An encoder classifier: token and learned position vectors, n_layer
 * blocks, the mean over each sample's real steps, a softmax head. */
static void build_transformer_classifier(zoo *z)
{
    const preset_knobs *k = z->knobs;
    int x = zoo_token_positions(z, k->max_length);
    for (int b = 0; b < k->n_layer; b++)
        x = zoo_transformer_block(z, x, false);
    zoo_plain(z, PREV, "global_avgpool1d");
    zoo_dense(z, z->spec->data.num_classes, "softmax");
}

/* nanoGPT's GPT: token and learned position vectors (dropout after
 * their sum), n_layer causal blocks, a final layer norm, and the output
 * projection tied to the token table, without a bias: logits over the
 * vocabulary at every step. */
static void build_gpt(zoo *z)
{
    const preset_knobs *k = z->knobs;
    int x = zoo_token_positions(z, k->block_size);
    if (k->dropout > 0)
        x = zoo_dropout(z, k->dropout);
    for (int b = 0; b < k->n_layer; b++)
        x = zoo_transformer_block(z, x, true);
    zoo_plain(z, PREV, "layer_norm");
    zoo_push(z, json_pack("{s:s,s:i,s:s,s:b,s:i}", "type", "dense", "units",
                          z->spec->input_tokens, "activation", "softmax", "use_bias", false,
                          "tie_embedding", 0),
             PREV);
}

/* The model inputs a preset's first layer can read. */
typedef enum preset_input {
    PRESET_ANY,      /* whatever its layers' shape inference accepts */
    PRESET_SEQUENCE, /* {"tokens": V} or {"sequence": [F]} */
    PRESET_TOKENS,   /* {"tokens": V} (its first layer is an embedding) */
} preset_input;

typedef struct preset {
    const char *name;
    const char *layers;       /* spec JSON with CLASSES replaced, or NULL */
    void (*build)(zoo *z);    /* appends the layers when `layers` is NULL */
    preset_input input;
    const char *const *knobs; /* the knobs it takes (NULL-terminated), or NULL */
} preset;

static const char *const transformer_knobs[] = {"n_layer", "n_head", "n_embd", "max_length",
                                                NULL};
static const char *const gpt_knobs[] = {"n_layer", "n_head", "n_embd", "block_size", "dropout",
                                        NULL};

/* Every preset is parsed like a user's model, so none can disagree with
 * the parser. */
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
    {"simplemlp", NULL, build_simplemlp},
    {"simplecnn_pydtnn", NULL, build_simplecnn_pydtnn},
    {"alexnet_cifar10", NULL, build_alexnet_cifar10},
    {"alexnet_imagenet", NULL, build_alexnet_imagenet},
    {"vgg11_cifar10", NULL, build_vgg11_cifar10},
    {"vgg11bn_cifar10", NULL, build_vgg11bn_cifar10},
    {"vgg16_cifar10", NULL, build_vgg16_cifar10},
    {"vgg16bn_cifar10", NULL, build_vgg16bn_cifar10},
    {"vgg16_imagenet", NULL, build_vgg16_imagenet},
    {"resnet20_cifar10", NULL, build_resnet20_cifar10},
    {"resnet32_cifar10", NULL, build_resnet32_cifar10},
    {"resnet56_cifar10", NULL, build_resnet56_cifar10},
    {"resnet18_imagenet", NULL, build_resnet18_imagenet},
    {"resnet34_imagenet", NULL, build_resnet34_imagenet},
    {"resnet50_imagenet", NULL, build_resnet50_imagenet},
    {"densenet121_cifar10", NULL, build_densenet121_cifar10},
    {"googlenet_cifar10", NULL, build_googlenet_cifar10},
    {"mobilenetv1_cifar10", NULL, build_mobilenetv1_cifar10},
    /* The seed CNTK notebook's Recurrence(LSTM(20)) -> sequence.last ->
     * Dense, on token ids (read one-hot, as CNTK's sparse input) or
     * feature sequences. */
    {"cntk_lstm",
     "[{\"type\":\"lstm\",\"units\":20},"
     "{\"type\":\"dense\",\"units\":CLASSES,\"activation\":\"softmax\"}]",
     NULL, PRESET_SEQUENCE},
    /* A text classifier: learned token vectors, one LSTM over the real
     * steps, a softmax on the last one. */
    {"lstm_classifier",
     "[{\"type\":\"embedding\",\"output_dim\":64},"
     "{\"type\":\"lstm\",\"units\":128},"
     "{\"type\":\"dense\",\"units\":CLASSES,\"activation\":\"softmax\"}]",
     NULL, PRESET_TOKENS},
    /* Per-step presets (data.per_step_labels: a label at every step).
     * A tagger: token vectors, a bidirectional LSTM that reads each step's
     * left and right context, a softmax over the tags at every step. */
    {"bilstm_tagger",
     "[{\"type\":\"embedding\",\"output_dim\":64},"
     "{\"type\":\"bidirectional\",\"layer\":{\"type\":\"lstm\",\"units\":128,"
     "\"return_sequences\":true}},"
     "{\"type\":\"dense\",\"units\":CLASSES,\"activation\":\"softmax\"}]",
     NULL, PRESET_TOKENS},
    /* A character language model (data.format "text": the next token at
     * every step): token vectors, two stacked LSTMs of 256, a softmax over
     * the vocabulary at every step. */
    {"char_lstm_lm",
     "[{\"type\":\"embedding\",\"output_dim\":64},"
     "{\"type\":\"lstm\",\"units\":256,\"return_sequences\":true},"
     "{\"type\":\"lstm\",\"units\":256,\"return_sequences\":true},"
     "{\"type\":\"dense\",\"units\":CLASSES,\"activation\":\"softmax\"}]",
     NULL, PRESET_TOKENS},
    /* nanoGPT's GPT (knobs n_layer 2, n_head 4, n_embd 128, block_size
     * data.max_length, dropout 0): the next token at every step, so it
     * needs data.per_step_labels and data.num_classes = the vocabulary. */
    {"gpt", NULL, build_gpt, PRESET_TOKENS, gpt_knobs},
    /* Transformers: a pre-LayerNorm encoder, mean-pooled (knobs n_layer 2,
     * n_head 4, n_embd 128, max_length data.max_length). */
    {"transformer_classifier", NULL, build_transformer_classifier, PRESET_TOKENS,
     transformer_knobs},
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

/* The model input as the user would write it, so the preset's layers
 * parse against the same input: {"tokens": V}, {"sequence": [F]} or the
 * shape's array. NULL when out of memory. */
static json_t *preset_input_json(const job_spec *spec)
{
    if (spec->input.rank == 2 && spec->input_tokens > 0)
        return json_pack("{s:i}", "tokens", spec->input_tokens);
    if (spec->input.rank == 2)
        return json_pack("{s:[i]}", "sequence", spec->input.dim[1]);
    json_t *input = json_array();
    for (int i = 0; input && i < spec->input.rank; i++)
        if (json_array_append_new(input, json_integer(spec->input.dim[i])) != 0) {
            json_decref(input);
            return NULL;
        }
    return input;
}

/* The preset's layers as a JSON array, or NULL when out of memory. */
static json_t *preset_layers(const preset *p, const job_spec *spec, const preset_knobs *knobs)
{
    if (p->layers) {
        char *text = substitute_classes(p->layers, spec->data.num_classes);
        if (!text)
            return NULL;
        json_error_t jerr;
        json_t *layers = json_loads(text, 0, &jerr);
        free(text);
        return layers;
    }
    zoo z = {json_array(), spec, true, knobs};
    if (z.layers)
        p->build(&z);
    if (!z.ok) {
        json_decref(z.layers);
        return NULL;
    }
    return z.layers;
}

/* Every knob any preset takes, and its range. */
static const struct {
    const char *name;
    long min, max;
} knob_ranges[] = {
    {"n_layer", 1, 64}, {"n_head", 1, 64}, {"n_embd", 1, 8192},
    {"max_length", 1, 1 << 20}, {"block_size", 1, 1 << 20},
};

static bool preset_takes(const preset *p, const char *knob)
{
    for (const char *const *k = p->knobs; k && *k; k++)
        if (strcmp(*k, knob) == 0)
            return true;
    return false;
}

/* The knobs given beside "preset" in `model` (NULL: none), each in its
 * range and taken by this preset, into *k over the defaults. */
static bool preset_knobs_parse(const preset *p, const json_t *model, const job_spec *spec,
                               preset_knobs *k, spec_error *err)
{
    *k = (preset_knobs){2, 4, 128, spec->data.max_length, spec->data.max_length, 0.0};
    long v[5] = {k->n_layer, k->n_head, k->n_embd, k->max_length, k->block_size};
    for (size_t i = 0; i < sizeof knob_ranges / sizeof *knob_ranges; i++) {
        const char *name = knob_ranges[i].name;
        if (!model || !json_object_get(model, name))
            continue;
        if (!preset_takes(p, name)) {
            char path[160];
            spec_path_key(path, sizeof path, "model", name);
            return spec_fail(err, path, "preset %s has no knob %s", p->name, name);
        }
        if (!spec_get_int(model, "model", name, knob_ranges[i].min, knob_ranges[i].max,
                          &v[i], err))
            return false;
    }
    if (model && json_object_get(model, "dropout")) {
        if (!preset_takes(p, "dropout"))
            return spec_fail(err, "model.dropout", "preset %s has no knob dropout", p->name);
        if (!spec_get_double(model, "model", "dropout", 0, 1, false, true, &k->dropout, err))
            return false;
    }
    *k = (preset_knobs){(int)v[0], (int)v[1], (int)v[2], (int)v[3], (int)v[4], k->dropout};
    if (k->n_embd % k->n_head != 0)
        return spec_fail(err, "model.n_embd", "%d does not split into n_head %d heads",
                         k->n_embd, k->n_head);
    if (preset_takes(p, "max_length") && k->max_length < spec->data.max_length)
        return spec_fail(err, "model.max_length", "%d is shorter than data.max_length (%d)",
                         k->max_length, spec->data.max_length);
    if (preset_takes(p, "block_size") && k->block_size < spec->data.max_length)
        return spec_fail(err, "model.block_size", "%d is shorter than data.max_length (%d)",
                         k->block_size, spec->data.max_length);
    if (preset_takes(p, "block_size") &&
        (!spec->data.per_step_labels || spec->data.num_classes != spec->input_tokens))
        return spec_fail(err, "model.preset", "%s predicts the next token at every step: it "
                                              "needs data.per_step_labels and data.num_classes "
                                              "= the vocabulary (%d)", p->name,
                         spec->input_tokens);
    return true;
}

/* The knob names, for the model object's allowed keys. */
bool spec_preset_is_knob(const char *key)
{
    for (size_t i = 0; i < sizeof knob_ranges / sizeof *knob_ranges; i++)
        if (strcmp(key, knob_ranges[i].name) == 0)
            return true;
    return strcmp(key, "dropout") == 0;
}

bool spec_preset_model(const char *name, const char *path, const json_t *knobs_in,
                       const job_spec *spec, json_t **model_out, spec_error *err)
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
    if (p->input == PRESET_SEQUENCE && spec->input.rank != 2)
        return spec_fail(err, path, "%s needs a sequence model input, {\"tokens\": "
                                    "vocabulary_size} or {\"sequence\": [features]}",
                         name);
    if (p->input == PRESET_TOKENS && spec->input_tokens <= 0)
        return spec_fail(err, path, "%s reads token ids: give model.input {\"tokens\": "
                                    "vocabulary_size}", name);
    preset_knobs knobs;
    if (!preset_knobs_parse(p, knobs_in, spec, &knobs, err))
        return false;
    json_t *layers = preset_layers(p, spec, &knobs);
    json_t *input = preset_input_json(spec);
    json_t *model = layers && input ? json_pack("{s:o,s:o}", "layers", layers, "input", input)
                                    : NULL;
    if (!layers || !input) {
        json_decref(layers);
        json_decref(input);
    }
    if (!model)
        return spec_fail(err, path, "internal error: preset %s does not parse", name);
    *model_out = model;
    return true;
}
