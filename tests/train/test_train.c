/* test_train.c — the single-process trainer end to end on synthetic data:
 * the same seed and thread count give bit-identical weights; a run
 * resumed from its checkpoint (at an epoch end, or after SIGTERM at a
 * chosen step mid-epoch) reaches the same weights and history as an
 * uninterrupted one; the run directory holds what schema/rundir.md says;
 * early stopping and steps_per_epoch shape the history. */
#include <setjmp.h>
#include <signal.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cmocka.h>
#include <jansson.h>

#include "train/train.h"
#include "io/tensorfile.h"
#include "../layers/spec_fixture.h"
#include "rundir_test_util.h"

/* A small net with every kind of state: conv, batchnorm (running stats),
 * dropout (masks from the step), residual add, Adam (moments). */
#define NET                                                                                 \
    "{\"input\": [1, 8, 8], \"layers\": ["                                                  \
    "{\"type\": \"conv2d\", \"filters\": 4, \"kernel\": 3, \"padding\": \"same\", "         \
    "\"activation\": \"relu\"},"                                                            \
    "{\"type\": \"batchnorm\"},"                                                            \
    "{\"type\": \"conv2d\", \"filters\": 4, \"kernel\": 3, \"padding\": \"same\"},"         \
    "{\"type\": \"add\", \"inputs\": [1, 2]},"                                              \
    "{\"type\": \"maxpool2d\", \"pool\": 2}, {\"type\": \"flatten\"},"                      \
    "{\"type\": \"dense\", \"units\": 16, \"activation\": \"relu\"},"                       \
    "{\"type\": \"dropout\", \"rate\": 0.3},"                                               \
    "{\"type\": \"dense\", \"units\": 3, \"activation\": \"softmax\"}]}"

/* Each test's run directories. */
static char *tempdir(void)
{
    return rt_tempdir("punch-train-test");
}

static job_spec *job_with(int epochs, int batch, double lr, const char *extra_training)
{
    return spec_fixture_parsef(
        "{\"name\": \"t\", \"model\": " NET ", \"data\": {\"format\": \"synthetic\", "
        "\"synthetic_train\": 300, \"synthetic_test\": 50, \"num_classes\": 3, "
        "\"validation_split\": 0.2}, \"training\": {\"epochs\": %d, \"batch_size\": %d, "
        "\"optimizer\": {\"name\": \"adam\", \"learning_rate\": %g}, \"seed\": 5%s}}",
        epochs, batch, lr, extra_training ? extra_training : "");
}

static job_spec *job(int epochs, const char *extra_training)
{
    return job_with(epochs, 32, 0.001, extra_training);
}



static void train(const job_spec *s, const char *dir, int threads, bool resume)
{
    train_options o = {.out_dir = dir, .threads = threads, .resume = resume};
    char err[512];
    if (train_single(s, &o, err, sizeof err) != 0)
        fail_msg("train_single: %s", err);
}

static void expect_same_weights(const char *a, const char *b)
{
    const char *name = rt_weights_differ(a, b);
    if (name)
        fail_msg("%s differs between %s and %s", name, a, b);
}

static json_t *history(const char *dir)
{
    return rt_history(dir);
}

static void test_reproducible(void **state)
{
    (void)state;
    job_spec *s = job(2, NULL);
    char *a = tempdir(), *b = tempdir(), *c = tempdir();
    train(s, a, 2, false);
    train(s, b, 2, false);
    expect_same_weights(a, b);
    /* One thread computes the same function (the weights agree closely). */
    train(s, c, 1, false);
    json_t *ha = history(a), *hc = history(c);
    double la = json_real_value(json_array_get(json_object_get(ha, "loss"), 1));
    double lc = json_real_value(json_array_get(json_object_get(hc, "loss"), 1));
    assert_true(la > 0 && fabs(la - lc) < 1e-3 * la);
    json_decref(ha);
    json_decref(hc);
    rt_removedir(a);
    rt_removedir(b);
    rt_removedir(c);
    spec_free(s);
}

/* full trained into a uninterrupted; part (full stopped after fewer
 * epochs) into b, then b resumed with full to its end: the same weights. */
static void expect_resumed_same_weights(const job_spec *full, const job_spec *part,
                                        const char *a, const char *b)
{
    train(full, a, 2, false);
    train(part, b, 2, false);
    train(full, b, 2, true);
    expect_same_weights(a, b);
}

