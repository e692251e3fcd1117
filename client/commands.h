/* commands.h — the `punch` commands: entry points, --help texts, and the
 * parsed form of each command line (parsing is separate from running so
 * it can be unit-tested without a server). Every parser fills *args or
 * returns PUNCH_EXIT_USAGE with *err saying what was wrong. argv[0] is the
 * command name. */
#ifndef PUNCH_CLIENT_COMMANDS_H
#define PUNCH_CLIENT_COMMANDS_H

#include <stdbool.h>
#include <stdio.h>

#include <jansson.h>

#include "cli.h"
#include "httpc.h"

int cmd_submit(const cli_ctx *ctx, int argc, char **argv, cli_error *err);
int cmd_state(const cli_ctx *ctx, int argc, char **argv, cli_error *err);
int cmd_list(const cli_ctx *ctx, int argc, char **argv, cli_error *err);
int cmd_wait(const cli_ctx *ctx, int argc, char **argv, cli_error *err);
int cmd_logs(const cli_ctx *ctx, int argc, char **argv, cli_error *err);
int cmd_cancel(const cli_ctx *ctx, int argc, char **argv, cli_error *err);
int cmd_fetch(const cli_ctx *ctx, int argc, char **argv, cli_error *err);
int cmd_keygen(const cli_ctx *ctx, int argc, char **argv, cli_error *err);
int cmd_resume(const cli_ctx *ctx, int argc, char **argv, cli_error *err);
int cmd_rm(const cli_ctx *ctx, int argc, char **argv, cli_error *err);
int cmd_predict(const cli_ctx *ctx, int argc, char **argv, cli_error *err);
int cmd_generate(const cli_ctx *ctx, int argc, char **argv, cli_error *err);
int cmd_data(const cli_ctx *ctx, int argc, char **argv, cli_error *err);
int cmd_profile(const cli_ctx *ctx, int argc, char **argv, cli_error *err);
int cmd_sweep(const cli_ctx *ctx, int argc, char **argv, cli_error *err);

extern const char cmd_submit_usage[];
extern const char cmd_state_usage[];
extern const char cmd_list_usage[];
extern const char cmd_wait_usage[];
extern const char cmd_logs_usage[];
extern const char cmd_cancel_usage[];
extern const char cmd_fetch_usage[];
extern const char cmd_keygen_usage[];
extern const char cmd_resume_usage[];
extern const char cmd_rm_usage[];
extern const char cmd_predict_usage[];
extern const char cmd_generate_usage[];
extern const char cmd_data_usage[];
extern const char cmd_profile_usage[];
extern const char cmd_sweep_usage[];
int cmd_compare(const cli_ctx *ctx, int argc, char **argv, cli_error *err);
extern const char cmd_compare_usage[];

#define SUBMIT_MAX_SETS 64
typedef struct submit_args {
    const char *file;    /* NULL with --from */
    const char *from;    /* --from ID: that job's spec as written */
    const char *sets[SUBMIT_MAX_SETS]; /* --set PATH=VALUE, in order */
    int n_sets;
    bool wait;
    bool quiet;
    bool dry_run;
    double interval_s;
} submit_args;
int submit_parse_args(int argc, char **argv, submit_args *args, cli_error *err);

typedef struct state_args {
    const char *id; /* NULL: the caller's most recent job */
    bool json;
} state_args;
int state_parse_args(int argc, char **argv, state_args *args, cli_error *err);

typedef struct list_args {
    unsigned states;   /* bit (1u << job_state) per --state given; 0: every state */
    const char *name;  /* --name: a glob (or, without * ? [, a substring) of the job's name */
    bool json;
    long limit;        /* at most this many jobs; 0: one page of the server's default */
    bool all;          /* every job, page after page */
    bool wide;         /* final-metric columns, and a sweep's trials with their params */
} list_args;
int list_parse_args(int argc, char **argv, list_args *args, cli_error *err);

/* Whether job (an API job object) passes list's --state and --name. */
bool list_job_matches(const list_args *args, const json_t *job);

enum { COMPARE_MIN = 2, COMPARE_MAX = 8 };
typedef struct compare_args {
    const char *ids[COMPARE_MAX];
    int n;
} compare_args;
int compare_parse_args(int argc, char **argv, compare_args *args, cli_error *err);

typedef struct wait_args {
    const char *id;
    double interval_s;
    bool quiet;
} wait_args;
int wait_parse_args(int argc, char **argv, wait_args *args, cli_error *err);

typedef struct logs_args {
    const char *id;
    bool follow;
    double interval_s;
} logs_args;
int logs_parse_args(int argc, char **argv, logs_args *args, cli_error *err);

typedef struct cancel_args {
    const char *id;
} cancel_args;
int cancel_parse_args(int argc, char **argv, cancel_args *args, cli_error *err);
/* A command on one job id (cancel, resume): parse ID, call the server
 * with `call`, and on success print with `report` what it answered. */
typedef int (*job_call_fn)(httpc_client *c, const char *id, json_t **job, cli_error *err);
int cmd_on_job(const cli_ctx *ctx, int argc, char **argv, job_call_fn call,
               void (*report)(const char *id, const json_t *job), cli_error *err);

typedef enum fetch_format { FETCH_SAFETENSORS = 1, FETCH_NPZ = 2, FETCH_BOTH = 3 } fetch_format;
typedef struct fetch_args {
    const char *id;
    const char *dir;   /* NULL: ./ID */
    fetch_format format;
    bool all;          /* every file of the run directory */
    bool onnx;         /* also model.onnx (/export?format=onnx) */
} fetch_args;
int fetch_parse_args(int argc, char **argv, fetch_args *args, cli_error *err);

typedef struct profile_args {
    const char *id;
    bool json;         /* profile.json as the job wrote it */
} profile_args;
int profile_parse_args(int argc, char **argv, profile_args *args, cli_error *err);
/* A profile.json (engine/model/profile.c's) of job id as a table on out: a
 * row per layer, then one per step phase. -1, having printed nothing, when
 * it has no "layers" array or "step_ms" object; -1 too on a write error. */
int profile_print_table(const char *id, const json_t *profile, FILE *out);

typedef struct keygen_args {
    const char *identity;
    bool admin;
} keygen_args;
int keygen_parse_args(int argc, char **argv, keygen_args *args, cli_error *err);

/* Follow job id until it ends (cmd_wait.c; also submit --wait). Draws a
 * live bar when tty, plain lines otherwise, nothing when quiet. Returns the
 * job's exit code (PUNCH_EXIT_OK when it succeeded) with *err saying how it
 * ended, or a transport/API error. */
typedef struct wait_options {
    double interval_s;
    bool quiet;
    bool tty;
} wait_options;
int wait_follow(httpc_client *c, const char *id, const wait_options *opts, cli_error *err);

#endif
