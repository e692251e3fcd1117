/* main.c — punch-train's command line: validate a job, train it (one
 * process, or one MPI rank of a distributed trainer), or evaluate saved
 * weights. Usage errors and invalid specs exit 2, runtime failures exit 1,
 * each with one line "punch-train: <reason>" on stderr.
 *
 * The environment's knobs (train/options.h) are read and checked once,
 * here, before any work starts; a bad value is a usage error.
 *
 * MPI: the single trainer never initialises MPI (a one-rank job needs no
 * communicator, starts faster, and leaves no Open MPI allocations for the
 * leak checker); the distributed trainers initialise it in dist_train. */
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "export/onnx_export.h"
#include "gpu/gpu_debug.h"
#include "train/memlimit.h"
#include "train/generate.h"
#include "train/options.h"
#include "train/predict.h"
#include "train/train.h"
#include "train/warmstart.h"
#include "distributed/dist.h"
#include "jobspec/spec.h"

#define MAX_ROOTS 16

static const char usage_text[] =
    "usage: punch-train JOB.json --out DIR [--datasets DIR[:DIR...]] [--threads N]\n"
    "                   [--resume] [--evaluate-only --weights FILE]\n"
    "                   [--predict INPUT.npy --weights FILE]\n"
    "                   [--generate REQUEST.json --weights FILE]\n"
    "       punch-train JOB.json --export-onnx FILE [--weights FILE]\n"
    "       punch-train --validate JOB.json\n"
    "\n"
    "  --out DIR          run directory: progress.jsonl, history.json, weights.*, checkpoints/\n"
    "  --datasets DIRS    colon-separated roots that dataset names resolve under, and\n"
    "                     nowhere else (default: /usr/share/datasets, then the roots in\n"
    "                     $PUNCH_DATASETS; punchcardd passes its `datasets` setting)\n"
    "  --threads N        CPU threads (default: resources.threads_per_worker)\n"
    "  --resume           continue from DIR/checkpoints/ckpt.bin\n"
    "  --evaluate-only    evaluate --weights FILE (.safetensors or .npz) on the test set\n"
    "  --predict IN.npy   the outputs of --weights FILE's model for IN.npy's raw inputs\n"
    "                     (scaled as the training data were) into DIR/predictions.npy,\n"
    "                     float32 [N, outputs]; no data is loaded\n"
    "  --generate REQ     a language model's continuation of REQ's prompt (JSON: prompt,\n"
    "                     max_new_tokens, temperature, top_k, seed) into\n"
    "                     DIR/generated.json: {\"text\", \"tokens\"}\n"
    "  --export-onnx FILE the model as ONNX (docs/interchange.md) with --weights FILE's\n"
    "                     weights and input scaling, or its initial weights without\n"
    "                     --weights\n"
    "  --validate         check the job, print its summary, and exit\n";

typedef struct cli {
    const char *job;
    const char *out;
    const char *datasets;
    const char *weights;
    const char *predict;
    const char *export_onnx;
    const char *generate;
    int threads;
    bool resume, evaluate_only, validate, help;
} cli;

static int usage_error(const char *fmt, const char *arg)
{
    fprintf(stderr, "punch-train: ");
    fprintf(stderr, fmt, arg);
    fprintf(stderr, " (see --help)\n");
    return 2;
}

/* An option's value: "--opt VALUE" or "--opt=VALUE". */
static const char *cli_value(int argc, char **argv, int *i, const char *name)
{
    size_t n = strlen(name);
    if (strncmp(argv[*i], name, n) == 0 && argv[*i][n] == '=')
        return argv[*i] + n + 1;
    if (*i + 1 >= argc)
        return NULL;
    return argv[++*i];
}

static bool cli_is(const char *arg, const char *name)
{
    size_t n = strlen(name);
    return strncmp(arg, name, n) == 0 && (arg[n] == '\0' || arg[n] == '=');
}

