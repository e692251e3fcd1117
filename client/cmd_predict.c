/* cmd_predict.c — `punch predict ID INPUT.npy [-o OUT.npy]`: the trained
 * model's outputs for new inputs (POST /api/v1/jobs/ID/predict). The input
 * is sent as it is; the server scales it as the training data were. The
 * output is written to a temporary name and renamed, so an interrupted
 * request never leaves half a file. */
#include <errno.h>
#include <getopt.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "commands.h"
#include "io/io_file.h"
#include "remote.h"

#define PREDICT_MAX_INPUT ((size_t)4 << 30)

const char cmd_predict_usage[] =
    "usage: punch predict ID INPUT.npy [-o OUT.npy]\n"
    "\n"
    "Run job ID's trained model on INPUT.npy: [N, ...sample] raw inputs (uint8 or\n"
    "float, as the training data were before scaling; the server applies the\n"
    "job's scaling). Writes OUT.npy (default predictions.npy): float32 [N, outputs],\n"
    "class probabilities for a softmax output. The server bounds the input size\n"
    "(predict_max, default 64 MiB); for more, upload the inputs and run a job.\n"
    "\n"
    "  -o, --output FILE     where to write (default predictions.npy)\n"
    "\n"
    "exit: 0 written, 2 the input does not fit the model, 5 no such job, 6 the job\n"
    "has no final weights, 9 cannot read INPUT or write OUT, 3/4 as usual.\n";

static int predict_take_file(const char *cmd, const char *value, void *dest, cli_error *err)
{
    if (value[0] == '\0')
        return cli_fail(err, PUNCH_EXIT_USAGE, "%s: -o wants a file name", cmd);
    *(const char **)dest = value;
    return 0;
}

int cmd_predict(const cli_ctx *ctx, int argc, char **argv, cli_error *err)
{
    const char *out = "predictions.npy";
    const cli_option options[] = {
        {.name = "output", .letter = 'o', .dest = &out, .take = predict_take_file},
        {0},
    };
    if (cli_parse_options(argc, argv, options, err) != 0)
        return err->code;
    if (argc - optind != 2)
        return cli_fail(err, PUNCH_EXIT_USAGE,
                        "predict: want a job id and an input .npy (see punch predict --help)");
    const char *id = argv[optind], *input = argv[optind + 1];
    unsigned char *data = NULL;
    size_t len = 0;
    char why[1024];
    if (io_read_file_or_pipe(input, PREDICT_MAX_INPUT, &data, &len, why, sizeof why) != 0)
        return cli_fail(err, PUNCH_EXIT_LOCAL, "%s", why);
    char *tmp = NULL;
    if (asprintf(&tmp, "%s.XXXXXX", out) < 0) {
        free(data);
        return cli_fail(err, PUNCH_EXIT_LOCAL, "out of memory");
    }
    int fd = mkstemp(tmp);
    FILE *f = fd >= 0 ? fdopen(fd, "wb") : NULL;
    if (!f) {
        int saved = errno;
        if (fd >= 0) {
            close(fd);
            unlink(tmp);
        }
        free(tmp);
        free(data);
        return cli_fail(err, PUNCH_EXIT_LOCAL, "cannot write %s: %s", out, strerror(saved));
    }
    int rc = 0;
    httpc_client *client = remote_open(ctx, err);
    if (client == NULL)
        rc = err->code;
    if (rc == 0)
        rc = remote_job_predict(client, id, data, len, f, err);
    if (fchmod(fileno(f), 0644) != 0 || fflush(f) != 0 || fsync(fileno(f)) != 0)
        rc = rc ? rc : cli_fail(err, PUNCH_EXIT_LOCAL, "cannot write %s: %s", out,
                                strerror(errno));
    if (fclose(f) != 0 && rc == 0)
        rc = cli_fail(err, PUNCH_EXIT_LOCAL, "cannot write %s: %s", out, strerror(errno));
    if (rc == 0 && rename(tmp, out) != 0)
        rc = cli_fail(err, PUNCH_EXIT_LOCAL, "cannot rename onto %s: %s", out, strerror(errno));
    if (rc != 0)
        unlink(tmp);
    else
        printf("predictions of job %s for %s written to %s\n", id, input, out);
    free(tmp);
    free(data);
    httpc_client_free(client);
    return rc;
}