static void test_resume_equals_uninterrupted(void **state)
{
    (void)state;
    job_spec *full = job(4, NULL), *part = job(2, NULL);
    char *a = tempdir(), *b = tempdir();
    expect_resumed_same_weights(full, part, a, b);
    json_t *ha = history(a), *hb = history(b);
    const char *keys[] = {"loss", "accuracy", "val_loss", "val_accuracy", "lr"};
    for (size_t k = 0; k < sizeof keys / sizeof keys[0]; k++) {
        json_t *sa = json_object_get(ha, keys[k]), *sb = json_object_get(hb, keys[k]);
        assert_int_equal(json_array_size(sa), 4);
        assert_int_equal(json_array_size(sb), 4);
        for (size_t i = 0; i < 4; i++)
            assert_true(json_real_value(json_array_get(sa, i)) ==
                        json_real_value(json_array_get(sb, i)));
    }
    assert_true(json_real_value(json_object_get(json_object_get(ha, "test"), "loss")) ==
                json_real_value(json_object_get(json_object_get(hb, "test"), "loss")));
    json_decref(ha);
    json_decref(hb);

    /* A checkpoint of another job is refused, not silently used. */
    job_spec *other = job_with(4, 16, 0.001, NULL);
    train_options o = {.out_dir = b, .threads = 1, .resume = true};
    char err[512];
    assert_int_equal(train_single(other, &o, err, sizeof err), -1);
    assert_non_null(strstr(err, "different job"));
    spec_free(other);

    /* A format 1 checkpoint (unaligned parameters) is refused by name. */
    char path[4096];
    snprintf(path, sizeof path, "%s/checkpoints/ckpt.bin", b);
    FILE *fp = fopen(path, "r+b");
    assert_non_null(fp);
    uint64_t v1 = 1;
    assert_int_equal(fseek(fp, 8, SEEK_SET), 0);
    assert_int_equal(fwrite(&v1, sizeof v1, 1, fp), 1);
    assert_int_equal(fclose(fp), 0);
    assert_int_equal(train_single(full, &o, err, sizeof err), -1);
    assert_non_null(strstr(err, "checkpoint format 1"));
    rt_removedir(a);
    rt_removedir(b);
    spec_free(full);
    spec_free(part);
}

/* nanoGPT's get_lr(it): warmup W steps, cosine decay to min_lr at D. */
static double cosine_lr(double it, double w, double d, double lr, double min_lr)
{
    if (it < w)
        return lr * (it + 1) / (w + 1);
    if (it > d)
        return min_lr;
    return min_lr + 0.5 * (1 + cos(M_PI * (it - w) / (d - w))) * (lr - min_lr);
}

/* adamw with its decay ranges, the cosine schedule, clipping and gradient
 * accumulation (groups of 3 in 8-batch epochs: 3, 3, 2) resume from an
 * epoch's checkpoint to the same bits and the same per-epoch rates as the
 * run that never stopped; the schedule moved the rate. */
static void test_resume_adamw_cosine(void **state)
{
    (void)state;
    const char *fmt =
        "{\"name\": \"t\", \"model\": " NET ", \"data\": {\"format\": \"synthetic\", "
        "\"synthetic_train\": 300, \"synthetic_test\": 50, \"num_classes\": 3, "
        "\"validation_split\": 0.2}, \"training\": {\"epochs\": %d, \"batch_size\": 32, "
        "\"optimizer\": {\"name\": \"adamw\", \"learning_rate\": 0.003, "
        "\"weight_decay\": 0.1}, \"lr_schedulers\": [{\"name\": \"cosine\", "
        "\"warmup_steps\": 2, \"decay_steps\": 10, \"min_lr\": 0.0003}], "
        "\"clip_norm\": 0.5, \"grad_accum_steps\": 3, \"seed\": 5}}";
    char json[4096];
    snprintf(json, sizeof json, fmt, 4);
    job_spec *full = spec_fixture_parse(json);
    snprintf(json, sizeof json, fmt, 2);
    job_spec *part = spec_fixture_parse(json);
    char *a = tempdir(), *b = tempdir();
    expect_resumed_same_weights(full, part, a, b);
    json_t *ha = history(a), *hb = history(b);
    json_t *la = json_object_get(ha, "loss"), *lb = json_object_get(hb, "loss");
    assert_int_equal(json_array_size(la), 4);
    for (size_t i = 0; i < 4; i++)
        assert_true(json_real_value(json_array_get(la, i)) ==
                    json_real_value(json_array_get(lb, i)));
    /* Trained: the loss fell from the first epoch to the last. */
    assert_true(json_real_value(json_array_get(la, 3)) < json_real_value(json_array_get(la, 0)));
    /* Each epoch's lr is the rate its last step used: nanoGPT's get_lr at
     * optimizer step 3e + 2 (three steps an epoch), not the base rate. */
    for (size_t i = 0; i < 4; i++) {
        double want = cosine_lr(3 * (double)i + 2, 2, 10, 0.003, 0.0003);
        double ra = json_real_value(json_array_get(json_object_get(ha, "lr"), i));
        double rb = json_real_value(json_array_get(json_object_get(hb, "lr"), i));
        if (fabs(ra - want) > 1e-6 * want || ra != rb)
            fail_msg("epoch %zu lr %.9g (resumed %.9g), cosine gives %.9g", i + 1, ra, rb, want);
    }
    json_decref(ha);
    json_decref(hb);
    rt_removedir(a);
    rt_removedir(b);
    spec_free(full);
    spec_free(part);
}

