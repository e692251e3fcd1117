/* test_svg.c — curves.svg: well-formed XML (checked by Python's parser,
 * not by us), exactly one series per metric key of the history, loss
 * first, gaps for non-numbers, and escaping of hostile titles. */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <cmocka.h>

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "svg.h"

/* Python script: parse the SVG, print "panels;series" with the panels'
 * data-metric and the series' data-series in document order. A parse
 * error exits non-zero. */
static const char check_py[] =
    "import sys, xml.etree.ElementTree as ET\n"
    "root = ET.parse(sys.argv[1]).getroot()\n"
    "ns = '{http://www.w3.org/2000/svg}'\n"
    "assert root.tag == ns + 'svg', root.tag\n"
    "panels = [g.get('data-metric') for g in root.iter(ns + 'g') if g.get('class') == 'panel']\n"
    "series = [p.get('data-series') for p in root.iter(ns + 'path') if p.get('class') == 'series']\n"
    "legend = [t.text for g in root.iter(ns + 'g') if g.get('class') == 'legend' for t in g.iter(ns + 'text')]\n"
    "assert sorted(legend) == sorted(series), (legend, series)\n"
    "print(','.join(panels) + ';' + ','.join(series))\n";

/* Render history to a file, run the checker, return its output line
 * (static buffer), or NULL when the XML did not parse. */
static const char *render_and_check(const char *history_json, const char *title)
{
    json_error_t jerr;
    json_t *history = json_loads(history_json, 0, &jerr);
    assert_non_null(history);
    char svg_path[] = "/tmp/punch-test-svg-XXXXXX";
    int fd = mkstemp(svg_path);
    assert_true(fd >= 0);
    FILE *f = fdopen(fd, "w");
    assert_int_equal(svg_write_curves(history, title, f), 0);
    fclose(f);
    json_decref(history);

    char py_path[] = "/tmp/punch-test-svg-py-XXXXXX";
    fd = mkstemp(py_path);
    assert_true(fd >= 0);
    assert_int_equal(write(fd, check_py, strlen(check_py)), (ssize_t)strlen(check_py));
    close(fd);
    char cmd[512];
    snprintf(cmd, sizeof cmd, "/usr/bin/python3 %s %s", py_path, svg_path);
    FILE *p = popen(cmd, "r");
    assert_non_null(p);
    static char line[1024];
    line[0] = '\0';
    if (fgets(line, sizeof line, p) == NULL)
        line[0] = '\0';
    int status = pclose(p);
    unlink(py_path);
    unlink(svg_path);
    line[strcspn(line, "\n")] = '\0';
    return status == 0 ? line : NULL;
}

static const char full_history[] =
    "{\"accuracy\": [0.7, 0.8, 0.85], \"loss\": [0.9, 0.6, 0.5],"
    " \"val_loss\": [0.8, 0.65, 0.55], \"val_accuracy\": [0.72, 0.79, 0.83],"
    " \"lr\": [0.001, 0.001, 0.0005], \"epoch_time_s\": [2.5, 2.4, 2.4],"
    " \"test\": {\"loss\": 0.5, \"accuracy\": 0.84}, \"trainer\": \"allreduce\", \"ranks\": 2,"
    " \"workers\": [{\"rank\": 0, \"loss\": [0.9, 0.6, 0.5]}], \"commits\": 12}";

static void test_one_series_per_metric_loss_first(void **state)
{
    (void)state;
    const char *out = render_and_check(full_history, "fmnist-mlp (a1b2c3d4e5f6)");
    assert_non_null(out);
    /* accuracy came first in the file; loss is still drawn first, and lr,
     * epoch_time_s, workers and the test results are not curves. */
    assert_string_equal(out, "loss,accuracy;loss,val_loss,accuracy,val_accuracy");
}

static void test_other_metrics_and_missing_validation(void **state)
{
    (void)state;
    const char *out = render_and_check(
        "{\"loss\": [1.0, 0.5], \"mse\": [0.3, 0.2], \"mae\": [0.4, 0.3], \"val_mae\": [0.5, 0.4]}",
        "regression");
    assert_non_null(out);
    assert_string_equal(out, "loss,mse,mae;loss,mse,mae,val_mae");
}

static void test_single_epoch_constant_and_gaps(void **state)
{
    (void)state;
    const char *out = render_and_check("{\"loss\": [0.5], \"val_loss\": [0.5]}", "one");
    assert_non_null(out);
    assert_string_equal(out, "loss;loss,val_loss");
    /* A diverged epoch written as null leaves a gap, not a broken file. */
    out = render_and_check("{\"loss\": [2.0, null, 1.0, 0.5], \"accuracy\": [0, 0, 0, 0]}", "gap");
    assert_non_null(out);
    assert_string_equal(out, "loss,accuracy;loss,accuracy");
}

static void test_empty_history_is_still_valid(void **state)
{
    (void)state;
    const char *out = render_and_check("{\"loss\": [], \"test\": {}}", "nothing yet");
    assert_non_null(out);
    assert_string_equal(out, ";");
}

static void test_hostile_title_is_escaped(void **state)
{
    (void)state;
    const char *out = render_and_check("{\"loss\": [1, 0.5]}",
                                       "<script>&\"'\x01</svg> (id)");
    assert_non_null(out);
    assert_string_equal(out, "loss;loss");
}

static void test_path_data_spans_the_epochs(void **state)
{
    (void)state;
    json_t *history = json_loads("{\"loss\": [3, 2, 1]}", 0, NULL);
    char *text = NULL;
    size_t len = 0;
    FILE *f = open_memstream(&text, &len);
    assert_int_equal(svg_write_curves(history, "t", f), 0);
    fclose(f);
    json_decref(history);
    /* Three points: one move, two line segments, three markers. */
    const char *d = strstr(text, " d=\"M");
    assert_non_null(d);
    const char *end = strchr(d + 4, '"');
    int lines = 0;
    for (const char *p = d; p < end; p++)
        lines += *p == 'L';
    assert_int_equal(lines, 2);
    int circles = 0;
    for (const char *p = text; (p = strstr(p, "<circle")) != NULL; p++)
        circles++;
    assert_int_equal(circles, 3);
    free(text);
}

static void test_is_series(void **state)
{
    (void)state;
    json_t *numbers = json_loads("[1, 2.5, null]", 0, NULL);
    json_t *objects = json_loads("[{\"rank\": 0}]", 0, NULL);
    json_t *empty = json_array();
    assert_true(svg_is_series("val_accuracy", numbers));
    assert_false(svg_is_series("lr", numbers));
    assert_false(svg_is_series("epoch_time_s", numbers));
    assert_false(svg_is_series("samples_per_s", numbers));
    assert_false(svg_is_series("workers", objects));
    assert_false(svg_is_series("loss", empty));
    json_decref(numbers);
    json_decref(objects);
    json_decref(empty);
}

int main(void)
{
    if (access("/usr/bin/python3", X_OK) != 0) {
        printf("1..0 # SKIP /usr/bin/python3 is missing (apt-get install python3)\n");
        return 77;
    }
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_one_series_per_metric_loss_first),
        cmocka_unit_test(test_other_metrics_and_missing_validation),
        cmocka_unit_test(test_single_epoch_constant_and_gaps),
        cmocka_unit_test(test_empty_history_is_still_valid),
        cmocka_unit_test(test_hostile_title_is_escaped),
        cmocka_unit_test(test_path_data_spans_the_epochs),
        cmocka_unit_test(test_is_series),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
