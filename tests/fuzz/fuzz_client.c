/* fuzz_client.c — how punch turns the server's JSON replies into text
 * (client/jobtext.c, progress.c, svg.c) on any reply: a job object, a job
 * list, a history. A hostile or broken server must not crash the client or
 * make it write past a buffer. Input: a byte choosing the terminal width,
 * then the reply body. */
#include <stdlib.h>
#include <string.h>

#include <jansson.h>

#include "fuzz.h"
#include "jobtext.h"
#include "progress.h"
#include "svg.h"

/* Fill buf through call and check that it stayed a string within len. */
#define FUZZ_FORMAT(call, buf)                                                                   \
    do {                                                                                         \
        memset(buf, 'x', sizeof buf);                                                            \
        call;                                                                                    \
        if (memchr(buf, '\0', sizeof buf) == NULL)                                               \
            abort();                                                                             \
    } while (0)

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    int width = (int)fuzz_take_byte(&data, &size);
    json_t *root = json_loadb((const char *)data, size, JSON_DECODE_ANY | JSON_ALLOW_NUL, NULL);
    if (root == NULL)
        return 0;
    FILE *out = fuzz_null_stream();
    double now = 1.7e9;
    char buf[256];
    /* punch state / wait: the job object. */
    jobtext_print_detail(root, now, out);
    FUZZ_FORMAT(jobtext_format_summary(root, buf, sizeof buf), buf);
    FUZZ_FORMAT(jobtext_format_age(json_object_get(root, "submitted_at"), now, buf, sizeof buf),
                buf);
    FUZZ_FORMAT(progress_format_bar(root, width, buf, sizeof buf), buf);
    if (width > 0 && strlen(buf) > (size_t)width)
        abort(); /* the bar must never wrap a terminal */
    FUZZ_FORMAT(progress_format_line(root, buf, sizeof buf), buf);
    /* punch list: {"jobs": [...]} or the array itself. */
    json_t *jobs = json_object_get(root, "jobs");
    jobtext_print_table(jobs ? jobs : root, now, out);
    /* punch state --history, punch fetch --curves: history.json. */
    size_t epochs = progress_history_epochs(root);
    for (size_t i = 0; i < epochs && i < 64; i++)
        FUZZ_FORMAT(progress_format_epoch(root, i, width, buf, sizeof buf), buf);
    svg_write_curves(root, "fuzz", out);
    double v = json_number_value(root);
    FUZZ_FORMAT(progress_format_duration(v, buf, sizeof buf), buf);
    FUZZ_FORMAT(progress_format_rate(v, buf, sizeof buf), buf);
    json_decref(root);
    return 0;
}