/* Where on_step_raise interrupts: SIGTERM after step `step` of 0-based
 * epoch `epoch`, through the trainer's own signal handler. */
typedef struct stop_at {
    long epoch, step;
    int fired;
} stop_at;

static void on_step_raise(void *ctx, long epoch, long step)
{
    stop_at *at = ctx;
    if (epoch == at->epoch && step == at->step) {
        at->fired++;
        assert_int_equal(raise(SIGTERM), 0);
    }
}

/* Train `s` into dir, SIGTERM raised after the given step; the run must
 * fail with the interruption message naming step `saved` (1-based epoch):
 * the step itself, or the end of its gradient accumulation group. */
static void train_until_saved(const job_spec *s, const char *dir, bool resume, long epoch,
                              long step, long saved)
{
    stop_at at = {.epoch = epoch, .step = step};
    train_options o = {.out_dir = dir, .threads = 2, .resume = resume,
                       .on_step = on_step_raise, .on_step_ctx = &at};
    char err[512], want[128];
    assert_int_equal(train_single(s, &o, err, sizeof err), -1);
    assert_int_equal(at.fired, 1);
    snprintf(want, sizeof want, "interrupted by SIGTERM at epoch %ld step %ld; checkpoint saved",
             epoch + 1, saved);
    if (!strstr(err, want))
        fail_msg("want \"%s\" in: %s", want, err);
}

/* Stopped by SIGTERM after the given step, saved there. */
static void train_until(const job_spec *s, const char *dir, bool resume, long epoch, long step)
{
    train_until_saved(s, dir, resume, epoch, step, step);
}

/* The same history.json, number for number: every key (per-epoch series,
 * per-worker detail, test evaluation) but the wall-clock ones, which no
 * two runs share. */
static void expect_same_history(const char *a, const char *b, size_t epochs)
{
    json_t *ha = history(a), *hb = history(b);
    const char *timing[] = {"epoch_time_s", "samples_per_s"};
    for (size_t k = 0; k < sizeof timing / sizeof timing[0]; k++) {
        assert_int_equal(json_array_size(json_object_get(hb, timing[k])), epochs);
        json_object_del(ha, timing[k]);
        json_object_del(hb, timing[k]);
    }
    assert_int_equal(json_array_size(json_object_get(ha, "loss")), epochs);
    assert_non_null(json_object_get(ha, "test"));
    assert_int_equal(json_object_size(ha), json_object_size(hb));
    const char *key;
    json_t *va;
    json_object_foreach(ha, key, va) {
        json_t *vb = json_object_get(hb, key);
        if (!vb || !json_equal(va, vb)) {
            char *ta = json_dumps(va, JSON_COMPACT), *tb = vb ? json_dumps(vb, JSON_COMPACT) : NULL;
            fail_msg("history.json \"%s\": %s in %s, %s in %s", key, ta, a, tb ? tb : "none", b);
        }
    }
    json_decref(ha);
    json_decref(hb);
}

/* s (3 epochs) over the data root dirs[0]: trained into a uninterrupted,
 * and into b stopped by SIGTERM at at[0], resumed, stopped at at[1] and
 * resumed to the end: the same weights and history in both. */
static void expect_resumed_twice_same(const job_spec *s, const char *dirs[1], const char *a,
                                      const char *b, stop_at at[2])
{
    char err[512];
    train_options o = {.out_dir = a, .threads = 2, .roots = {dirs, 1}};
    if (train_single(s, &o, err, sizeof err) != 0)
        fail_msg("train_single: %s", err);
    for (int k = 0; k < 3; k++) {
        train_options ob = {.out_dir = b, .threads = 2, .roots = {dirs, 1}, .resume = k > 0,
                            .on_step = k < 2 ? on_step_raise : NULL,
                            .on_step_ctx = k < 2 ? &at[k] : NULL};
        int rc = train_single(s, &ob, err, sizeof err);
        if (k < 2 && (rc != -1 || at[k].fired != 1 || !strstr(err, "interrupted by SIGTERM")))
            fail_msg("stop %d: rc %d fired %d: %s", k, rc, at[k].fired, err);
        if (k == 2 && rc != 0)
            fail_msg("resumed: %s", err);
    }
    expect_same_weights(a, b);
    expect_same_history(a, b, 3);
}

static int count_lines(const char *path, const char *needle)
{
    FILE *f = fopen(path, "r");
    assert_non_null(f);
    char line[4096];
    int n = 0;
    while (fgets(line, sizeof line, f))
        n += strstr(line, needle) != NULL;
    fclose(f);
    return n;
}

