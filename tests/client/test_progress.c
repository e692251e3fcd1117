/* test_progress.c — the lines `punch wait` prints: the live bar fits the
 * terminal and carries epoch, batch, samples/s, metrics and ETA; plain
 * lines and epoch summaries carry the same facts; job tables summarise. */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <cmocka.h>

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "jobtext.h"
#include "progress.h"
#include "safetext.h"

static json_t *running_job(void)
{
    json_t *job = json_loads(
        "{\"id\": \"a1b2c3d4e5f6\", \"state\": \"running\", \"progress\": {\"epoch\": 2,"
        " \"epochs\": 5, \"step\": 422, \"steps\": 844, \"loss\": 0.5, \"accuracy\": 0.81,"
        " \"samples_per_s\": 21000.0, \"elapsed_s\": 7.1, \"eta_s\": 12.3}}", 0, NULL);
    assert_non_null(job);
    return job;
}

static void test_bar_has_every_field(void **state)
{
    (void)state;
    json_t *job = running_job();
    char buf[512];
    progress_format_bar(job, 120, buf, sizeof buf);
    assert_true(strlen(buf) <= 120);
    assert_true(strncmp(buf, "epoch 2/5 [", 11) == 0);
    assert_non_null(strstr(buf, "] 422/844 "));
    assert_non_null(strstr(buf, "21.0k samples/s"));
    assert_non_null(strstr(buf, "loss 0.5000"));
    assert_non_null(strstr(buf, "accuracy 0.8100"));
    assert_non_null(strstr(buf, "ETA 0:12"));
    assert_null(strstr(buf, "elapsed"));
    /* Half the epoch done: the bar is half full. */
    const char *open = strchr(buf, '['), *close = strchr(buf, ']');
    int cells = (int)(close - open - 1), filled = 0;
    for (const char *p = open + 1; p < close; p++)
        filled += *p == '=';
    assert_int_equal(filled, cells / 2);
    assert_int_equal(open[1 + filled], '>');
    json_decref(job);
}

static void test_bar_fits_narrow_terminals(void **state)
{
    (void)state;
    json_t *job = running_job();
    char buf[512];
    for (int width = 20; width <= 200; width += 7) {
        progress_format_bar(job, width, buf, sizeof buf);
        assert_true(strlen(buf) <= (size_t)width);
        assert_true(strncmp(buf, "epoch 2/5", 9) == 0);
    }
    /* A tiny buffer is never overrun. */
    char tiny[8];
    progress_format_bar(job, 200, tiny, sizeof tiny);
    assert_int_equal(strlen(tiny), 7);
    json_decref(job);
}

static void test_bar_when_not_running(void **state)
{
    (void)state;
    char buf[256];
    json_t *queued = json_loads("{\"state\": \"queued\", \"queue_position\": 3, \"progress\": {}}",
                                0, NULL);
    progress_format_bar(queued, 80, buf, sizeof buf);
    assert_string_equal(buf, "queued (position 3)");
    json_t *early = json_loads("{\"state\": \"running\", \"progress\": {}}", 0, NULL);
    progress_format_bar(early, 80, buf, sizeof buf);
    assert_string_equal(buf, "running (no progress report yet)");
    json_t *starting = json_loads("{\"state\": \"starting\"}", 0, NULL);
    progress_format_line(starting, buf, sizeof buf);
    assert_string_equal(buf, "starting");
    json_decref(queued);
    json_decref(early);
    json_decref(starting);
}

static void test_plain_line(void **state)
{
    (void)state;
    json_t *job = running_job();
    char buf[512];
    progress_format_line(job, buf, sizeof buf);
    assert_string_equal(buf, "epoch 2/5 step 422/844 loss=0.5000 accuracy=0.8100 "
                             "samples/s=21.0k eta=0:12");
    json_decref(job);
}

/* A report without a step count, rate or ETA: those parts are left out of
 * the line, and the bar stays empty rather than guessing. */
