/* main.c — `punch`, the command-line client of punchcardd: finds the
 * server and secret, dispatches to one command, and turns its error value
 * into a message on stderr and a documented exit code. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "cli.h"
#include "commands.h"
#include "userconfig.h"

static const char punch_usage[] =
    "usage: punch [--url URL] [--secret SECRET] [--cacert FILE] [--insecure] COMMAND [ARGS]\n"
    "\n"
    "Submit training jobs to punchcardd, watch them and fetch their results.\n"
    "\n"
    "commands:\n"
    "  submit JOB.json [--wait] [--quiet] [--dry-run]\n"
    "  submit --from ID [--set PATH=VALUE ...]  a new job from ID's spec, with changes\n"
    "                                       validate a job spec locally, then queue it\n"
    "  state [ID] [--json]                  one job's state and progress (default: your latest)\n"
    "  list [--state S] [--name PATTERN] [--limit N|--all] [--wide] [--json]\n"
    "                                       your jobs, newest first (the newest 100)\n"
    "  compare ID ID [ID...]                2 to 8 jobs: their spec fields that differ and\n"
    "                                       their final metrics, side by side\n"
    "  wait ID [--quiet]                    follow a job to its end with a progress bar\n"
    "  logs [-f] ID                         the job's train.log (-f: follow until it ends)\n"
    "  cancel ID                            cancel a queued or running job\n"
    "  fetch ID [-o DIR] [--format F] [--all]\n"
    "                                       download weights, history.json, write curves.svg\n"
    "                                       (--all: every file of the run directory)\n"
    "  rm ID...                             delete finished jobs: record and run directory\n"
    "  resume ID                            queue a failed/cancelled/timed-out job again,\n"
    "                                       from its last checkpoint\n"
    "  predict ID IN.npy [-o OUT.npy]       the trained model's outputs for new inputs\n"
    "  generate ID PROMPT [--max-new-tokens N] [--temperature T] [--top-k K] [--seed S]\n"
    "                                       a language model's continuation of PROMPT\n"
    "  profile ID [--json]                  time per layer and step phase of a job run with\n"
    "                                       training.profile: true (its profile.json)\n"
    "  data push FILE [NAME] | list | rm NAME\n"
    "                                       your uploaded datasets (\"@NAME\" in a job)\n"
    "  sweep submit FILE | list | status ID | cancel ID | best ID\n"
    "                                       hyperparameter sweeps: grid, random, asha\n"
    "  keygen --identity NAME [--admin]     make a new secret and its secrets.json entry\n"
    "  help [COMMAND]                       this text, or a command's (also: COMMAND --help)\n"
    "  version                              punch's version (also: --version)\n"
    "\n"
    "server and secret (first found wins):\n"
    "  --url URL, --secret SECRET           flags (anywhere on the line)\n"
    "  PUNCH_URL, PUNCH_SECRET              environment\n"
    "  ~/.config/punch/config               lines `url = http://host:8080`, `secret = ...`\n"
    "                                       (PUNCH_CONFIG or XDG_CONFIG_HOME move it)\n"
    "  the URL defaults to " USERCONFIG_DEFAULT_URL "; the secret is never printed.\n"
    "  --cacert FILE, PUNCH_CACERT          the CA (PEM) an https:// server's certificate\n"
    "                                       must chain to (default: the system's CAs)\n"
    "  --insecure                           allow sending the secret over plain http:// to\n"
    "                                       another machine (refused otherwise)\n"
    "  Prefer the environment or the config file (chmod 600) to --secret, which other\n"
    "  users can see in the process list.\n"
    "\n"
    "exit codes:\n"
    "  0  success (for wait and submit --wait: the job succeeded)\n"
    "  1  the job failed\n"
    "  2  usage error, bad configuration, or invalid job spec\n"
    "  3  cannot reach the server\n"
    "  4  no secret, or the server refused it\n"
    "  5  no such job (or not yours), or no result yet\n"
    "  6  other server refusal or error (e.g. cancelling a finished job, queue limit)\n"
    "  7  the job was cancelled\n"
    "  8  the job hit its time limit\n"
    "  9  a local file could not be read or written\n"
    "  130  wait interrupted (Ctrl-C); the job goes on\n";

typedef struct punch_command {
    const char *name;
    int (*run)(const cli_ctx *ctx, int argc, char **argv, cli_error *err);
    const char *usage;
    bool needs_server;
} punch_command;

static const punch_command punch_commands[] = {
    {"submit", cmd_submit, cmd_submit_usage, true},
    {"state", cmd_state, cmd_state_usage, true},
    {"list", cmd_list, cmd_list_usage, true},
    {"wait", cmd_wait, cmd_wait_usage, true},
    {"logs", cmd_logs, cmd_logs_usage, true},
    {"cancel", cmd_cancel, cmd_cancel_usage, true},
    {"fetch", cmd_fetch, cmd_fetch_usage, true},
    {"keygen", cmd_keygen, cmd_keygen_usage, false},
    {"resume", cmd_resume, cmd_resume_usage, true},
    {"rm", cmd_rm, cmd_rm_usage, true},
    {"predict", cmd_predict, cmd_predict_usage, true},
    {"generate", cmd_generate, cmd_generate_usage, true},
    {"data", cmd_data, cmd_data_usage, true},
    {"profile", cmd_profile, cmd_profile_usage, true},
    {"sweep", cmd_sweep, cmd_sweep_usage, true},
    {"compare", cmd_compare, cmd_compare_usage, true},
};

static const punch_command *punch_find(const char *name)
{
    for (size_t i = 0; i < sizeof punch_commands / sizeof punch_commands[0]; i++)
        if (strcmp(punch_commands[i].name, name) == 0)
            return &punch_commands[i];
    return NULL;
}

static int punch_help(int argc, char **argv)
{
    if (argc < 3) {
        fputs(punch_usage, stdout);
        return PUNCH_EXIT_OK;
    }
    const punch_command *cmd = punch_find(argv[2]);
    if (cmd == NULL) {
        fprintf(stderr, "punch: no command \"%s\"; see punch --help\n", argv[2]);
        return PUNCH_EXIT_USAGE;
    }
    fputs(cmd->usage, stdout);
    return PUNCH_EXIT_OK;
}

static int punch_run(const punch_command *cmd, const cli_flags *flags, int argc, char **argv,
                     cli_error *err)
{
    cli_ctx ctx = {.stdout_tty = isatty(STDOUT_FILENO) == 1};
    if (cmd->needs_server) {
        char *path = userconfig_default_path();
        userconfig_sources src = {
            .flag_url = flags->url,
            .flag_secret = flags->secret,
            .env_url = getenv("PUNCH_URL"),
            .env_secret = getenv("PUNCH_SECRET"),
            .file_path = path,
            .warn = stderr,
        };
        int rc = userconfig_resolve(&src, &ctx, err);
        free(path);
        if (rc != 0)
            return rc;
        ctx.cacert = flags->cacert ? flags->cacert : getenv("PUNCH_CACERT");
        if (ctx.cacert && !ctx.cacert[0])
            ctx.cacert = NULL;
        ctx.insecure = flags->insecure;
    }
    int rc = cmd->run(&ctx, argc, argv, err);
    userconfig_free(&ctx);
    return rc;
}

int main(int argc, char **argv)
{
    cli_error err = {0};
    cli_flags flags = {0};
    if (cli_take_connection_flags(&argc, argv, &flags, &err) != 0) {
        fprintf(stderr, "punch: %s\n", err.msg);
        return err.code;
    }
    if (argc < 2) {
        fputs(punch_usage, stderr);
        return PUNCH_EXIT_USAGE;
    }
    const char *name = argv[1];
    if (strcmp(name, "help") == 0 || strcmp(name, "--help") == 0 || strcmp(name, "-h") == 0)
        return punch_help(argc, argv);
    if (strcmp(name, "--version") == 0 || strcmp(name, "version") == 0) {
        printf("punch %s\n", PUNCH_VERSION);
        return PUNCH_EXIT_OK;
    }
    const punch_command *cmd = punch_find(name);
    if (cmd == NULL) {
        fprintf(stderr, "punch: no command \"%s\"; see punch --help\n", name);
        return PUNCH_EXIT_USAGE;
    }
    if (cli_wants_help(argc - 1, argv + 1)) {
        fputs(cmd->usage, stdout);
        return PUNCH_EXIT_OK;
    }
    int rc = punch_run(cmd, &flags, argc - 1, argv + 1, &err);
    if (rc != PUNCH_EXIT_OK && err.msg[0] != '\0')
        fprintf(stderr, "punch: %s\n", err.msg);
    return rc;
}