/* Interrupted by SIGTERM at chosen steps — mid-epoch 1, after the last
 * batch of epoch 2 but before its end-of-epoch work, mid-epoch 3 — and
 * resumed each time: the same weights (batchnorm running stats included)
 * and history as a run never interrupted. 240 training samples in batches
 * of 32 make 8 steps per epoch, the last one of 16. */
static void test_resume_mid_epoch(void **state)
{
    (void)state;
    job_spec *s = job(4, NULL);
    char *a = tempdir(), *b = tempdir();
    train(s, a, 2, false);
    train_until(s, b, false, 0, 3);
    train_until(s, b, true, 1, 8);
    train_until(s, b, true, 2, 5);
    train(s, b, 2, true);
    expect_same_weights(a, b);
    expect_same_history(a, b, 4);
    char p[512];
    snprintf(p, sizeof p, "%s/progress.jsonl", b);
    assert_int_equal(count_lines(p, "\"resumed\":true"), 3);
    assert_int_equal(count_lines(p, "\"event\":\"epoch\""), 4);
    rt_removedir(a);
    rt_removedir(b);
    spec_free(s);
}

/* grad_accum_steps 2: SIGTERM in the middle of a group (after its first
 * micro-batch) finishes the group before the checkpoint, so no gradient
 * is lost and the resumed run equals the uninterrupted one; at a group's
 * end it stops at once. */
static void test_resume_mid_group(void **state)
{
    (void)state;
    job_spec *s = job(3, ", \"grad_accum_steps\": 2");
    char *a = tempdir(), *b = tempdir();
    train(s, a, 2, false);
    train_until_saved(s, b, false, 0, 3, 4);
    train_until(s, b, true, 1, 6);
    train_until_saved(s, b, true, 2, 1, 2);
    train(s, b, 2, true);
    expect_same_weights(a, b);
    expect_same_history(a, b, 3);
    rt_removedir(a);
    rt_removedir(b);
    spec_free(s);
}

/* A byte language model on a small text (issue 28): embedding, causal
 * conv1d, lstm and a dense layer per step, with dropout; 64 windows of 16
 * bytes in batches of 8 make 8 steps an epoch. */
#define SEQ_NET                                                                             \
    "{\"input\": {\"tokens\": 256}, \"layers\": ["                                          \
    "{\"type\": \"embedding\", \"output_dim\": 8},"                                         \
    "{\"type\": \"conv1d\", \"filters\": 8, \"kernel_size\": 3, \"padding\": \"causal\", "  \
    "\"activation\": \"relu\"},"                                                              \
    "{\"type\": \"lstm\", \"units\": 12, \"return_sequences\": true},"                       \
    "{\"type\": \"dropout\", \"rate\": 0.2},"                                               \
    "{\"type\": \"dense\", \"units\": 256, \"activation\": \"softmax\"}]}"

/* The sequence trainer resumes exactly: a byte LM on text, stopped by
 * SIGTERM mid-epoch 1 and after the last step of epoch 2, resumed each
 * time, has the same weights (embedding, conv1d, lstm, dense) and history
 * as the run never stopped. */
/* Sequences of skewed lengths (2 to 30 of 32 steps, most short) as CTF,
 * the label whether token 3 occurs: data.bucket_by_length reorders the
 * batches by length. */
static void write_skewed_ctf(const char *path, int n)
{
    FILE *f = fopen(path, "w");
    assert_non_null(f);
    uint32_t s = 17;
    for (int i = 0; i < n; i++) {
        s = s * 1103515245u + 12345u;
        int len = (s >> 16) % 8 == 0 ? 16 + (int)(s >> 8) % 15 : 2 + (int)(s >> 20) % 6;
        int tok[32], label = 0;
        for (int t = 0; t < len; t++) {
            s = s * 1103515245u + 12345u;
            tok[t] = 1 + (int)((s >> 16) % 15);
            label |= tok[t] == 3;
        }
        for (int t = 0; t < len; t++) {
            fprintf(f, "%d |x %d:1", i, tok[t]);
            if (t == 0)
                fprintf(f, " |y %d:1", label);
            fputc('\n', f);
        }
    }
    assert_int_equal(fclose(f), 0);
}

/* Resume mid-epoch and after an epoch's last step with batches bucketed
 * by length (a short last batch included): the weights and history of the
 * run never stopped, bit for bit; and the bucketed order is really used
 * (without it the weights differ). */