static void test_partial_report(void **state)
{
    (void)state;
    json_t *job = json_loads("{\"state\": \"running\", \"progress\": {\"epoch\": 1,"
                             " \"epochs\": 3, \"step\": 5, \"loss\": 0.25}}", 0, NULL);
    assert_non_null(job);
    char buf[256];
    progress_format_line(job, buf, sizeof buf);
    assert_string_equal(buf, "epoch 1/3 loss=0.2500");
    progress_format_bar(job, 60, buf, sizeof buf);
    assert_true(strncmp(buf, "epoch 1/3 [>", 12) == 0);
    assert_non_null(strstr(buf, "] loss 0.2500"));
    assert_null(strstr(buf, "ETA"));
    assert_null(strstr(buf, "samples/s"));
    json_decref(job);
}

static void test_epoch_line_from_history(void **state)
{
    (void)state;
    json_t *h = json_loads(
        "{\"loss\": [0.52, 0.41], \"accuracy\": [0.81, 0.85], \"val_loss\": [0.44, 0.40],"
        " \"val_accuracy\": [0.84, 0.86], \"lr\": [0.001, 0.0005], \"epoch_time_s\": [2.5, 2.25],"
        " \"test\": {\"loss\": 0.4}, \"workers\": [{\"rank\": 0, \"loss\": [1, 2]}]}", 0, NULL);
    assert_int_equal(progress_history_epochs(h), 2);
    char buf[512];
    progress_format_epoch(h, 1, 5, buf, sizeof buf);
    assert_string_equal(buf, "epoch 2/5: loss 0.4100 accuracy 0.8500 val_loss 0.4000 "
                             "val_accuracy 0.8600 lr 0.0005 (2.2s)");
    json_decref(h);
}

static void test_durations_and_rates(void **state)
{
    (void)state;
    static const struct {
        double seconds;
        const char *text;
    } durations[] = {
        {7, "0:07"}, {725, "12:05"}, {3723, "1:02:03"}, {-1, "?"}, {NAN, "?"},
    };
    static const struct {
        double per_s;
        const char *text;
    } rates[] = {
        {950, "950"}, {21000, "21.0k"}, {1.25e6, "1.25M"}, {-5, "?"},
    };
    char buf[32];
    for (size_t i = 0; i < sizeof durations / sizeof durations[0]; i++) {
        progress_format_duration(durations[i].seconds, buf, sizeof buf);
        assert_string_equal(buf, durations[i].text);
    }
    for (size_t i = 0; i < sizeof rates / sizeof rates[0]; i++) {
        progress_format_rate(rates[i].per_s, buf, sizeof buf);
        assert_string_equal(buf, rates[i].text);
    }
}

static void test_job_summaries(void **state)
{
    (void)state;
    char buf[256];
    json_t *done = json_loads("{\"state\": \"succeeded\", \"result\": {\"test_loss\": 0.36,"
                              " \"test_accuracy\": 0.8712}, \"error\": null}", 0, NULL);
    jobtext_format_summary(done, buf, sizeof buf);
    assert_string_equal(buf, "test_accuracy 0.8712");
    json_t *failed = json_loads("{\"state\": \"failed\", \"result\": null,"
                                " \"error\": \"data: cannot open fashion-mnist/x\"}", 0, NULL);
    jobtext_format_summary(failed, buf, sizeof buf);
    assert_string_equal(buf, "data: cannot open fashion-mnist/x");
    json_t *running = running_job();
    jobtext_format_summary(running, buf, sizeof buf);
    assert_string_equal(buf, "epoch 2/5 loss 0.5000");
    json_t *when = json_real(1000.0);
    jobtext_format_age(when, 1000.0 + 150, buf, sizeof buf);
    assert_string_equal(buf, "2m ago");
    jobtext_format_age(json_null(), 0, buf, sizeof buf);
    assert_string_equal(buf, "-");
    json_decref(when);
    json_decref(done);
    json_decref(failed);
    json_decref(running);
}

/* Another user's job name or an error must not reach the terminal as an
 * escape sequence: C0 (ESC, BEL, CR, LF), DEL and C1 (CSI in UTF-8) print
 * as '?'; other UTF-8 stays. */
