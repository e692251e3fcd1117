/* engine_run.c — punch-train as a short, bounded subprocess of an HTTP
 * worker thread (engine_run.h).
 *
 * Why an intermediate process made with clone() and no exit signal: the
 * main thread's tick reaps every child with waitpid(-1) (monitor_tick),
 * which would take the engine's status before the worker's waitpid(pid)
 * could. A child that signals nothing on exit is a "clone" child in
 * Linux's terms, which waitpid(-1) without __WALL/__WCLONE never reports;
 * but execve() makes a process an ordinary child again, so the clone child
 * does not exec: it starts the engine itself (vfork + exec, its own child),
 * waits for it and exits with its status, which only the worker's
 * waitpid(pid, __WCLONE) collects. Both run in a process group of their
 * own, so a timeout kills the engine with its waiter. */
#include "engine_run.h"

#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <sched.h>
#include <signal.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "timeutil/timeutil.h"

#define ENGINE_RUN_STACK (256 * 1024)

typedef struct engine_child {
    char *const *argv;
    int err_fd;    /* the pipe's write end: the child's stderr */
    int null_fd;   /* /dev/null: its stdin and stdout */
} engine_child;

static int engine_run_child(void *arg)
{
    const engine_child *c = arg;
    setpgid(0, 0);
    if (dup2(c->null_fd, 0) < 0 || dup2(c->null_fd, 1) < 0 || dup2(c->err_fd, 2) < 0)
        _exit(127);
    /* Everything else the daemon holds is close-on-exec. */
    pid_t engine = vfork();
    if (engine == 0) {
        execv(c->argv[0], c->argv);
        _exit(127);
    }
    int status = 0;
    while (engine > 0 && waitpid(engine, &status, 0) < 0 && errno == EINTR)
        ;
    if (engine < 0)
        _exit(127);
    _exit(WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status));
}

int engine_run(char *const *argv, int timeout_s, char *msg, size_t msglen)
{
    if (msglen > 0)
        msg[0] = '\0';
    int pfd[2];
    if (pipe2(pfd, O_CLOEXEC) != 0) {
        snprintf(msg, msglen, "pipe: %s", strerror(errno));
        return -1;
    }
    int null_fd = open("/dev/null", O_RDWR | O_CLOEXEC);
    char *stack = malloc(ENGINE_RUN_STACK);
    if (null_fd < 0 || !stack) {
        snprintf(msg, msglen, "cannot start %s: %s", argv[0], strerror(errno));
        close(pfd[0]);
        close(pfd[1]);
        if (null_fd >= 0)
            close(null_fd);
        free(stack);
        return -1;
    }
    engine_child c = {argv, pfd[1], null_fd};
    pid_t pid = clone(engine_run_child, stack + ENGINE_RUN_STACK, 0, &c);
    int saved = errno;
    close(pfd[1]);
    close(null_fd);
    free(stack);
    if (pid < 0) {
        close(pfd[0]);
        snprintf(msg, msglen, "cannot start %s: %s", argv[0], strerror(saved));
        return -1;
    }
    /* Keep the last bytes of stderr: the engine's reason is its last line. */
    char buf[4096];
    size_t used = 0;
    double deadline = timeutil_mono_s() + timeout_s;
    bool timed_out = false;
    for (;;) {
        double left = deadline - timeutil_mono_s();
        if (left <= 0) {
            timed_out = true;
            kill(-pid, SIGKILL);
            kill(pid, SIGKILL);
            break;
        }
        struct pollfd p = {pfd[0], POLLIN, 0};
        int ready = poll(&p, 1, (int)(left * 1000) + 1);
        if (ready < 0 && errno == EINTR)
            continue;
        if (ready <= 0)
            continue;
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
    int status = 0;
    while (waitpid(pid, &status, __WCLONE) < 0 && errno == EINTR)
        ;
    buf[used] = '\0';
    while (used > 0 && (buf[used - 1] == '\n' || buf[used - 1] == '\r'))
        buf[--used] = '\0';
    const char *last = strrchr(buf, '\n');
    last = last ? last + 1 : buf;
    if (strncmp(last, "punch-train: ", 13) == 0)
        last += 13;
    if (timed_out) {
        snprintf(msg, msglen, "%s did not finish within %d s", argv[0], timeout_s);
        return -1;
    }
    snprintf(msg, msglen, "%s", last);
    int code = WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
    if (code > 128) {
        snprintf(msg, msglen, "%s ended by signal %d", argv[0], code - 128);
        return -1;
    }
    return code;
}