static void test_resume_bucketed(void **state)
{
    (void)state;
    char *data = tempdir();
    char path[512];
    snprintf(path, sizeof path, "%s/seq.ctf", data);
    write_skewed_ctf(path, 100);
    const char *fmt =
        "{\"name\": \"bk\", \"model\": {\"input\": {\"tokens\": 16}, \"layers\": ["
        "{\"type\": \"embedding\", \"output_dim\": 8}, {\"type\": \"lstm\", \"units\": 8},"
        "{\"type\": \"dropout\", \"rate\": 0.2},"
        "{\"type\": \"dense\", \"units\": 2, \"activation\": \"softmax\"}]}, "
        "\"data\": {\"format\": \"ctf\", \"train\": \"seq\", \"test\": \"seq\", "
        "\"num_classes\": 2, \"max_length\": 32, \"bucket_by_length\": %s}, "
        "\"training\": {\"epochs\": 3, \"batch_size\": 8, \"metrics\": [\"accuracy\"], "
        "\"optimizer\": {\"name\": \"adam\", \"learning_rate\": 0.01}, \"seed\": 5}}";
    char json[1024];
    snprintf(json, sizeof json, fmt, "true");
    job_spec *s = spec_fixture_parse(json);
    snprintf(json, sizeof json, fmt, "false");
    job_spec *plain = spec_fixture_parse(json);
    const char *dirs[] = {data};
    char *a = tempdir(), *b = tempdir(), *c = tempdir();
    char err[512];
    expect_resumed_twice_same(s, dirs, a, b, (stop_at[2]){{.epoch = 0, .step = 5},
                                                         {.epoch = 1, .step = 13}});
    train_options oc = {.out_dir = c, .threads = 2, .roots = {dirs, 1}};
    if (train_single(plain, &oc, err, sizeof err) != 0)
        fail_msg("train_single (not bucketed): %s", err);
    assert_non_null(rt_weights_differ(a, c));
    rt_removedir(a);
    rt_removedir(b);
    rt_removedir(c);
    rt_removedir(data);
    spec_free(s);
    spec_free(plain);
}

static void test_resume_sequences(void **state)
{
    (void)state;
    char *data = tempdir();
    char path[512];
    snprintf(path, sizeof path, "%s/lm.txt", data);
    FILE *f = fopen(path, "w");
    assert_non_null(f);
    for (int i = 0; i < 24; i++)
        fprintf(f, "line %d: the quick brown fox jumps over %d lazy dogs.\n", i, i * 7 % 13);
    assert_int_equal(fclose(f), 0);
    const char *json =
        "{\"name\": \"lm\", \"model\": " SEQ_NET ", \"data\": {\"format\": \"text\", "
        "\"train\": \"lm\", \"test\": \"lm\", \"max_length\": 16, \"train_samples\": 64}, "
        "\"training\": {\"epochs\": 3, \"batch_size\": 8, \"metrics\": [\"accuracy\"], "
        "\"optimizer\": {\"name\": \"adam\", \"learning_rate\": 0.01}, \"seed\": 3}}";
    job_spec *s = spec_fixture_parse(json);
    const char *dirs[] = {data};
    char *a = tempdir(), *b = tempdir();
    expect_resumed_twice_same(s, dirs, a, b, (stop_at[2]){{.epoch = 0, .step = 3},
                                                         {.epoch = 1, .step = 8}});
    rt_removedir(a);
    rt_removedir(b);
    rt_removedir(data);
    spec_free(s);
}

static void test_run_directory(void **state)
{
    (void)state;
    job_spec *s = job(2, ", \"steps_per_epoch\": 3, \"metrics\": [\"accuracy\", \"mae\"], "
                         "\"lr_schedulers\": [{\"name\": \"model_checkpoint\", "
                         "\"every_epochs\": 1}, {\"name\": \"warm_up\", "
                         "\"warmup_epochs\": 2}]");
    char *d = tempdir();
    train(s, d, 1, false);
    const char *files[] = {"progress.jsonl", "history.json", "weights.safetensors",
                           "weights.npz", "checkpoints/ckpt.bin",
                           "checkpoints/weights-epoch-001.safetensors",
                           "checkpoints/weights-epoch-002.npz"};
    for (size_t i = 0; i < sizeof files / sizeof files[0]; i++) {
        char p[512];
        struct stat st;
        snprintf(p, sizeof p, "%s/%s", d, files[i]);
        assert_int_equal(stat(p, &st), 0);
        assert_true(st.st_size > 0);
    }
    char p[512];
    snprintf(p, sizeof p, "%s/progress.jsonl", d);
    assert_int_equal(count_lines(p, "\"event\":\"start\""), 1);
    assert_int_equal(count_lines(p, "\"event\":\"epoch\""), 2);
    assert_int_equal(count_lines(p, "\"event\":\"end\""), 1);
    assert_int_equal(count_lines(p, "\"status\":\"succeeded\""), 1);
    assert_int_equal(count_lines(p, "\"steps\":3,\"samples\""), 1); /* the start line */
    json_t *h = history(d);
    assert_int_equal(json_array_size(json_object_get(h, "mae")), 2);
    json_t *lr = json_object_get(h, "lr");
    assert_true(json_real_value(json_array_get(lr, 0)) < json_real_value(json_array_get(lr, 1)));
    assert_int_equal(json_array_size(json_object_get(h, "val_mae")), 2);
    json_t *test = json_object_get(h, "test");
    assert_non_null(json_object_get(test, "accuracy"));
    assert_int_equal(json_integer_value(json_object_get(test, "samples")), 50);
    assert_string_equal(json_string_value(json_object_get(h, "trainer")), "single");
    /* The CPU backend is bit-reproducible, and says so. */
    assert_true(json_is_true(json_object_get(h, "reproducible")));
    assert_null(json_object_get(h, "reproducible_reason"));
    json_decref(h);

    /* The weights load back, keys as the run directory contract says. */
    snprintf(p, sizeof p, "%s/weights.npz", d);
    tensor_entry *t = NULL;
    int n = 0;
    char err[256];
    assert_int_equal(npz_read(p, &t, &n, err, sizeof err), 0);
    bool found = false;
    for (int i = 0; i < n; i++) {
        if (strcmp(t[i].name, "1.batchnorm.running_var") == 0)
            found = true;
        if (strcmp(t[i].name, "0.conv2d.weight") == 0) {
            assert_int_equal(t[i].rank, 4);
            assert_int_equal(t[i].dims[0], 4);
            assert_int_equal(t[i].dims[1], 1);
        }
    }
    assert_true(found);
    tensorfile_free(t, n);
    rt_removedir(d);
    spec_free(s);
}