static void test_control_characters_escaped(void **state)
{
    (void)state;
    char s[] = "a\x1b[31mb\x07\r\n\xc2\x9b\x7f \xc3\xa9\xc2\xa0z";
    safetext_clean(s);
    assert_string_equal(s, "a?[31mb????? \xc3\xa9\xc2\xa0z");
    json_t *job = json_pack("{s:s, s:s, s:s, s:s}", "id", "0123456789ab", "name",
                            "x\x1b]0;owned\x07", "state", "failed", "error", "bad\x1b[2Jline");
    char buf[256];
    jobtext_format_summary(job, buf, sizeof buf);
    assert_string_equal(buf, "bad?[2Jline");
    char *text = NULL;
    size_t len = 0;
    FILE *out = open_memstream(&text, &len);
    assert_non_null(out);
    jobtext_print_detail(job, 0, out);
    json_t *jobs = json_pack("[O]", job);
    jobtext_print_table(jobs, 0, out);
    fclose(out);
    assert_null(strchr(text, '\x1b'));
    assert_null(strchr(text, '\x07'));
    assert_non_null(strstr(text, "x?]0;owned?"));
    free(text);
    json_decref(jobs);
    json_decref(job);
}

/* Issue 31 #15: an admin's list has an OWNER column, a user's does not; a
 * failed job's long error is cut to its row. */
static void test_table_owner_and_long_error(void **state)
{
    (void)state;
    char long_error[400];
    memset(long_error, 'e', sizeof long_error - 1);
    long_error[sizeof long_error - 1] = 0;
    json_t *jobs = json_pack("[{s:s,s:s,s:s,s:s,s:s},{s:s,s:s,s:s,s:s}]", "id", "aaaaaaaaaaaa",
                             "owner", "alice", "name", "a", "state", "failed", "error",
                             long_error, "id", "bbbbbbbbbbbb", "owner", "bob", "name", "b",
                             "state", "queued");
    char *text = NULL;
    size_t len = 0;
    FILE *out = open_memstream(&text, &len);
    jobtext_print_table(jobs, 0, out);
    fclose(out);
    assert_non_null(strstr(text, "OWNER"));
    assert_non_null(strstr(text, "alice"));
    assert_non_null(strstr(text, "eee..."));
    assert_null(strstr(text, long_error + 300));
    for (char *line = text; line && *line; line = strchr(line, '\n') ? strchr(line, '\n') + 1 : NULL)
        assert_true(strcspn(line, "\n") < 160);
    free(text);
    json_array_remove(jobs, 1);
    out = open_memstream(&text, &len);
    jobtext_print_table(jobs, 0, out);
    fclose(out);
    assert_null(strstr(text, "OWNER"));
    free(text);
    json_decref(jobs);
}

/* The cell of row under the header word head ("-" if none). */
static void table_cell(const char *text, const char *row, const char *head, char *cell,
                       size_t cap)
{
    char word[32];
    snprintf(word, sizeof word, " %s ", head);
    const char *at = strstr(text, word);
    assert_non_null(at);
    size_t col = (size_t)(at - text) + 1, n = strcspn(row, "\n");
    snprintf(cell, cap, "-");
    if (col < n)
        sscanf(row + col, "%31s", cell);
}

/* punch list --wide: the key hyperparameters (the job object's hparams, its
 * trainer and ranks), then the final metrics as columns shared by the
 * table, loss first, then the metrics, validation's and test's; counters
 * and timings are not metrics; a job without them (submitted before the
 * server kept hparams) shows "-". */
