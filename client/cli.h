/* cli.h — what every `punch` command shares: the documented exit codes, the
 * error value that carries a user-actionable message up to main(), the
 * resolved connection settings, and the command entry points.
 *
 * A command returns an exit code; on failure it has filled a cli_error whose
 * message main() prints as "punch: MESSAGE". Commands never call exit(). */
#ifndef PUNCH_CLIENT_CLI_H
#define PUNCH_CLIENT_CLI_H

#include <stdbool.h>
#include <stdio.h>

/* Exit codes: part of the interface scripts rely on; keep in sync with
 * `punch --help` (main.c) and the README. */
enum punch_exit {
    PUNCH_EXIT_OK = 0,
    PUNCH_EXIT_JOB_FAILED = 1,   /* the job failed */
    PUNCH_EXIT_USAGE = 2,        /* bad arguments, bad config, invalid job spec */
    PUNCH_EXIT_UNREACHABLE = 3,  /* cannot connect to punchcardd */
    PUNCH_EXIT_AUTH = 4,         /* no secret, or the server refused it */
    PUNCH_EXIT_NOT_FOUND = 5,    /* unknown job id (or not yours), or no result yet */
    PUNCH_EXIT_SERVER = 6,       /* any other refusal or server error */
    PUNCH_EXIT_CANCELLED = 7,    /* the job was cancelled */
    PUNCH_EXIT_TIMEOUT = 8,      /* the job hit its time limit */
    PUNCH_EXIT_LOCAL = 9,        /* a local file could not be read or written */
    PUNCH_EXIT_INTERRUPTED = 130, /* wait stopped by Ctrl-C or SIGTERM; the job goes on */
};

typedef struct cli_error {
    int code;
    char msg[1536];
} cli_error;

/* Fill *err and return code, so failures read `return cli_fail(err, ...)`. */
int cli_fail(cli_error *err, int code, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));

/* Where the server is and who we are; resolved by config.c. */
typedef struct cli_ctx {
    char *url;      /* base URL without a trailing slash */
    char *secret;   /* NULL when none is configured; never printed */
    bool stdout_tty;
} cli_ctx;

/* getopt_long() with the messages punch wants: an unknown option or a
 * missing argument becomes a usage error naming the command (argv[0]).
 * Returns the option character, -1 at the end, or '?' with *err filled.
 * Callers set `optind = 0` before the first call: glibc then starts afresh,
 * so a command line can be parsed more than once per process (the unit tests
 * do). */
struct option;
int cli_getopt(int argc, char **argv, const char *shortopts,
               const struct option *longopts, cli_error *err);

/* --url and --secret are accepted anywhere on the command line (before a
 * "--"), as `--url U`, `--url=U`, `--secret S` or `--secret=S`. This
 * removes them from argv (updating *argc) into *flags, whose pointers
 * point into argv. Returns 0, or PUNCH_EXIT_USAGE when a value is missing. */
typedef struct cli_flags {
    const char *url;
    const char *secret;
} cli_flags;
int cli_take_connection_flags(int *argc, char **argv, cli_flags *flags, cli_error *err);

/* True when argv holds -h or --help (before any "--"). */
bool cli_wants_help(int argc, char **argv);

#endif