static void test_early_stopping(void **state)
{
    (void)state;
    /* Random labels: validation loss stops improving quickly. */
    job_spec *s = job_with(30, 32, 0.05, ", \"lr_schedulers\": [{\"name\": "
                           "\"early_stopping\", \"monitor\": \"val_loss\", \"patience\": 1}]");
    char *d = tempdir();
    train(s, d, 1, false);
    json_t *h = history(d);
    size_t epochs = json_array_size(json_object_get(h, "loss"));
    assert_true(epochs >= 2 && epochs < 30);
    json_decref(h);
    rt_removedir(d);
    spec_free(s);
}

/* training.stop_at_loss: a loss at or below 1e9 is reached after the
 * first epoch; an accuracy of 2 never is. */
static void test_stop_at_loss(void **state)
{
    (void)state;
    static const struct {
        const char *extra;
        size_t epochs;
    } cases[] = {
        {", \"stop_at_loss\": {\"metric\": \"categorical_cross_entropy\", \"threshold\": 1e9}",
         1},
        {", \"stop_at_loss\": {\"metric\": \"val_categorical_accuracy\", \"threshold\": 2}",
         3},
    };
    for (size_t i = 0; i < sizeof cases / sizeof *cases; i++) {
        job_spec *s = job(3, cases[i].extra);
        char *d = tempdir();
        train(s, d, 1, false);
        json_t *h = history(d);
        assert_int_equal(json_array_size(json_object_get(h, "loss")), cases[i].epochs);
        json_decref(h);
        rt_removedir(d);
        spec_free(s);
    }
}

/* The progress line of `event` in dir/progress.jsonl and how many lines
 * came before it; NULL when there is none. */
static json_t *progress_event(const char *dir, const char *event, int *line)
{
    char p[512], buf[8192];
    snprintf(p, sizeof p, "%s/progress.jsonl", dir);
    FILE *f = fopen(p, "r");
    assert_non_null(f);
    json_t *found = NULL;
    for (*line = 0; !found && fgets(buf, sizeof buf, f); (*line)++) {
        json_t *o = json_loads(buf, 0, NULL);
        if (o && strcmp(json_string_value(json_object_get(o, "event")), event) == 0)
            found = o;
        else
            json_decref(o);
    }
    fclose(f);
    return found;
}

/* A one-epoch run of the default job in a fresh directory, checked by
 * `check` (that an opt-in feature stayed off) and removed. */
static void check_default_run(void (*check)(const char *dir))
{
    job_spec *s = job(1, NULL);
    char *d = tempdir();
    train(s, d, 1, false);
    check(d);
    rt_removedir(d);
    spec_free(s);
}

static void expect_no_evaluate(const char *dir)
{
    int line;
    assert_null(progress_event(dir, "evaluate", &line));
}

static void expect_no_profile(const char *dir)
{
    char p[512];
    snprintf(p, sizeof p, "%s/profile.json", dir);
    assert_int_not_equal(access(p, F_OK), 0);
}

/* training.evaluate: the test set before the first step, then training
 * and the final evaluation as always. */
