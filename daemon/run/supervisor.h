/* supervisor.h — the per-job supervisor: `punchcardd --supervise RUNDIR --
 * MPIRUN ARGS...`, started by launcher_start() in its own session.
 *
 * It starts mpirun in a new session, records {"supervisor_pid", "sid"} in
 * RUNDIR/supervisor.json, forwards SIGTERM to mpirun's session, waits for
 * mpirun, kills whatever is left in that session, and writes RUNDIR/exit.json
 * ({"exit_code", "signal", "ended_at"}) atomically. It does not depend on
 * punchcardd staying alive: a restarted daemon reads these files. */
#ifndef PUNCH_SUPERVISOR_H
#define PUNCH_SUPERVISOR_H

/* argv: RUNDIR [--env NAME=VALUE]... -- COMMAND [ARGS...]; the --env
 * settings apply to COMMAND only. Returns the supervisor's exit status (0
 * when exit.json was written). */
int supervisor_main(int argc, char **argv);

#endif
