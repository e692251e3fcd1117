/* daemon.c — what daemon.h promises every module besides the shared state:
 * the clock, the signals punchcardd's processes collect, and the wake-up of
 * the main loop. Here rather than in main.c so the library the unit tests
 * link does not depend on the executable. */
#include "daemon.h"

#include <signal.h>

#include "timeutil/timeutil.h"

/* Set once by main.c before any thread exists (thread creation orders it
 * before every read); 0 means nobody to wake. */
static pid_t daemon_wake_pid;

double daemon_now(void) { return timeutil_wall_s(); }

void daemon_signal_set(sigset_t *set)
{
    sigemptyset(set);
    sigaddset(set, SIGTERM);
    sigaddset(set, SIGINT);
    sigaddset(set, SIGHUP);
    sigaddset(set, SIGCHLD);
}

void daemon_wake_register(pid_t pid) { daemon_wake_pid = pid; }

void daemon_wake(void)
{
    /* kill(0, ...) would signal the whole process group. */
    if (daemon_wake_pid > 0)
        kill(daemon_wake_pid, DAEMON_WAKE_SIGNAL);
}
