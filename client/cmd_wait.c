/* cmd_wait.c — `punch wait ID`: follow a job to its end. On a terminal a
 * live bar is redrawn in place and a Keras-style line is printed per
 * finished epoch; in a pipe, plain lines (state changes, epochs, and a
 * progress line now and then). The exit code is the job's outcome. */
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <unistd.h>

#include "commands.h"
#include "jobtext.h"
#include "progress.h"
#include "remote.h"
#include "timeutil/timeutil.h"
#include "safetext.h"

/* How long to keep polling a server that went away (it may be restarting:
 * punchcardd re-adopts running jobs). */
#define WAIT_RECONNECT_S 30.0
/* In a pipe, at most one progress line per this many seconds. */
#define WAIT_PLAIN_EVERY_S 10.0

const char cmd_wait_usage[] =
    "usage: punch wait ID [--interval SECONDS] [--quiet]\n"
    "\n"
    "Follow a job until it ends. On a terminal: a live bar with epoch, batch,\n"
    "samples/s, loss, accuracy and ETA, and one line per finished epoch. In a\n"
    "pipe: plain lines. If the server goes away while waiting, keeps retrying for\n"
    "30 s (one that cannot be reached at all is an error at once).\n"
    "\n"
    "  --interval SECONDS    how often to poll (default 1)\n"
    "  -q, --quiet           print nothing; only the exit code tells\n"
    "\n"
    "Ctrl-C stops waiting, not the job (use punch cancel for that).\n"
    "\n"
    "exit: 0 succeeded, 1 failed, 7 cancelled, 8 timed out (its time limit),\n"
    "      3 unreachable, 4 auth, 5 no such job, 130 interrupted (the job goes on).\n";

int wait_parse_args(int argc, char **argv, wait_args *args, cli_error *err)
{
    *args = (wait_args){.interval_s = 1.0};
    const cli_option options[] = {
        {.name = "interval", .dest = &args->interval_s, .take = cli_take_interval},
        {.name = "quiet", .letter = 'q', .dest = &args->quiet},
        {0},
    };
    if (cli_parse_options(argc, argv, options, err) != 0)
        return err->code;
    return cli_one_operand(argc, argv, "the job id", &args->id, err);
}

/* Set by Ctrl-C (SIGINT) or SIGTERM while following: stop, tidy the
 * terminal and say the job goes on, instead of dying mid-bar. */
static volatile sig_atomic_t wait_interrupted;

static void wait_on_signal(int sig)
{
    wait_interrupted = sig;
}

static int wait_terminal_width(void)
{
    struct winsize ws;
    if (ioctl(STDOUT_FILENO, TIOCGWINSZ, &ws) == 0 && ws.ws_col > 20)
        return ws.ws_col;
    const char *cols = getenv("COLUMNS");
    int n = cols ? atoi(cols) : 0;
    return n > 20 ? n : 80;
}

/* What has been shown so far. */
typedef struct wait_view {
    const wait_options *opts;
    const char *id;
    char state[32];
    size_t epochs_shown;
    bool bar_drawn;
    double last_plain;   /* monotonic time of the last plain progress line */
    json_t *last_progress;
} wait_view;

/* Erase the live bar so a permanent line can take its place. */
static void wait_clear_bar(wait_view *v)
{
    if (v->bar_drawn)
        fputs("\r\033[K", stdout);
    v->bar_drawn = false;
}

static void wait_print(wait_view *v, const char *line)
{
    wait_clear_bar(v);
    printf("%s\n", line);
}

/* Print the epochs history.json holds that we have not shown. */
static void wait_show_epochs(wait_view *v, httpc_client *c, const json_t *job)
{
    json_t *history = NULL;
    cli_error ignored;
    /* No history yet (404) or a transient error: the next poll retries. */
    if (remote_job_history(c, v->id, &history, &ignored) != 0)
        return;
    size_t n = progress_history_epochs(history);
    const json_t *p = json_object_get(job, "progress");
    int epochs = (int)json_number_value(json_object_get(p, "epochs"));
    if (epochs <= 0)
        epochs = (int)n;
    for (size_t i = v->epochs_shown; i < n; i++) {
        char line[1024];
        progress_format_epoch(history, i, epochs, line, sizeof line);
        wait_print(v, line);
    }
    if (n > v->epochs_shown)
        v->epochs_shown = n;
    json_decref(history);
}

static void wait_show_state(wait_view *v, const json_t *job)
{
    const char *state = json_string_value(json_object_get(job, "state"));
    if (state == NULL || strcmp(state, v->state) == 0)
        return;
    snprintf(v->state, sizeof v->state, "%s", state);
    if (remote_state_is_final(state))
        return; /* the summary says it */
    char line[256];
    char what[200];
    progress_format_line(job, what, sizeof what);
    const char *name = json_string_value(json_object_get(job, "name"));
    snprintf(line, sizeof line, "job %s%s%s%s: %s", v->id, name ? " (" : "", name ? name : "",
             name ? ")" : "", strcmp(state, "running") == 0 ? "running" : what);
    safetext_clean(line);
    wait_print(v, line);
}

