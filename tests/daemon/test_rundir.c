/* test_rundir.c — reading the run directory: the progress tail (latest
 * step/epoch merged with the last epoch's val_* metrics, partial last lines,
 * the end line's result and error), exit/supervisor records, atomic writes,
 * safetensors weights as JSON (and malformed ones refused), removal, the
 * line of train.log quoted in a failed job's error, and checkpoint retention
 * (the newest model_checkpoint saves kept, ensemble members with their
 * epoch, files being written and ckpt.bin never touched). */
#include <dirent.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cmocka.h>

#include "run/rundir.h"

static int setup(void **state)
{
    char *dir = strdup("/tmp/punch-rundir-XXXXXX");
    if (!dir || !mkdtemp(dir))
        return -1;
    *state = dir;
    return 0;
}

static int teardown(void **state)
{
    char *dir = *state;
    int ok = rundir_remove(dir) ? 0 : -1;
    free(dir);
    return ok;
}

static void put(const char *dir, const char *name, const void *data, size_t len)
{
    char path[512];
    snprintf(path, sizeof path, "%s/%s", dir, name);
    FILE *f = fopen(path, "wb");
    assert_non_null(f);
    assert_int_equal(fwrite(data, 1, len, f), len);
    fclose(f);
}

static double num(json_t *o, const char *key)
{
    json_t *v = json_object_get(o, key);
    assert_non_null(v);
    return json_number_value(v);
}

static void test_progress_merge(void **state)
{
    const char *dir = *state;
    const char *text =
        "{\"event\":\"start\",\"time\":1,\"epochs\":5,\"steps\":100}\n"
        "{\"event\":\"step\",\"time\":2,\"epoch\":1,\"epochs\":5,\"step\":50,\"steps\":100,\"loss\":0.9}\n"
        "{\"event\":\"epoch\",\"time\":3,\"epoch\":1,\"epochs\":5,\"loss\":0.8,\"val_loss\":0.7,"
        "\"val_accuracy\":0.6}\n"
        "{\"event\":\"step\",\"time\":4,\"epoch\":2,\"epochs\":5,\"step\":20,\"steps\":100,\"loss\":0.5}\n"
        "{\"event\":\"step\",\"time\":5,\"epo"; /* being written */
    put(dir, "progress.jsonl", text, strlen(text));
    rundir_progress p;
    rundir_read_progress(dir, &p);
    assert_true(num(p.progress, "epoch") == 2);
    assert_true(num(p.progress, "step") == 20);
    assert_true(num(p.progress, "loss") == 0.5);
    assert_true(num(p.progress, "val_loss") == 0.7); /* carried from the epoch line */
    assert_null(json_object_get(p.progress, "event"));
    assert_null(json_object_get(p.progress, "time"));
    assert_null(p.result);
    assert_string_equal(p.end_status, "");
    rundir_progress_clear(&p);
}

static void test_progress_end(void **state)
{
    const char *dir = *state;
    const char *text =
        "{\"event\":\"epoch\",\"time\":3,\"epoch\":2,\"epochs\":2,\"loss\":0.4,\"val_loss\":0.5}\n"
        "{\"event\":\"end\",\"time\":9,\"status\":\"succeeded\",\"test_loss\":0.36,"
        "\"test_accuracy\":0.87,\"elapsed_s\":12.4}\n";
    put(dir, "progress.jsonl", text, strlen(text));
    rundir_progress p;
    rundir_read_progress(dir, &p);
    assert_string_equal(p.end_status, "succeeded");
    assert_non_null(p.result);
    assert_true(num(p.result, "test_loss") == 0.36);
    assert_true(num(p.result, "test_accuracy") == 0.87);
    assert_null(json_object_get(p.result, "elapsed_s"));
    assert_true(num(p.progress, "epoch") == 2);
    rundir_progress_clear(&p);

    const char *failed = "{\"event\":\"end\",\"time\":9,\"status\":\"failed\","
                         "\"error\":\"data.train: no such dataset\"}\n";
    put(dir, "progress.jsonl", failed, strlen(failed));
    rundir_read_progress(dir, &p);
    assert_string_equal(p.end_status, "failed");
    assert_string_equal(p.end_error, "data.train: no such dataset");
    assert_int_equal(json_object_size(p.progress), 0);
    rundir_progress_clear(&p);
}

