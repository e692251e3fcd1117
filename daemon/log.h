/* log.h — one line per event on stderr: "TIME LEVEL message", or
 * "<PRIORITY>LEVEL message" when stderr is systemd's journal stream.
 * Thread-safe (each line is one write(2)). Callers must never pass a
 * secret. */
#ifndef PUNCH_LOG_H
#define PUNCH_LOG_H

typedef enum log_level { LOG_DEBUG, LOG_INFO, LOG_WARN, LOG_ERROR } log_level;

/* Lines below this level are dropped; default LOG_INFO. */
void log_set_level(log_level level);

void log_msg(log_level level, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

#define log_debug(...) log_msg(LOG_DEBUG, __VA_ARGS__)
#define log_info(...) log_msg(LOG_INFO, __VA_ARGS__)
#define log_warn(...) log_msg(LOG_WARN, __VA_ARGS__)
#define log_error(...) log_msg(LOG_ERROR, __VA_ARGS__)

#endif
