/* cli.c — the small helpers every command uses: error values, option
 * parsing from a table with messages that name the command and point at
 * its --help, and the sleep between polls. */
#include "cli.h"

#include <getopt.h>
#include <math.h>
#include <signal.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

/* Options a command may have (punch's largest has 4). */
#define CLI_MAX_OPTIONS 16
/* getopt_long() vals of long-only options: CLI_LONG_ONLY + their index,
 * past every char a letter can be. */
#define CLI_LONG_ONLY 256

int cli_fail(cli_error *err, int code, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(err->msg, sizeof err->msg, fmt, ap);
    va_end(ap);
    err->code = code;
    return code;
}

/* getopt_long() with punch's messages: an unknown option or a missing value
 * becomes a usage error naming the command (argv[0]). Returns the option's
 * val, -1 at the end, or '?' with *err filled. */
static int cli_getopt(int argc, char **argv, const char *shortopts,
                      const struct option *longopts, cli_error *err)
{
    char opts[64];
    /* A leading ':' makes getopt report a missing argument as ':' and stay
     * quiet; we print our own message instead. */
    snprintf(opts, sizeof opts, ":%s", shortopts);
    opterr = 0;
    int c = getopt_long(argc, argv, opts, longopts, NULL);
    if (c == '?') {
        const char *bad = argv[optind - 1];
        /* optopt is a short option's letter; a long-only option's val is
         * past any letter, and the argument itself says more. */
        if (optopt > 0 && optopt < CLI_LONG_ONLY && optopt != '?')
            cli_fail(err, PUNCH_EXIT_USAGE, "%s: unknown option -%c; see punch %s --help",
                     argv[0], optopt, argv[0]);
        else
            cli_fail(err, PUNCH_EXIT_USAGE, "%s: unknown option %s; see punch %s --help",
                     argv[0], bad, argv[0]);
        return '?';
    }
    if (c == ':') {
        cli_fail(err, PUNCH_EXIT_USAGE, "%s: option %s needs a value; see punch %s --help",
                 argv[0], argv[optind - 1], argv[0]);
        return '?';
    }
    return c;
}

int cli_parse_options(int argc, char **argv, const cli_option *options, cli_error *err)
{
    struct option longopts[CLI_MAX_OPTIONS + 1];
    char shortopts[2 * CLI_MAX_OPTIONS + 1];
    size_t n = 0, pos = 0;
    for (; options[n].name != NULL; n++) {
        if (n == CLI_MAX_OPTIONS)
            return cli_fail(err, PUNCH_EXIT_LOCAL, "%s: more than %d options", argv[0],
                            CLI_MAX_OPTIONS);
        const cli_option *o = &options[n];
        longopts[n] = (struct option){o->name, o->take ? required_argument : no_argument, NULL,
                                      o->letter ? o->letter : CLI_LONG_ONLY + (int)n};
        if (o->letter) {
            shortopts[pos++] = o->letter;
            if (o->take)
                shortopts[pos++] = ':';
        }
    }
    longopts[n] = (struct option){NULL, 0, NULL, 0};
    shortopts[pos] = '\0';

    optind = 0; /* glibc: 0 starts afresh, forgetting the last argv */
    int c;
    while ((c = cli_getopt(argc, argv, shortopts, longopts, err)) != -1) {
        if (c == '?')
            return err->code;
        size_t i = 0;
        while (i < n && longopts[i].val != c)
            i++;
        const cli_option *o = &options[i];
        if (o->take == NULL)
            *(bool *)o->dest = true;
        else if (o->take(argv[0], optarg, o->dest, err) != 0)
            return err->code;
    }
    return 0;
}

int cli_take_string(const char *cmd, const char *value, void *dest, cli_error *err)
{
    (void)cmd;
    (void)err;
    *(const char **)dest = value;
    return 0;
}

int cli_take_interval(const char *cmd, const char *value, void *dest, cli_error *err)
{
    char *end = NULL;
    double v = strtod(value, &end);
    if (end == value || *end != '\0' || !(v >= 0.05 && v <= 3600))
        return cli_fail(err, PUNCH_EXIT_USAGE,
                        "%s: --interval wants seconds between 0.05 and 3600, got \"%s\"", cmd,
                        value);
    *(double *)dest = v;
    return 0;
}

bool cli_wants_help(int argc, char **argv)
{
    for (int i = 1; i < argc; i++) {
        if (strcmp(argv[i], "--") == 0)
            return false;
        if (strcmp(argv[i], "-h") == 0 || strcmp(argv[i], "--help") == 0)
            return true;
    }
    return false;
}

/* If arg is `--NAME` or `--NAME=VALUE`, return a pointer to what follows
 * the name ("" or "=VALUE"), else NULL. */
static const char *cli_match_flag(const char *arg, const char *name)
{
    size_t n = strlen(name);
    if (strncmp(arg, "--", 2) != 0 || strncmp(arg + 2, name, n) != 0)
        return NULL;
    const char *rest = arg + 2 + n;
    return (*rest == '\0' || *rest == '=') ? rest : NULL;
}

int cli_take_connection_flags(int *argc, char **argv, cli_flags *flags, cli_error *err)
{
    static const char *const names[] = {"url", "secret", "cacert", "insecure"};
    enum { N_NAMES = sizeof names / sizeof names[0], INSECURE = 3 };
    int out = 0;
    int i = 0;
    while (i < *argc) {
        if (strcmp(argv[i], "--") == 0) {
            while (i < *argc)
                argv[out++] = argv[i++];
            break;
        }
        int which = -1;
        const char *rest = NULL;
        for (int k = 0; k < N_NAMES && which < 0; k++) {
            rest = cli_match_flag(argv[i], names[k]);
            if (rest != NULL)
                which = k;
        }
        if (which < 0) {
            argv[out++] = argv[i++];
            continue;
        }
        if (which == INSECURE) {
            if (*rest == '=')
                return cli_fail(err, PUNCH_EXIT_USAGE, "option --insecure takes no value");
            flags->insecure = true;
            i += 1;
            continue;
        }
        const char *value;
        if (*rest == '=') {
            value = rest + 1;
            i += 1;
        } else if (i + 1 < *argc) {
            value = argv[i + 1];
            i += 2;
        } else {
            return cli_fail(err, PUNCH_EXIT_USAGE, "option --%s needs a value; see punch --help",
                            names[which]);
        }
        if (which == 0)
            flags->url = value;
        else if (which == 1)
            flags->secret = value;
        else
            flags->cacert = value;
    }
    *argc = out;
    argv[out] = NULL;
    return 0;
}

void cli_sleep(double seconds, const volatile sig_atomic_t *stop)
{
    struct timespec ts = {.tv_sec = (time_t)seconds,
                          .tv_nsec = (long)((seconds - floor(seconds)) * 1e9)};
    while (nanosleep(&ts, &ts) != 0 && !(stop && *stop))
        ;
}

int cli_one_operand(int argc, char **argv, const char *what, const char **out, cli_error *err)
{
    if (optind >= argc)
        return cli_fail(err, PUNCH_EXIT_USAGE, "%s: missing %s; see punch %s --help", argv[0],
                        what, argv[0]);
    if (optind + 1 < argc)
        return cli_fail(err, PUNCH_EXIT_USAGE, "%s: unexpected argument \"%s\"; see punch %s "
                        "--help", argv[0], argv[optind + 1], argv[0]);
    if (argv[optind][0] == '\0')
        return cli_fail(err, PUNCH_EXIT_USAGE, "%s: empty %s", argv[0], what);
    *out = argv[optind];
    return 0;
}