static void wait_show_progress(wait_view *v, httpc_client *c, const json_t *job)
{
    const json_t *progress = json_object_get(job, "progress");
    const char *state = json_string_value(json_object_get(job, "state"));
    bool final = state != NULL && remote_state_is_final(state);
    bool changed = v->last_progress == NULL || !json_equal(progress, v->last_progress);
    if (changed) {
        json_decref(v->last_progress);
        v->last_progress = json_deep_copy(progress);
    }
    /* history.json is rewritten after each epoch; look when anything moved,
     * and once more at the end so the last epoch is never missed. */
    if (changed || final)
        wait_show_epochs(v, c, job);
    if (final)
        return;
    char line[1024];
    if (v->opts->tty) {
        int width = wait_terminal_width() - 1;
        progress_format_bar(job, width, line, sizeof line);
        fprintf(stdout, "\r\033[K%s", line);
        v->bar_drawn = true;
    } else if (changed && json_object_size(progress) > 0 &&
               timeutil_mono_s() - v->last_plain >= WAIT_PLAIN_EVERY_S) {
        progress_format_line(job, line, sizeof line);
        printf("%s\n", line);
        v->last_plain = timeutil_mono_s();
    }
}

/* The final word: a summary line on stdout, or the failure in *err. */
static int wait_finish(wait_view *v, const json_t *job, cli_error *err)
{
    const char *state = json_string_value(json_object_get(job, "state"));
    const char *reason = json_string_value(json_object_get(job, "error"));
    int rc = remote_state_exit_code(state);
    if (rc == PUNCH_EXIT_CANCELLED)
        return cli_fail(err, rc, "job %s was cancelled", v->id);
    if (rc == PUNCH_EXIT_TIMEOUT)
        return cli_fail(err, rc, "job %s hit its time limit (resources.time_limit_s)%s%s — see "
                        "punch logs %s", v->id, reason ? ": " : "", reason ? reason : "", v->id);
    if (rc != PUNCH_EXIT_OK)
        return cli_fail(err, rc, "job %s failed: %s — see punch logs %s", v->id,
                        reason ? reason : "no reason recorded", v->id);
    if (v->opts->quiet)
        return PUNCH_EXIT_OK;
    char line[1024];
    size_t pos = 0;
    double started = json_number_value(json_object_get(job, "started_at"));
    double finished = json_number_value(json_object_get(job, "finished_at"));
    pos += (size_t)snprintf(line, sizeof line, "job %s succeeded", v->id);
    if (started > 0 && finished >= started) {
        char d[32];
        progress_format_duration(finished - started, d, sizeof d);
        pos += (size_t)snprintf(line + pos, sizeof line - pos, " in %s", d);
    }
    const char *key;
    const json_t *value;
    const json_t *result = json_object_get(job, "result");
    const char *sep = ":";
    json_object_foreach((json_t *)result, key, value) {
        if (json_is_number(value) && pos < sizeof line) {
            pos += (size_t)snprintf(line + pos, sizeof line - pos, "%s %s %.4f", sep, key,
                                    json_number_value(value));
            sep = "";
        }
    }
    wait_print(v, line);
    printf("fetch the results with: punch fetch %s\n", v->id);
    return PUNCH_EXIT_OK;
}

int wait_follow(httpc_client *c, const char *id, const wait_options *opts, cli_error *err)
{
    wait_view v = {.opts = opts, .id = id, .last_plain = -1e9};
    double lost_since = -1;
    bool reached = false;
    int rc;
    /* No SA_RESTART: the signal cuts the sleep between polls short. */
    struct sigaction on_signal = {.sa_handler = wait_on_signal}, old_int, old_term;
    sigemptyset(&on_signal.sa_mask);
    wait_interrupted = 0;
    sigaction(SIGINT, &on_signal, &old_int);
    sigaction(SIGTERM, &on_signal, &old_term);
    for (;;) {
        json_t *job = NULL;
        if (wait_interrupted) {
            rc = cli_fail(err, PUNCH_EXIT_INTERRUPTED, "stopped waiting; job %s goes on — "
                          "follow it again with punch wait %s, stop it with punch cancel %s",
                          id, id, id);
            break;
        }
        rc = remote_job_get(c, id, &job, err);
        if (rc == PUNCH_EXIT_UNREACHABLE) {
            /* Never reached: a wrong URL or a stopped server, not a restart
             * to ride out; say so at once. */
            if (!reached)
                break;
            double now = timeutil_mono_s();
            if (lost_since < 0) {
                lost_since = now;
                if (!opts->quiet) {
                    wait_print(&v, "lost contact with the server; retrying for 30 s");
                    fflush(stdout); /* a log in a pipe shows it now, not at the end */
                }
            }
            if (now - lost_since > WAIT_RECONNECT_S)
                break;
            cli_sleep(opts->interval_s, &wait_interrupted);
            continue;
        }
        if (rc != 0)
            break;
        reached = true;
        lost_since = -1;
        if (!opts->quiet) {
            wait_show_state(&v, job);
            wait_show_progress(&v, c, job);
            fflush(stdout);
        }
        const char *state = json_string_value(json_object_get(job, "state"));
        if (state != NULL && remote_state_is_final(state)) {
            rc = wait_finish(&v, job, err);
            json_decref(job);
            break;
        }
        json_decref(job);
        cli_sleep(opts->interval_s, &wait_interrupted);
    }
    sigaction(SIGINT, &old_int, NULL);
    sigaction(SIGTERM, &old_term, NULL);
    if (!opts->quiet) {
        wait_clear_bar(&v);
        fflush(stdout);
    }
    json_decref(v.last_progress);
    return rc;
}

int cmd_wait(const cli_ctx *ctx, int argc, char **argv, cli_error *err)
{
    wait_args args;
    if (wait_parse_args(argc, argv, &args, err) != 0)
        return err->code;
    httpc_client *client = remote_open(ctx, err);
    if (client == NULL)
        return err->code;
    wait_options opts = {.interval_s = args.interval_s, .quiet = args.quiet,
                         .tty = ctx->stdout_tty};
    int rc = wait_follow(client, args.id, &opts, err);
    httpc_client_free(client);
    return rc;
}
