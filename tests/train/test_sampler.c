/* test_sampler.c — the next-token sampler of punch-train --generate
 * (train/sampler.h) on fixed probability vectors: greedy and top_k = 1
 * are the argmax, draws follow p^(1/t) renormalised (frequencies over many
 * draws), top-k never leaves the k most probable, a zero probability is
 * never drawn, and a seed gives the same draws; plus the request file's
 * field checks (train/generate.h). */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <cmocka.h>
#include <math.h>

#include "train/generate.h"
#include "train/sampler.h"

#define N 5
static const float probs[N] = {0.1f, 0.5f, 0.15f, 0.25f, 0.0f};
#define DRAWS 40000

/* Frequencies of DRAWS picks under o. */
static void frequencies(const sampler_options *o, uint64_t seed, double *f)
{
    rng r = rng_make(seed, 1);
    float scratch[N];
    memset(f, 0, N * sizeof *f);
    for (int i = 0; i < DRAWS; i++) {
        int id = sampler_pick(probs, N, o, &r, scratch);
        assert_true(id >= 0 && id < N);
        f[id] += 1.0 / DRAWS;
    }
}

/* Each frequency within 4 standard errors of want (normalised here). */
static void expect_distribution(const double *f, const double *want)
{
    double sum = 0;
    for (int i = 0; i < N; i++)
        sum += want[i];
    for (int i = 0; i < N; i++) {
        double p = want[i] / sum, se = sqrt(p * (1 - p) / DRAWS);
        if (fabs(f[i] - p) > 4 * se + 1e-12)
            fail_msg("id %d: frequency %.4f, want %.4f", i, f[i], p);
    }
}

static void test_greedy(void **state)
{
    (void)state;
    rng r = rng_make(7, 1);
    float scratch[N];
    sampler_options greedy = {.temperature = 0.0}, top1 = {.temperature = 1.0, .top_k = 1};
    for (int i = 0; i < 10; i++) {
        assert_int_equal(sampler_pick(probs, N, &greedy, &r, scratch), 1);
        assert_int_equal(sampler_pick(probs, N, &top1, &r, scratch), 1);
    }
    const float tie[3] = {0.4f, 0.4f, 0.2f};
    assert_int_equal(sampler_pick(tie, 3, &greedy, &r, scratch), 0);
}

static void test_temperature(void **state)
{
    (void)state;
    double f[N];
    sampler_options one = {.temperature = 1.0};
    frequencies(&one, 3, f);
    const double p[N] = {0.1, 0.5, 0.15, 0.25, 0.0};
    expect_distribution(f, p);
    assert_true(f[4] == 0.0);
    sampler_options cold = {.temperature = 0.5};
    frequencies(&cold, 4, f);
    const double p2[N] = {0.01, 0.25, 0.0225, 0.0625, 0.0};
    expect_distribution(f, p2);
    sampler_options hot = {.temperature = 2.0};
    frequencies(&hot, 5, f);
    double p05[N];
    for (int i = 0; i < N; i++)
        p05[i] = sqrt(p[i]);
    expect_distribution(f, p05);
}

static void test_top_k(void **state)
{
    (void)state;
    double f[N];
    sampler_options o = {.temperature = 1.0, .top_k = 2};
    frequencies(&o, 6, f);
    const double want[N] = {0, 0.5, 0, 0.25, 0};
    expect_distribution(f, want);
    /* k = 3 over a tie at the cut: the lower id is kept. */
    const float tie[4] = {0.3f, 0.2f, 0.2f, 0.3f};
    rng r = rng_make(8, 1);
    float scratch[4];
    sampler_options k3 = {.temperature = 1.0, .top_k = 3};
    for (int i = 0; i < 2000; i++)
        assert_int_not_equal(sampler_pick(tie, 4, &k3, &r, scratch), 2);
}