static int cli_parse(int argc, char **argv, cli *c)
{
    memset(c, 0, sizeof *c);
    for (int i = 1; i < argc; i++) {
        const char *a = argv[i];
        const char **slot = NULL;
        const char *name = NULL;
        if (strcmp(a, "--help") == 0 || strcmp(a, "-h") == 0) {
            c->help = true;
        } else if (strcmp(a, "--resume") == 0) {
            c->resume = true;
        } else if (strcmp(a, "--evaluate-only") == 0) {
            c->evaluate_only = true;
        } else if (strcmp(a, "--validate") == 0) {
            c->validate = true;
        } else if (cli_is(a, "--out")) {
            slot = &c->out;
            name = "--out";
        } else if (cli_is(a, "--datasets")) {
            slot = &c->datasets;
            name = "--datasets";
        } else if (cli_is(a, "--weights")) {
            slot = &c->weights;
            name = "--weights";
        } else if (cli_is(a, "--predict")) {
            slot = &c->predict;
            name = "--predict";
        } else if (cli_is(a, "--export-onnx")) {
            slot = &c->export_onnx;
            name = "--export-onnx";
        } else if (cli_is(a, "--generate")) {
            slot = &c->generate;
            name = "--generate";
        } else if (cli_is(a, "--threads")) {
            const char *v = cli_value(argc, argv, &i, "--threads");
            char *end = NULL;
            long n = v ? strtol(v, &end, 10) : 0;
            if (!v || *end || n < 1 || n > 1024)
                return usage_error("--threads needs a number from 1 to 1024, got \"%s\"",
                                   v ? v : "");
            c->threads = (int)n;
        } else if (a[0] == '-' && a[1] != '\0') {
            return usage_error("unknown option %s", a);
        } else if (!c->job) {
            c->job = a;
        } else {
            return usage_error("unexpected argument \"%s\": one JOB.json only", a);
        }
        if (slot) {
            *slot = cli_value(argc, argv, &i, name);
            if (!*slot || !**slot)
                return usage_error("%s needs a value", name);
        }
    }
    if (c->help)
        return 0;
    if (!c->job)
        return usage_error("%s", "missing JOB.json");
    if (c->validate)
        return 0;
    if (c->export_onnx && (c->predict || c->evaluate_only || c->resume || c->out))
        return usage_error("%s", "--export-onnx takes only --weights FILE");
    if (c->export_onnx)
        return 0;
    if (!c->out)
        return usage_error("%s", "missing --out DIR");
    if (c->predict && (c->evaluate_only || c->resume || !c->weights))
        return usage_error("%s", "--predict needs --weights FILE, without --evaluate-only "
                                 "or --resume");
    if (c->generate && (c->predict || c->evaluate_only || c->resume || !c->weights))
        return usage_error("%s", "--generate needs --weights FILE, without --predict, "
                                 "--evaluate-only or --resume");
    if (c->generate)
        return 0;
    if (!c->predict && c->evaluate_only != (c->weights != NULL))
        return usage_error("%s", "--evaluate-only and --weights FILE go together");
    if (c->evaluate_only && c->resume)
        return usage_error("%s", "--resume does not apply to --evaluate-only");
    return 0;
}

/* Split a colon-separated list into roots (the string is modified; empty
 * entries are skipped). -1 when it names more than MAX_ROOTS. */
static int roots_add_list(char *list, const char **dirs, int *n)
{
    for (char *tok = strtok(list, ":"); tok; tok = strtok(NULL, ":")) {
        if (*n == MAX_ROOTS)
            return -1;
        dirs[(*n)++] = tok;
    }
    return 0;
}

/* The dataset roots: --datasets alone when given (what punchcardd passes,
 * from its `datasets` setting), else /usr/share/datasets followed by
 * $PUNCH_DATASETS. punch-train reads no config file: punchcardd has no
 * default one either (only --config FILE), so there is no installed file
 * both would agree on. *list holds the strings the roots point into (free
 * it). 0, or the exit code after a one-line message. */
static int roots_make(const cli *c, const engine_options *env, const char **dirs, int *n,
                      char **list)
{
    *n = 0;
    const char *src = c->datasets;
    if (!src) {
        dirs[(*n)++] = "/usr/share/datasets";
        src = env->datasets;
    }
    *list = src ? strdup(src) : NULL;
    if (src && !*list) {
        fprintf(stderr, "punch-train: out of memory\n");
        return 1;
    }
    if (*list && roots_add_list(*list, dirs, n) != 0) {
        fprintf(stderr, "punch-train: %s names more than %d dataset roots\n",
                c->datasets ? "--datasets" : "PUNCH_DATASETS", MAX_ROOTS);
        return 2;
    }
    return 0;
}

