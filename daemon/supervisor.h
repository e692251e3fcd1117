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

/* argv[0] is RUNDIR, argv[1] "--", the rest the command. Returns the exit
 * status of the supervisor itself (0 when exit.json was written). */
int supervisor_main(int argc, char **argv);

#endif