static void test_progress_missing_and_junk(void **state)
{
    const char *dir = *state;
    rundir_progress p;
    rundir_read_progress(dir, &p); /* no file */
    assert_non_null(p.progress);
    assert_int_equal(json_object_size(p.progress), 0);
    rundir_progress_clear(&p);
    const char *junk = "not json\n{\"no_event\":1}\n[1,2]\n\n";
    put(dir, "progress.jsonl", junk, strlen(junk));
    rundir_read_progress(dir, &p);
    assert_int_equal(json_object_size(p.progress), 0);
    assert_null(p.result);
    rundir_progress_clear(&p);
}

static void test_records(void **state)
{
    const char *dir = *state;
    rundir_exit ex;
    rundir_supervisor sup;
    assert_false(rundir_read_exit(dir, &ex));
    assert_false(rundir_read_supervisor(dir, &sup));
    char err[256];
    const char *e = "{\"exit_code\": 143, \"signal\": 15, \"ended_at\": 12.5}";
    assert_true(rundir_write_atomic(dir, "exit.json", e, strlen(e), err, sizeof err));
    assert_true(rundir_read_exit(dir, &ex));
    assert_int_equal(ex.exit_code, 143);
    assert_int_equal(ex.signal, 15);
    assert_true(ex.ended_at == 12.5);
    const char *s = "{\"supervisor_pid\": 100, \"sid\": 101}";
    put(dir, "supervisor.json", s, strlen(s));
    assert_true(rundir_read_supervisor(dir, &sup));
    assert_int_equal(sup.supervisor_pid, 100);
    assert_int_equal(sup.sid, 101);
    assert_true(sup.supervisor_start == -1 && sup.sid_start == -1);
    s = "{\"supervisor_pid\": 100, \"supervisor_start\": 7, \"sid\": 101, \"sid_start\": 8}";
    put(dir, "supervisor.json", s, strlen(s));
    assert_true(rundir_read_supervisor(dir, &sup));
    assert_true(sup.supervisor_start == 7 && sup.sid_start == 8);
    put(dir, "exit.json", "{\"exit_code\": \"x\"}", 18);
    assert_false(rundir_read_exit(dir, &ex));
    /* No temporary file is left behind by the atomic write. */
    DIR *dh = opendir(dir);
    assert_non_null(dh);
    for (struct dirent *ent; (ent = readdir(dh)) != NULL;)
        assert_null(strstr(ent->d_name, ".tmp"));
    closedir(dh);
    assert_false(rundir_write_atomic("/nonexistent/dir", "x", "y", 1, err, sizeof err));
    assert_non_null(strstr(err, "/nonexistent/dir"));
}

/* A safetensors file: u64 LE header length, JSON header, data. */
static void put_safetensors(const char *dir, const char *header, const float *data, size_t n)
{
    size_t hlen = strlen(header);
    size_t total = 8 + hlen + n * sizeof(float);
    unsigned char *buf = malloc(total);
    assert_non_null(buf);
    for (int i = 0; i < 8; i++)
        buf[i] = (unsigned char)((uint64_t)hlen >> (8 * i));
    memcpy(buf + 8, header, hlen);
    memcpy(buf + 8 + hlen, data, n * sizeof(float)); /* the test host is little-endian */
    put(dir, "weights.safetensors", buf, total);
    free(buf);
}

