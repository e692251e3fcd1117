/* rundir_test_util.h — what the train tests that run whole trainings share:
 * a temporary run directory, its history, and a bitwise comparison of two
 * runs' weights (the reproducibility checks). Header-only; include after
 * <cmocka.h>. */
#ifndef PUNCH_RUNDIR_TEST_UTIL_H
#define PUNCH_RUNDIR_TEST_UTIL_H

#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <jansson.h>

#include "io/tensorfile.h"

/* A new directory /tmp/PREFIX-XXXXXX; free with rt_removedir. */
static inline char *rt_tempdir(const char *prefix)
{
    char *d = malloc(strlen(prefix) + 16);
    assert_non_null(d);
    sprintf(d, "/tmp/%s-XXXXXX", prefix);
    assert_non_null(mkdtemp(d));
    return d;
}

static inline void rt_removedir(char *d)
{
    char cmd[512];
    snprintf(cmd, sizeof cmd, "rm -rf '%s'", d);
    assert_int_equal(system(cmd), 0);
    free(d);
}

/* The tensors of the two run directories' weights.safetensors into *ta and
 * *tb, their count the return value: fails unless both files hold the same
 * tensors (names, sizes, order). Free both with tensorfile_free. */
static inline int rt_weights_pair(const char *a, const char *b, tensor_entry **ta,
                                  tensor_entry **tb)
{
    char pa[512], pb[512], err[256];
    snprintf(pa, sizeof pa, "%s/weights.safetensors", a);
    snprintf(pb, sizeof pb, "%s/weights.safetensors", b);
    int na = 0, nb = 0;
    if (safetensors_read(pa, ta, &na, err, sizeof err) != 0)
        fail_msg("%s", err);
    if (safetensors_read(pb, tb, &nb, err, sizeof err) != 0)
        fail_msg("%s", err);
    assert_int_equal(na, nb);
    for (int i = 0; i < na; i++) {
        assert_string_equal((*ta)[i].name, (*tb)[i].name);
        assert_int_equal(tensor_entry_size(&(*ta)[i]), tensor_entry_size(&(*tb)[i]));
    }
    return na;
}

/* The name of the first tensor whose bits differ between the two run
 * directories' weights.safetensors (static storage), or NULL when every
 * tensor is the same; fails when the files do not hold the same tensors. */
static inline const char *rt_weights_differ(const char *a, const char *b)
{
    static char name[256];
    tensor_entry *ta = NULL, *tb = NULL;
    int n = rt_weights_pair(a, b, &ta, &tb);
    assert_true(n > 0);
    const char *differs = NULL;
    for (int i = 0; i < n && !differs; i++) {
        if (memcmp(ta[i].data, tb[i].data, (size_t)tensor_entry_size(&ta[i]) * sizeof(float))) {
            snprintf(name, sizeof name, "%s", ta[i].name);
            differs = name;
        }
    }
    tensorfile_free(ta, n);
    tensorfile_free(tb, n);
    return differs;
}

/* The run directory's JSON file `name` (the test fails without it);
 * json_decref it. */
static inline json_t *rt_json(const char *dir, const char *name)
{
    char p[512];
    snprintf(p, sizeof p, "%s/%s", dir, name);
    json_error_t e;
    json_t *h = json_load_file(p, 0, &e);
    if (!h)
        fail_msg("%s: %s", p, e.text);
    return h;
}

/* The run directory's history.json; json_decref it. */
static inline json_t *rt_history(const char *dir)
{
    return rt_json(dir, "history.json");
}

#endif
