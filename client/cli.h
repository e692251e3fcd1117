/* cli.h — what every `punch` command shares: the documented exit codes, the
 * error value that carries a user-actionable message up to main(), the
 * resolved connection settings, and the command entry points.
 *
 * A command returns an exit code; on failure it has filled a cli_error whose
 * message main() prints as "punch: MESSAGE". Commands never call exit(). */
#ifndef PUNCH_CLIENT_CLI_H
#define PUNCH_CLIENT_CLI_H

#include <signal.h>
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
    char msg[4096]; /* a server's message (up to 3 KiB) and our context, uncut */
} cli_error;

/* Fill *err and return code, so failures read `return cli_fail(err, ...)`. */
int cli_fail(cli_error *err, int code, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));

/* Where the server is and who we are; resolved by userconfig.c. */
typedef struct cli_ctx {
    char *url;      /* base URL without a trailing slash */
    char *secret;   /* NULL when none is configured; never printed */
    const char *cacert; /* PEM CA file the server's certificate must chain
                           to (--cacert, PUNCH_CACERT); NULL: the system's */
    bool insecure;  /* --insecure: the secret may go over plain HTTP to a
                       host that is not this machine */
    bool stdout_tty;
} cli_ctx;

/* Checks and stores an option's value: the command's name (for messages),
 * the value as given, and the option's dest. Returns 0, or an exit code
 * (PUNCH_EXIT_USAGE) with *err saying what was wrong. */
typedef int (*cli_take_fn)(const char *cmd, const char *value, void *dest, cli_error *err);

/* One option of a command. Without take it is a switch: *(bool *)dest
 * becomes true when given. With take it wants a value, which take checks
 * and stores through dest. */
typedef struct cli_option {
    const char *name;  /* the long form, --name (a unique prefix also works) */
    char letter;       /* the short form, -x; 0 for none */
    void *dest;
    cli_take_fn take;
} cli_option;

/* Parse the options of argv (argv[0] is the command) against options,
 * ended by an entry whose name is NULL: getopt_long() rules (options and
 * operands in any order, "--" ends options), each value taken as it comes,
 * so the first bad one is the one reported. An unknown option or a missing
 * value is a usage error naming the command and pointing at its --help.
 * On success optind indexes the first operand (argv is permuted to put
 * operands last). Parsing starts afresh on each call, so one process can
 * parse several command lines (the unit tests do). */
int cli_parse_options(int argc, char **argv, const cli_option *options, cli_error *err);

/* cli_take_fn for a value kept as given: *(const char **)dest. */
int cli_take_string(const char *cmd, const char *value, void *dest, cli_error *err);

/* cli_take_fn for --interval: seconds between 0.05 and 3600 into
 * *(double *)dest. */
int cli_take_interval(const char *cmd, const char *value, void *dest, cli_error *err);

/* The single operand (an id or a file) after the options; a usage error
 * naming what is missing or extra, or an empty one. */
int cli_one_operand(int argc, char **argv, const char *what, const char **out, cli_error *err);

/* --url, --secret and --cacert are accepted anywhere on the command line
 * (before a "--"), as `--url U`, `--url=U` and so on, and so is the switch
 * --insecure. This removes them from argv (updating *argc) into *flags,
 * whose pointers point into argv. Returns 0, or PUNCH_EXIT_USAGE when a
 * value is missing or --insecure is given one. */
typedef struct cli_flags {
    const char *url;
    const char *secret;
    const char *cacert;
    bool insecure;
} cli_flags;
int cli_take_connection_flags(int *argc, char **argv, cli_flags *flags, cli_error *err);

/* True when argv holds -h or --help (before any "--"). */
bool cli_wants_help(int argc, char **argv);

/* Sleep between polls, resuming after signals that do not ask to stop:
 * returns early once *stop is non-zero (stop may be NULL: never early). */
void cli_sleep(double seconds, const volatile sig_atomic_t *stop);

#endif
