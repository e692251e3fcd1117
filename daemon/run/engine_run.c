/* engine_run.c — punch-train as a short, bounded subprocess of an HTTP
 * worker thread (engine_run.h).
 *
 * Why a waiter process and a status pipe: the main thread's tick reaps
 * every child with waitpid(-1) (monitor_tick), so a worker's
 * waitpid(pid) could find its child's status already taken. The worker
 * forks a waiter W in a process group of its own; W forks and execs the
 * engine, waits for it and writes its wait status into a pipe, which only
 * the worker reads. W itself is reaped by whichever waitpid comes first
 * (the tick ignores pids it does not know). A timeout kills the group. */
#include "run/engine_run.h"

#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "io/io_file.h"
#include "timeutil/timeutil.h"

typedef struct engine_child {
    char *const *argv;
    int err_fd;     /* the stderr pipe's write end */
    int null_fd;    /* /dev/null: stdin and stdout */
    int status_fd;  /* the status pipe's write end */
} engine_child;

/* The waiter, in the forked child: only async-signal-safe calls. */
static void engine_run_waiter(const engine_child *c)
{
    setpgid(0, 0);
    if (dup2(c->null_fd, 0) < 0 || dup2(c->null_fd, 1) < 0 || dup2(c->err_fd, 2) < 0)
        _exit(127);
    /* Everything else the daemon holds is close-on-exec. */
    pid_t engine = fork();
    if (engine == 0) {
        close(c->status_fd);
        execv(c->argv[0], c->argv);
        _exit(127);
    }
    int status = 127 << 8;
    while (engine > 0 && waitpid(engine, &status, 0) < 0 && errno == EINTR)
        ;
    ssize_t w = write(c->status_fd, &status, sizeof status);
    _exit(w == (ssize_t)sizeof status ? 0 : 1);
}

int engine_run(char *const *argv, int timeout_s, char *msg, size_t msglen)
{
    return engine_run_until(argv, timeout_s, -1, msg, msglen);
}

int engine_run_until(char *const *argv, int timeout_s, int stop_fd, char *msg, size_t msglen)
{
    if (msglen > 0)
        msg[0] = '\0';
    int pfd[2], sfd[2] = {-1, -1};
    if (pipe2(pfd, O_CLOEXEC) != 0) {
        snprintf(msg, msglen, "pipe: %s", strerror(errno));
        return -1;
    }
    int null_fd = open("/dev/null", O_RDWR | O_CLOEXEC);
    if (null_fd < 0 || pipe2(sfd, O_CLOEXEC) != 0) {
        snprintf(msg, msglen, "cannot start %s: %s", argv[0], strerror(errno));
        close(pfd[0]);
        close(pfd[1]);
        if (null_fd >= 0)
            close(null_fd);
        return -1;
    }
    engine_child c = {argv, pfd[1], null_fd, sfd[1]};
    pid_t pid = fork();
    if (pid == 0)
        engine_run_waiter(&c);
    int saved = errno;
    if (pid > 0)
        setpgid(pid, pid); /* also here: a timeout may come before the child's own */
    close(pfd[1]);
    close(sfd[1]);
    close(null_fd);
    if (pid < 0) {
        close(pfd[0]);
        close(sfd[0]);
        snprintf(msg, msglen, "cannot start %s: %s", argv[0], strerror(saved));
        return -1;
    }
    /* Keep the last bytes of stderr: the engine's reason is its last line. */
    char buf[4096];
    size_t used = 0;
    double deadline = timeutil_mono_s() + timeout_s;
    bool timed_out = false, stopped = false;
    for (;;) {
        double left = deadline - timeutil_mono_s();
        if (left <= 0 || stopped) {
            timed_out = true;
            kill(-pid, SIGKILL);
            kill(pid, SIGKILL);
            break;
        }
        struct pollfd p[2] = {{pfd[0], POLLIN, 0}, {stop_fd, POLLIN, 0}};
        int ready = poll(p, stop_fd >= 0 ? 2 : 1, (int)(left * 1000) + 1);
        if (ready < 0 && errno == EINTR)
            continue;
        if (ready <= 0)
            continue;
        if (stop_fd >= 0 && p[1].revents) {
            stopped = true;
            continue;
        }
        char chunk[1024];
        ssize_t r = read(pfd[0], chunk, sizeof chunk);
        if (r < 0 && errno == EINTR)
            continue;
        if (r <= 0)
            break;
        if ((size_t)r > sizeof buf - 1 - used) {
            size_t drop = (size_t)r - (sizeof buf - 1 - used);
            if (drop > used)
                drop = used;
            memmove(buf, buf + drop, used - drop);
            used -= drop;
        }
        size_t take = (size_t)r < sizeof buf - 1 - used ? (size_t)r : sizeof buf - 1 - used;
        memcpy(buf + used, chunk + (size_t)r - take, take);
        used += take;
    }
    close(pfd[0]);
    /* The waiter writes the status once the engine has ended (its stderr
     * closed just before); on a timeout the group is dead already. */
    int status = 0;
    ssize_t got = -1;
    if (!timed_out)
        got = io_read_full(sfd[0], &status, sizeof status);
    close(sfd[0]);
    buf[used] = '\0';
    while (used > 0 && (buf[used - 1] == '\n' || buf[used - 1] == '\r'))
        buf[--used] = '\0';
    const char *last = strrchr(buf, '\n');
    last = last ? last + 1 : buf;
    if (strncmp(last, "punch-train: ", 13) == 0)
        last += 13;
    if (stopped) {
        snprintf(msg, msglen, "%s was stopped: punchcardd is shutting down", argv[0]);
        return -1;
    }
    if (timed_out) {
        snprintf(msg, msglen, "%s did not finish within %d s", argv[0], timeout_s);
        return -1;
    }
    snprintf(msg, msglen, "%s", last);
    if (got != (ssize_t)sizeof status) {
        snprintf(msg, msglen, "%s: its waiter ended without a status", argv[0]);
        return -1;
    }
    if (WIFSIGNALED(status)) {
        snprintf(msg, msglen, "%s ended by signal %d", argv[0], WTERMSIG(status));
        return -1;
    }
    return WEXITSTATUS(status);
}