static void test_evaluate_before(void **state)
{
    (void)state;
    job_spec *s = job_with(2, 32, 0.05, ", \"evaluate\": true");
    char *d = tempdir();
    train(s, d, 1, false);
    int at_eval, at_epoch, at_end;
    json_t *ev = progress_event(d, "evaluate", &at_eval);
    json_t *epoch = progress_event(d, "epoch", &at_epoch);
    json_t *end = progress_event(d, "end", &at_end);
    assert_non_null(ev);
    assert_non_null(epoch);
    assert_non_null(end);
    assert_true(at_eval < at_epoch);
    assert_string_equal(json_string_value(json_object_get(ev, "when")), "before");
    assert_int_equal(json_integer_value(json_object_get(ev, "samples")), 50);
    double before = json_number_value(json_object_get(ev, "test_loss"));
    double after = json_number_value(json_object_get(end, "test_loss"));
    assert_true(isfinite(before) && before > 0 && before != after);
    json_decref(ev);
    json_decref(epoch);
    json_decref(end);
    rt_removedir(d);
    spec_free(s);
    /* Off by default: no such event. */
    check_default_run(expect_no_evaluate);
}

/* data.augment on CIFAR-shaped synthetic data: training runs, repeats
 * bit for bit under its seed, changes what is learnt, and leaves the test
 * set alone (the evaluation before training sees the same data). */
static job_spec *cifar_job(const char *augment)
{
    char json[2048];
    snprintf(json, sizeof json,
             "{\"name\": \"aug\", \"model\": {\"input\": [3, 32, 32], \"layers\": ["
             "{\"type\": \"conv2d\", \"filters\": 4, \"kernel\": 3, \"padding\": \"same\", "
             "\"activation\": \"relu\"}, {\"type\": \"batchnorm\"}, "
             "{\"type\": \"maxpool2d\", \"pool\": 4}, {\"type\": \"flatten\"}, "
             "{\"type\": \"dense\", \"units\": 16, \"activation\": \"relu\"}, "
             "{\"type\": \"dense\", \"units\": 10, "
             "\"activation\": \"softmax\"}]}, \"data\": {\"format\": \"synthetic\", "
             "\"synthetic_train\": 128, \"synthetic_test\": 32%s}, \"training\": "
             "{\"epochs\": 2, \"batch_size\": 32, \"seed\": 9, \"evaluate\": true}}",
             augment);
    return spec_fixture_parse(json);
}

static double eval_before(const char *dir)
{
    int at;
    json_t *ev = progress_event(dir, "evaluate", &at);
    assert_non_null(ev);
    double loss = json_number_value(json_object_get(ev, "test_loss"));
    json_decref(ev);
    return loss;
}

static void test_augment(void **state)
{
    (void)state;
    job_spec *plain = cifar_job("");
    job_spec *aug = cifar_job(", \"augment\": {\"flip\": {\"prob\": 0.5}, "
                              "\"crop\": {\"size\": 16, \"prob\": 0.5}}");
    assert_true(aug->data.augment.flip_prob == 0.5 && aug->data.augment.crop_size == 16);
    char *a = tempdir(), *b = tempdir(), *p = tempdir();
    train(aug, a, 1, false);
    train(aug, b, 1, false);
    train(plain, p, 1, false);
    expect_same_weights(a, b);
    json_t *ha = history(a), *hp = history(p);
    double la = json_real_value(json_array_get(json_object_get(ha, "loss"), 1));
    double lp = json_real_value(json_array_get(json_object_get(hp, "loss"), 1));
    assert_true(isfinite(la) && la > 0 && la != lp);
    assert_true(eval_before(a) == eval_before(p));
    json_decref(ha);
    json_decref(hp);
    rt_removedir(a);
    rt_removedir(b);
    rt_removedir(p);
    spec_free(aug);
    spec_free(plain);
}

/* One plain SGD step moves every weight by -lr * g; with warm_up_batches
 * N the first step runs at lr / N, so the moves of N = 1 (the plain run),
 * 2 and 4 satisfy plain - w2 = 2 (w2 - w4). */
