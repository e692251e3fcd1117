/* log.c — timestamped single-line log records on stderr. Under systemd,
 * when stderr is the journal's stream, each record starts with its syslog
 * priority ("<3>" for an error, as sd-daemon(3) describes) so `journalctl
 * -p err` finds errors; the journal adds its own timestamp. */
#include "log.h"

#include <pthread.h>
#include <stdbool.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

static log_level log_threshold = LOG_INFO;
static pthread_once_t log_journal_once = PTHREAD_ONCE_INIT;
static bool log_to_journal;

/* systemd sets JOURNAL_STREAM="DEV:INODE" for the stream it connected; it
 * is ours only if stderr is still that stream (not redirected since). */
static void log_detect_journal(void)
{
    const char *js = getenv("JOURNAL_STREAM");
    unsigned long long dev, ino;
    struct stat st;
    log_to_journal = js && sscanf(js, "%llu:%llu", &dev, &ino) == 2 &&
                     fstat(STDERR_FILENO, &st) == 0 && (unsigned long long)st.st_dev == dev &&
                     (unsigned long long)st.st_ino == ino;
}

void log_set_level(log_level level) { log_threshold = level; }

void log_msg(log_level level, const char *fmt, ...)
{
    static const char *const names[] = {"debug", "info", "warn", "error"};
    if (level < log_threshold)
        return;
    /* syslog priorities: debug 7, info 6, warning 4, err 3. */
    static const char priorities[] = {'7', '6', '4', '3'};
    pthread_once(&log_journal_once, log_detect_journal);
    char line[2048];
    int n;
    if (log_to_journal) {
        n = snprintf(line, sizeof line, "<%c>%-5s ", priorities[level], names[level]);
    } else {
        struct timespec ts;
        clock_gettime(CLOCK_REALTIME, &ts);
        struct tm tm;
        gmtime_r(&ts.tv_sec, &tm);
        n = snprintf(line, sizeof line, "%04d-%02d-%02dT%02d:%02d:%02d.%03ldZ %-5s ",
                     tm.tm_year + 1900, tm.tm_mon + 1, tm.tm_mday, tm.tm_hour, tm.tm_min,
                     tm.tm_sec, ts.tv_nsec / 1000000, names[level]);
    }
    va_list ap;
    va_start(ap, fmt);
    int m = vsnprintf(line + n, sizeof line - (size_t)n - 1, fmt, ap);
    va_end(ap);
    size_t len = (size_t)n + (m < 0 ? 0 : (size_t)m);
    if (len > sizeof line - 2)
        len = sizeof line - 2;
    /* Keep one record per line whatever the message holds. */
    for (size_t i = (size_t)n; i < len; i++)
        if (line[i] == '\n' || line[i] == '\r')
            line[i] = ' ';
    line[len++] = '\n';
    ssize_t w = write(STDERR_FILENO, line, len);
    (void)w;
}