static void test_table_wide_metrics(void **state)
{
    (void)state;
    json_t *jobs = json_pack(
        "[{s:s,s:s,s:s,s:s,s:s,s:i,s:{s:s,s:s,s:f,s:i,s:i},"
        "s:{s:i,s:i,s:f,s:f,s:f,s:f,s:f,s:f},s:{s:f,s:f}},"
        "{s:s,s:s,s:s,s:s,s:s,s:i,s:n}]",
        "id", "aaaaaaaaaaaa", "owner", "alice", "name", "lr-a", "state", "succeeded",
        "trainer", "allreduce", "ranks", 4,
        "hparams", "model", "convnet", "optimizer", "adam", "lr", 0.0003, "batch_size", 128,
        "epochs", 3,
        "progress", "epoch", 3, "epochs", 3, "val_accuracy", 0.78, "lr", 0.001, "accuracy", 0.8,
        "samples_per_s", 9000.0, "val_loss", 0.61, "loss", 0.5,
        "result", "test_accuracy", 0.77, "test_loss", 0.6,
        "id", "bbbbbbbbbbbb", "owner", "alice", "name", "lr-b", "state", "queued",
        "trainer", "single", "ranks", 1, "hparams");
    char *text = NULL;
    size_t len = 0;
    FILE *out = open_memstream(&text, &len);
    jobtext_print_table_wide(jobs, 0, true, out);
    fclose(out);
    const char *order[] = {"MODEL", "OPT", "LR", "BATCH", "EPOCHS", "TRAINER", "RANKS",
                           "PROGRESS", "EPOCH", "LOSS", "ACCURACY", "VAL_LOSS", "VAL_ACCURACY",
                           "TEST_LOSS", "TEST_ACCURACY"};
    const char *at = text;
    for (size_t i = 0; i < sizeof order / sizeof *order; i++) {
        char word[32];
        snprintf(word, sizeof word, " %s ", order[i]);
        const char *found = strstr(at, word);
        if (!found)
            fail_msg("no column %s after the previous one in:\n%s", order[i], text);
        at = found;
    }
    assert_null(strstr(text, "SAMPLES_PER_S"));
    /* LR once: the hyperparameter, not progress's lr as a metric. */
    assert_null(strstr(strstr(text, " LR ") + 1, " LR "));
    const char *row_a = strstr(text, "aaaaaaaaaaaa"), *row_b = strstr(text, "bbbbbbbbbbbb");
    assert_non_null(row_a);
    assert_non_null(row_b);
    /* Each under its header; the old job's hyperparameters are "-" but its
     * row's trainer and ranks are there. */
    const char *head[] = {"MODEL", "OPT", "LR", "BATCH", "EPOCHS", "TRAINER", "RANKS"};
    const char *want_a[] = {"convnet", "adam", "0.0003", "128", "3", "allreduce", "4"};
    const char *want_b[] = {"-", "-", "-", "-", "-", "single", "1"};
    for (size_t i = 0; i < sizeof head / sizeof *head; i++) {
        char cell[32];
        table_cell(text, row_a, head[i], cell, sizeof cell);
        if (strcmp(cell, want_a[i]) != 0)
            fail_msg("%s of lr-a: \"%s\", want \"%s\" in:\n%s", head[i], cell, want_a[i], text);
        table_cell(text, row_b, head[i], cell, sizeof cell);
        if (strcmp(cell, want_b[i]) != 0)
            fail_msg("%s of lr-b: \"%s\", want \"%s\" in:\n%s", head[i], cell, want_b[i], text);
    }
    assert_non_null(strstr(row_a, "3/3"));
    assert_non_null(strstr(row_a, "0.7800"));
    assert_non_null(strstr(row_a, "0.7700"));
    assert_null(strstr(row_b, "0.")); /* the queued job has no metric */
    free(text);
    /* Without --wide: no metric columns. */
    out = open_memstream(&text, &len);
    jobtext_print_table_wide(jobs, 0, false, out);
    fclose(out);
    assert_null(strstr(text, "VAL_ACCURACY"));
    assert_null(strstr(text, "TRAINER"));
    free(text);
    json_decref(jobs);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_bar_has_every_field),
        cmocka_unit_test(test_bar_fits_narrow_terminals),
        cmocka_unit_test(test_bar_when_not_running),
        cmocka_unit_test(test_plain_line),
        cmocka_unit_test(test_partial_report),
        cmocka_unit_test(test_epoch_line_from_history),
        cmocka_unit_test(test_durations_and_rates),
        cmocka_unit_test(test_job_summaries),
        cmocka_unit_test(test_control_characters_escaped),
        cmocka_unit_test(test_table_owner_and_long_error),
        cmocka_unit_test(test_table_wide_metrics),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