static void test_weights_model(void **state)
{
    const char *dir = *state;
    float data[8] = {1, 2, 3, 4, 5, 6, -0.5f, 0.25f};
    put_safetensors(dir,
                    "{\"0.dense.weight\":{\"dtype\":\"F32\",\"shape\":[3,2],\"data_offsets\":[0,24]},"
                    "\"0.dense.bias\":{\"dtype\":\"F32\",\"shape\":[2],\"data_offsets\":[24,32]},"
                    "\"__metadata__\":{\"format\":\"pt\"}}",
                    data, 8);
    char path[512], err[256];
    snprintf(path, sizeof path, "%s/weights.safetensors", dir);
    json_t *m = rundir_weights_model(path, err, sizeof err);
    assert_non_null(m);
    /* The exact JSON /api/destroy returns: file order, shape then data. */
    char *text = json_dumps(m, JSON_COMPACT);
    assert_string_equal(text, "{\"0.dense.weight\":{\"shape\":[3,2],\"data\":[1.0,2.0,3.0,4.0,"
                              "5.0,6.0]},\"0.dense.bias\":{\"shape\":[2],\"data\":[-0.5,0.25]}}");
    free(text);
    assert_int_equal(json_object_size(m), 2);
    json_t *w = json_object_get(m, "0.dense.weight");
    assert_int_equal(json_integer_value(json_array_get(json_object_get(w, "shape"), 0)), 3);
    json_t *wd = json_object_get(w, "data");
    assert_int_equal(json_array_size(wd), 6);
    assert_true(json_real_value(json_array_get(wd, 5)) == 6.0);
    json_t *bd = json_object_get(json_object_get(m, "0.dense.bias"), "data");
    assert_true(json_real_value(json_array_get(bd, 0)) == -0.5);
    assert_true(json_real_value(json_array_get(bd, 1)) == 0.25);
    json_decref(m);

    /* Malformed: offsets past the data, wrong dtype, a header longer than the file. */
    const char *bad[] = {
        "{\"a\":{\"dtype\":\"F32\",\"shape\":[9],\"data_offsets\":[0,36]}}",
        "{\"a\":{\"dtype\":\"F16\",\"shape\":[2],\"data_offsets\":[0,4]}}",
        "{\"a\":{\"dtype\":\"F32\",\"shape\":[1],\"data_offsets\":[4,2]}}",
        "[1,2,3]",
    };
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        put_safetensors(dir, bad[i], data, 8);
        assert_null(rundir_weights_model(path, err, sizeof err));
    }
    unsigned char huge[16] = {0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0x7f, '{', '}'};
    put(dir, "weights.safetensors", huge, sizeof huge);
    assert_null(rundir_weights_model(path, err, sizeof err));
    unlink(path);
    assert_null(rundir_weights_model(path, err, sizeof err));
    assert_non_null(strstr(err, path));
}

static void test_create_and_remove(void **state)
{
    const char *dir = *state;
    char run[512], err[256], sub[600];
    snprintf(run, sizeof run, "%s/runs", dir);
    assert_int_equal(mkdir(run, 0700), 0);
    assert_true(rundir_path(run, sizeof run, dir, "0123456789ab", NULL));
    assert_true(rundir_create(run, "{\"model\":\"mlp\"}", err, sizeof err));
    snprintf(sub, sizeof sub, "%s/checkpoints", run);
    assert_int_equal(mkdir(sub, 0700), 0);
    put(sub, "ckpt.bin", "x", 1);
    struct stat st;
    assert_int_equal(stat(run, &st), 0);
    assert_int_equal(st.st_mode & 0777, 0700);
    assert_true(rundir_remove(run));
    assert_int_not_equal(stat(run, &st), 0);
    assert_true(rundir_remove(run)); /* already gone is fine */
    char small[8];
    assert_false(rundir_path(small, sizeof small, dir, "0123456789ab", "history.json"));
}