static void test_warm_up_batches(void **state)
{
    (void)state;
    char *dirs[3];
    static const int n[3] = {1, 2, 4};
    for (int i = 0; i < 3; i++) {
        char json[4096];
        snprintf(json, sizeof json,
                 "{\"model\": " NET ", \"data\": {\"format\": \"synthetic\", "
                 "\"synthetic_train\": 64, \"synthetic_test\": 8, \"num_classes\": 3}, "
                 "\"training\": {\"epochs\": 1, \"batch_size\": 32, \"steps_per_epoch\": 1, "
                 "\"optimizer\": {\"name\": \"sgd\", \"learning_rate\": 0.5}, "
                 "\"warm_up_batches\": %d}}", n[i]);
        job_spec *s = spec_fixture_parse(json);
        dirs[i] = tempdir();
        train(s, dirs[i], 1, false);
        spec_free(s);
    }
    tensor_entry *t[3];
    int nt[3];
    char p[512], err[256];
    for (int i = 0; i < 3; i++) {
        snprintf(p, sizeof p, "%s/weights.safetensors", dirs[i]);
        assert_int_equal(safetensors_read(p, &t[i], &nt[i], err, sizeof err), 0);
    }
    double worst = 0, moved = 0;
    for (int k = 0; k < nt[0]; k++) {
        if (!strstr(t[0][k].name, "weight"))
            continue;
        for (long j = 0; j < tensor_entry_size(&t[0][k]); j++) {
            double a = t[0][k].data[j], b = t[1][k].data[j], c = t[2][k].data[j];
            double diff = fabs((a - b) - 2 * (b - c));
            worst = diff > worst ? diff : worst;
            moved = fabs(a - b) > moved ? fabs(a - b) : moved;
        }
    }
    if (!(moved > 1e-4 && worst < 1e-3 * moved))
        fail_msg("warm-up: largest move %g, largest departure from linearity %g", moved, worst);
    for (int i = 0; i < 3; i++) {
        tensorfile_free(t[i], nt[i]);
        rt_removedir(dirs[i]);
    }
}

/* training.profile: profile.json with every layer's forward and
 * backward times over the training steps (not the evaluations), which
 * fit inside the step's forward and backward phases; none when off. */
static void test_profile(void **state)
{
    (void)state;
    job_spec *s = job(2, ", \"profile\": true");
    char *d = tempdir();
    train(s, d, 1, false);
    json_t *prof = rt_json(d, "profile.json");
    /* 240 training samples (validation_split 0.2 of 300), batch 32: 8 steps an epoch. */
    assert_int_equal(json_integer_value(json_object_get(prof, "steps")), 16);
    json_t *layers = json_object_get(prof, "layers");
    assert_int_equal(json_array_size(layers), (size_t)s->n_layers);
    const char *phase[2] = {"forward", "backward"};
    for (int k = 0; k < 2; k++) {
        char key[32];
        snprintf(key, sizeof key, "%s_ms", phase[k]);
        double sum = 0;
        for (size_t i = 0; i < json_array_size(layers); i++) {
            json_t *l = json_array_get(layers, i);
            assert_string_equal(json_string_value(json_object_get(l, "type")),
                                spec_layer_type_name(s->layers[i].type));
            json_t *t = json_object_get(l, key);
            double total = json_number_value(json_object_get(t, "total"));
            double mean = json_number_value(json_object_get(t, "mean"));
            double max = json_number_value(json_object_get(t, "max"));
            assert_true(total > 0 && mean > 0 && max >= mean);
            assert_true(fabs(mean * 16 - total) <= 1e-4 * total); /* 6 digits in the file */
            sum += total;
        }
        json_t *step = json_object_get(json_object_get(prof, "step_ms"), phase[k]);
        double whole = json_number_value(json_object_get(step, "total"));
        if (!(sum <= whole))
            fail_msg("%s: the layers took %g ms, the phase %g ms", phase[k], sum, whole);
    }
    json_decref(prof);
    rt_removedir(d);
    spec_free(s);
    check_default_run(expect_no_profile);
}

/* training.loss categorical_hinge through a whole run (softmax outputs,
 * so every sample loses between 0 and 2): the training loss falls as the
 * net fits its 240 samples, and the test loss is the same function. */
static void test_categorical_hinge(void **state)
{
    (void)state;
    job_spec *s = job_with(6, 16, 0.01, ", \"loss\": \"categorical_hinge\"");
    char *d = tempdir();
    train(s, d, 1, false);
    json_t *h = history(d);
    json_t *loss = json_object_get(h, "loss");
    assert_int_equal(json_array_size(loss), 6);
    double first = json_real_value(json_array_get(loss, 0));
    double last = json_real_value(json_array_get(loss, 5));
    if (!(first > 0 && first <= 2 && last < first))
        fail_msg("hinge loss from %g to %g", first, last);
    double test = json_real_value(json_object_get(json_object_get(h, "test"), "loss"));
    assert_true(test >= 0 && test <= 2);
    json_decref(h);
    rt_removedir(d);
    spec_free(s);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_reproducible),
        cmocka_unit_test(test_resume_equals_uninterrupted),
        cmocka_unit_test(test_resume_mid_epoch),
        cmocka_unit_test(test_resume_mid_group),
        cmocka_unit_test(test_resume_sequences),
        cmocka_unit_test(test_resume_bucketed),
        cmocka_unit_test(test_resume_adamw_cosine),
        cmocka_unit_test(test_run_directory),
        cmocka_unit_test(test_early_stopping),
        cmocka_unit_test(test_stop_at_loss),
        cmocka_unit_test(test_evaluate_before),
        cmocka_unit_test(test_warm_up_batches),
        cmocka_unit_test(test_profile),
        cmocka_unit_test(test_augment),
        cmocka_unit_test(test_categorical_hinge),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