static int run(const cli *c, const engine_options *env, const job_spec *spec,
               const dataset_roots *roots)
{
    char err[1024];
    if (c->export_onnx) {
        int rc = c->weights ? onnx_export_weights_file(spec, c->weights, c->export_onnx, err,
                                                       sizeof err)
                            : onnx_export_initial(spec, c->export_onnx, err, sizeof err);
        if (rc != 0)
            fprintf(stderr, "punch-train: %s\n", err);
        return rc != 0 ? 1 : 0;
    }
    if (spec->task == TASK_PREDICT && !c->predict) {
        train_options o = {.out_dir = c->out, .roots = *roots, .threads = c->threads,
                           .local_rank = env->local_rank};
        spec_print_summary(spec, stdout);
        fflush(stdout);
        int rc = train_predict_task(spec, &o, err, sizeof err);
        if (rc != 0)
            fprintf(stderr, "punch-train: %s\n", err);
        else
            printf("predictions written to %s/predictions.npy\n", c->out);
        return rc;
    }
    if (c->predict) {
        train_options o = {.out_dir = c->out, .roots = *roots, .threads = c->threads,
                           .local_rank = env->local_rank, .weights = c->weights};
        int rc = train_predict(spec, &o, c->predict, err, sizeof err);
        if (rc != 0)
            fprintf(stderr, "punch-train: %s\n", err);
        return rc;
    }
    if (c->generate) {
        train_options o = {.out_dir = c->out, .roots = *roots, .threads = c->threads,
                           .local_rank = env->local_rank, .weights = c->weights};
        int rc = train_generate(spec, &o, c->generate, err, sizeof err);
        if (rc != 0)
            fprintf(stderr, "punch-train: %s\n", err);
        return rc;
    }
    if (dist_handles(spec)) {
        dist_options d = {.out_dir = c->out, .roots = *roots, .threads = c->threads,
                          .resume = c->resume, .env = *env};
        if (c->evaluate_only) {
            fprintf(stderr, "punch-train: --evaluate-only runs on one process; set "
                    "distributed.trainer to \"single\" or evaluate the weights of one rank\n");
            return 2;
        }
        int rc = dist_train(spec, &d);
        if (rc == 0)
            onnx_export_after_job(spec, c->out);
        return rc;
    }
    if (env->world_size > 1) {
        /* Every rank would train the same model into the same directory. */
        fprintf(stderr, "punch-train: distributed.trainer \"single\" runs on one rank but "
                "mpirun started %d; use -np 1 or a distributed trainer\n", env->world_size);
        return 2;
    }
    train_options o = {.out_dir = c->out, .roots = *roots, .threads = c->threads,
                       .local_rank = env->local_rank, .resume = c->resume,
                       .weights = c->weights, .verbose = true};
    int rc;
    if (c->evaluate_only) {
        rc = train_evaluate_only(spec, &o, err, sizeof err);
    } else {
        spec_print_summary(spec, stdout);
        fflush(stdout);
        rc = train_single(spec, &o, err, sizeof err);
        if (rc == 0)
            onnx_export_after_job(spec, c->out);
    }
    if (rc != 0) {
        fprintf(stderr, "punch-train: %s\n", err);
        return 1;
    }
    return 0;
}

int main(int argc, char **argv)
{
    cli c;
    int rc = cli_parse(argc, argv, &c);
    if (rc != 0)
        return rc;
    if (c.help) {
        fputs(usage_text, stdout);
        return 0;
    }
    spec_error serr;
    job_spec *spec = spec_load_file(c.job, &serr);
    if (!spec) {
        char msg[SPEC_ERROR_STR_MAX];
        fprintf(stderr, "punch-train: %s: %s\n", c.job, spec_error_str(&serr, msg, sizeof msg));
        return 2;
    }
    if (c.validate) {
        spec_print_summary(spec, stdout);
        char why[1024];
        rc = warmstart_check(spec, why, sizeof why) == 0 ? 0 : 2;
        if (rc != 0)
            fprintf(stderr, "punch-train: %s\n", why);
        spec_free(spec);
        return rc;
    }
    engine_options env;
    char err[512];
    if (engine_options_read(&env, launch_env_getenv, err, sizeof err) != 0) {
        fprintf(stderr, "punch-train: %s\n", err);
        spec_free(spec);
        return 2;
    }
    if (env.rank_memory_max > 0 && memlimit_apply(env.rank_memory_max, err, sizeof err) < 0) {
        fprintf(stderr, "punch-train: PUNCH_RANK_MEMORY_MAX: %s\n", err);
        spec_free(spec);
        return 2;
    }
    gpu_debug_set_sync(env.gpu_sync);
    const char *dirs[MAX_ROOTS];
    int n = 0;
    char *list = NULL;
    rc = roots_make(&c, &env, dirs, &n, &list);
    if (rc == 0) {
        dataset_roots roots = {dirs, n};
        rc = run(&c, &env, spec, &roots);
    }
    free(list);
    spec_free(spec);
    return rc;
}