static void test_failure_line(void **state)
{
    const char *dir = *state;
    char path[512], line[300];
    snprintf(path, sizeof path, "%s/train.log", dir);
    /* The engine's diagnostic, then mpirun's framed banners after it. */
    const char *log =
        "Job \"quick\"\n"
        "punch-train: no CUDA device: CUDA driver version is insufficient for CUDA runtime version\n"
        "--------------------------------------------------------------------------\n"
        "Primary job  terminated normally, but 1 process returned\n"
        "--------------------------------------------------------------------------\n"
        "  Exit code:    1\n"
        "--------------------------------------------------------------------------\n";
    put(dir, "train.log", log, strlen(log));
    rundir_failure_line(path, line, sizeof line);
    assert_string_equal(line, "punch-train: no CUDA device: CUDA driver version is insufficient "
                              "for CUDA runtime version");
    /* Without one: the last line that is not a rule of dashes. */
    const char *other = "starting\n  Exit code:    3\r\n-----\n\n";
    put(dir, "train.log", other, strlen(other));
    rundir_failure_line(path, line, sizeof line);
    assert_string_equal(line, "  Exit code:    3");
    /* Cut to the buffer; control bytes made printable. */
    const char *tabbed = "punch-train: a\tb\n";
    put(dir, "train.log", tabbed, strlen(tabbed));
    char small[10];
    rundir_failure_line(path, small, sizeof small);
    assert_string_equal(small, "punch-tra");
    rundir_failure_line(path, line, sizeof line);
    assert_string_equal(line, "punch-train: a b");
    /* The server's paths are not the user's (issue 31 #15). */
    const char *inside =
        "punch-train: data.train: @/srv/punch/uploads/"
        "2bd806c97f0f00e4a4b4c3a1e4fcbd1c0a1d2e3f405162738495a6b7c8d9e0f1/fm.npz: bad; "
        "memory of /sys/fs/cgroup/punchcard/job-0123456789ab: full\n";
    put(dir, "train.log", inside, strlen(inside));
    rundir_failure_line(path, line, sizeof line);
    assert_string_equal(line, "punch-train: data.train: @fm.npz: bad; memory of its cgroup: full");
    /* Missing or only rules: nothing. */
    put(dir, "train.log", "---\n", 4);
    rundir_failure_line(path, line, sizeof line);
    assert_string_equal(line, "");
    snprintf(path, sizeof path, "%s/none.log", dir);
    rundir_failure_line(path, line, sizeof line);
    assert_string_equal(line, "");
}

static bool exists(const char *dir, const char *name)
{
    char path[512];
    snprintf(path, sizeof path, "%s/checkpoints/%s", dir, name);
    return access(path, F_OK) == 0;
}

static void test_prune_checkpoints(void **state)
{
    const char *dir = *state;
    assert_int_equal(rundir_prune_checkpoints(dir, 1), 0); /* no checkpoints/ */
    char sub[512];
    snprintf(sub, sizeof sub, "%s/checkpoints", dir);
    assert_int_equal(mkdir(sub, 0700), 0);
    assert_int_equal(rundir_prune_checkpoints(dir, 1), 0); /* empty */
    const char *names[] = {"weights-epoch-001.safetensors", "weights-epoch-001.npz",
                           "weights-epoch-002.member-0.safetensors",
                           "weights-epoch-002.member-1.safetensors",
                           "weights-epoch-010.safetensors", "weights-epoch-010.npz",
                           "weights-epoch-001.safetensors.tmp42", "ckpt.bin", "notes.txt"};
    for (size_t i = 0; i < sizeof names / sizeof *names; i++)
        put(sub, names[i], "x", 1);
    assert_int_equal(rundir_prune_checkpoints(dir, 0), 0); /* 0 keeps all */
    assert_int_equal(rundir_prune_checkpoints(dir, 2), 2); /* epochs 10 and 2 stay */
    assert_false(exists(dir, "weights-epoch-001.safetensors"));
    assert_false(exists(dir, "weights-epoch-001.npz"));
    assert_true(exists(dir, "weights-epoch-002.member-1.safetensors"));
    assert_int_equal(rundir_prune_checkpoints(dir, 1), 2); /* the members of epoch 2 */
    assert_true(exists(dir, "weights-epoch-010.safetensors") &&
                exists(dir, "weights-epoch-010.npz"));
    assert_true(exists(dir, "weights-epoch-001.safetensors.tmp42") && exists(dir, "ckpt.bin") &&
                exists(dir, "notes.txt"));
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_setup_teardown(test_progress_merge, setup, teardown),
        cmocka_unit_test_setup_teardown(test_progress_end, setup, teardown),
        cmocka_unit_test_setup_teardown(test_progress_missing_and_junk, setup, teardown),
        cmocka_unit_test_setup_teardown(test_records, setup, teardown),
        cmocka_unit_test_setup_teardown(test_weights_model, setup, teardown),
        cmocka_unit_test_setup_teardown(test_create_and_remove, setup, teardown),
        cmocka_unit_test_setup_teardown(test_failure_line, setup, teardown),
        cmocka_unit_test_setup_teardown(test_prune_checkpoints, setup, teardown),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