static void test_seed(void **state)
{
    (void)state;
    sampler_options o = {.temperature = 1.0};
    float scratch[N];
    rng a = rng_make(42, 1), b = rng_make(42, 1), c = rng_make(43, 1);
    int same = 0, differ = 0;
    for (int i = 0; i < 200; i++) {
        int x = sampler_pick(probs, N, &o, &a, scratch);
        same += x == sampler_pick(probs, N, &o, &b, scratch);
        differ += x != sampler_pick(probs, N, &o, &c, scratch);
    }
    assert_int_equal(same, 200);
    assert_true(differ > 20);
}

/* A request file with text into generate_request_read. */
static int read_request(const char *text, generate_request *req, char *err, size_t errlen)
{
    char path[] = "/tmp/test_sampler_reqXXXXXX";
    int fd = mkstemp(path);
    assert_true(fd >= 0);
    assert_int_equal(write(fd, text, strlen(text)), (ssize_t)strlen(text));
    close(fd);
    int rc = generate_request_read(path, req, err, errlen);
    unlink(path);
    return rc;
}

static void test_request(void **state)
{
    (void)state;
    generate_request req;
    char err[300];
    assert_int_equal(read_request("{\"prompt\": \"Hi\"}", &req, err, sizeof err), 0);
    assert_string_equal(req.prompt, "Hi");
    assert_int_equal(req.max_new_tokens, 64);
    assert_true(req.temperature == 1.0 && req.top_k == 0 && req.seed == 0);
    generate_request_free(&req);
    assert_int_equal(read_request("{\"prompt\": \"a\", \"max_new_tokens\": 3, \"temperature\": 0,"
                                  " \"top_k\": 5, \"seed\": 9}", &req, err, sizeof err), 0);
    assert_true(req.max_new_tokens == 3 && req.temperature == 0.0 && req.top_k == 5 &&
                req.seed == 9);
    generate_request_free(&req);
    static const char *const bad[][2] = {
        {"{\"prompt\": \"\"}", "prompt:"},
        {"{\"prompt\": 3}", "prompt:"},
        {"{\"prompt\": \"a\", \"max_new_tokens\": 0}", "max_new_tokens:"},
        {"{\"prompt\": \"a\", \"temperature\": -1}", "temperature:"},
        {"{\"prompt\": \"a\", \"top_k\": 1.5}", "top_k:"},
        {"{\"prompt\": \"a\", \"seed\": -2}", "seed:"},
    };
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        assert_int_equal(read_request(bad[i][0], &req, err, sizeof err), -1);
        if (strncmp(err, bad[i][1], strlen(bad[i][1])) != 0)
            fail_msg("%s: \"%s\" does not start with %s", bad[i][0], err, bad[i][1]);
    }
}

/* Ids back to text: bytes that are not UTF-8 become U+FFFD one by one. */
static void test_decode(void **state)
{
    (void)state;
    size_t len;
    /* "h", "é" (C3 A9), a stray continuation byte, "€" cut short, "!" */
    const int32_t bytes[] = {'h', 0xC3, 0xA9, 0x80, 0xE2, 0x82, '!', 300};
    char *s = generate_decode(bytes, 8, NULL, 0, &len);
    assert_non_null(s);
    assert_string_equal(s, "h\xC3\xA9\xEF\xBF\xBD\xEF\xBF\xBD\xEF\xBF\xBD!\xEF\xBF\xBD");
    assert_int_equal(len, strlen(s));
    free(s);
    const uint32_t vocab[] = {'\n', 'a', 0x2603};
    const int32_t chars[] = {1, 2, 0, 7};
    s = generate_decode(chars, 4, vocab, 3, &len);
    assert_string_equal(s, "a\xE2\x98\x83\n\xEF\xBF\xBD");
    free(s);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_greedy),
        cmocka_unit_test(test_temperature),
        cmocka_unit_test(test_top_k),
        cmocka_unit_test(test_seed),
        cmocka_unit_test(test_request),
        cmocka_unit_test(test_decode),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
