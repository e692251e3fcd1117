/* cmd_rm.c — `punch rm ID...`: delete finished jobs (their record and run
 * directory; uploads stay). A job still queued or running is left alone
 * with a hint to cancel it: rm never stops a job. */
#include <stdio.h>
#include <unistd.h>

#include "commands.h"
#include "jobstate/jobstate.h"
#include "remote.h"

const char cmd_rm_usage[] =
    "usage: punch rm ID...\n"
    "\n"
    "Delete finished jobs (succeeded, failed, cancelled, timed out): the server\n"
    "forgets each and removes its run directory (weights, logs, checkpoints), and\n"
    "says how much disk that freed. Uploaded datasets are not touched. A queued or\n"
    "running job is not deleted: cancel it first.\n"
    "\n"
    "exit: 0 all deleted; otherwise the code of the last failure (5 no such job,\n"
    "6 not finished), after trying every ID.\n";

/* Delete one job if finished; 0 or an exit code with *err filled. */
static int rm_one(httpc_client *client, const char *id, cli_error *err)
{
    json_t *job = NULL;
    if (remote_job_get(client, id, &job, err) != 0)
        return err->code;
    const char *state = json_string_value(json_object_get(job, "state"));
    job_state parsed;
    bool finished = state && job_state_parse(state, &parsed) && job_state_is_final(parsed);
    int rc = finished ? 0
                      : cli_fail(err, PUNCH_EXIT_SERVER, "job %s is %s; punch cancel %s first",
                                 id, state ? state : "not finished", id);
    json_decref(job);
    if (rc != 0)
        return rc;
    json_t *answer = NULL;
    if (remote_job_delete(client, id, &answer, err) != 0)
        return err->code;
    double bytes = json_number_value(json_object_get(answer, "bytes_freed"));
    printf("job %s deleted (%.1f MB freed)\n", id, bytes / 1e6);
    json_decref(answer);
    return 0;
}

int cmd_rm(const cli_ctx *ctx, int argc, char **argv, cli_error *err)
{
    const cli_option no_options[] = {{0}};
    if (cli_parse_options(argc, argv, no_options, err) != 0)
        return err->code;
    if (optind >= argc)
        return cli_fail(err, PUNCH_EXIT_USAGE, "rm: missing the job id; see punch rm --help");
    httpc_client *client = remote_open(ctx, err);
    if (client == NULL)
        return err->code;
    /* Every ID is tried; each failure is printed where it happens, so main()
     * has no message left to print. */
    int rc = 0;
    for (int i = optind; i < argc; i++) {
        cli_error one = {0};
        int r = rm_one(client, argv[i], &one);
        if (r != 0) {
            rc = r;
            fprintf(stderr, "punch: %s\n", one.msg);
        }
    }
    httpc_client_free(client);
    err->code = rc;
    err->msg[0] = '\0';
    return rc;
}
