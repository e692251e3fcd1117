/* engine_run.h — run punch-train for an HTTP request (the warm-start check
 * at submit, predictions): a subprocess with a time limit, its stderr's
 * last line kept as the reason, safe to call from any worker thread while
 * the main thread reaps its own children. */
#ifndef PUNCH_ENGINE_RUN_H
#define PUNCH_ENGINE_RUN_H

#include <stddef.h>

/* Run argv (argv[0] a path) with stdin and stdout on /dev/null. Returns
 * its exit code, with the last line it wrote to stderr (without a
 * "punch-train: " prefix) in msg; -1 with msg saying why when it could
 * not start, ran past timeout_s (then killed), or died of a signal. */
int engine_run(char *const *argv, int timeout_s, char *msg, size_t msglen);

/* engine_run that also ends the engine (-1, msg saying so) as soon as
 * stop_fd turns readable (enginepool_stop_fd); -1: no such descriptor. */
int engine_run_until(char *const *argv, int timeout_s, int stop_fd, char *msg, size_t msglen);

#endif
