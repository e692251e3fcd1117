/* rundir.h — the run directory DATA_DIR/runs/ID (schema/rundir.md): writing
 * the job, and reading what the supervisor and punch-train leave there. */
#ifndef PUNCH_RUNDIR_H
#define PUNCH_RUNDIR_H

#include <stdbool.h>
#include <stddef.h>
#include <sys/types.h>

#include <jansson.h>

/* DATA_DIR/runs/ID[/file] into buf; false if it does not fit. */
bool rundir_path(char *buf, size_t cap, const char *data_dir, const char *id, const char *file);

/* Create the run directory (0700) and write job.json atomically. */
bool rundir_create(const char *dir, const char *spec, char *err, size_t errlen);

/* Write name in dir atomically (atomic_write_file of lib/io: temporary file,
 * fsync, rename, fsync dir), so a reader never sees half a record. */
bool rundir_write_atomic(const char *dir, const char *name, const char *data, size_t len,
                         char *err, size_t errlen);

/* Hand a new run directory and the files in it (job.json, hostfile) to
 * the account the job runs as (run_as), so the job can write its output
 * there. False with *err on failure. */
bool rundir_give(const char *dir, uid_t uid, gid_t gid, char *err, size_t errlen);

/* Remove the files that say how a job's last run ended (exit.json,
 * supervisor.json), so a requeued job is not settled from them again. */
bool rundir_clear_ended(const char *dir, char *err, size_t errlen);

/* Remove a run directory and everything in it. */
bool rundir_remove(const char *dir);

/* Checkpoint retention: of the model_checkpoint saves in dir/checkpoints
 * (weights-epoch-NNN.safetensors, .npz, .member-K.*), keep the files of the
 * `keep` newest epochs and remove the others (keep 0: keep all). Returns
 * how many files were removed. The resume checkpoint (ckpt.bin) and files
 * being written (their temporary names) are never touched. */
int rundir_prune_checkpoints(const char *dir, int keep);

/* exit.json, written by the supervisor once mpirun has ended. */
typedef struct rundir_exit {
    int exit_code;
    int signal;      /* 0 if mpirun exited normally */
    double ended_at;
    double cpu_s;          /* CPU seconds of the job on the launching host; -1 unknown */
    double peak_rss_bytes; /* its peak memory there; -1 unknown */
} rundir_exit;
bool rundir_read_exit(const char *dir, rundir_exit *out);

/* supervisor.json, written by the supervisor once mpirun is forked. The
 * start times (/proc/PID/stat's starttime) make the pids identities that a
 * reused number cannot fake; -1 where the file has none (written by a
 * punchcardd before they were recorded). */
typedef struct rundir_supervisor {
    pid_t supervisor_pid;
    long long supervisor_start;
    pid_t sid;           /* session (and process group) of mpirun: mpirun's pid */
    long long sid_start; /* mpirun's start time */
} rundir_supervisor;
bool rundir_read_supervisor(const char *dir, rundir_supervisor *out);

/* The latest state in progress.jsonl. progress: the newest step or epoch line
 * without "event"/"time" (plus the last epoch's val_* metrics), {} if none;
 * result: the end line's test_* values, NULL until there is one; end_status
 * and end_error from the end line. Caller frees with rundir_progress_clear. */
typedef struct rundir_progress {
    json_t *progress;
    json_t *result;
    char end_status[16];
    char *end_error;
} rundir_progress;
void rundir_read_progress(const char *dir, rundir_progress *out);
void rundir_progress_clear(rundir_progress *p);

/* At most `cap` bytes from the end of the file at path, NUL-terminated, in a
 * fresh buffer (caller frees; NULL if unreadable or empty); *len is their
 * length and *start_is_line is true when they begin at a line start. */
char *rundir_read_tail(const char *path, size_t cap, size_t *len, bool *start_is_line);

/* The line of a run's log (train.log) that best says why it failed, at most
 * cap-1 bytes, "" if none: the last diagnostic of punch-train ("punch-train:
 * ...", e.g. "punch-train: no CUDA device: ..."), else the last non-empty
 * line that is not a rule of dashes (mpirun frames its messages in them),
 * without the server's internals (rundir_hide_internals). */
void rundir_failure_line(const char *path, char *buf, size_t cap);

/* The server's internals in a text a user reads, in place (it only
 * shrinks): an upload's path ".../uploads/<owner's hash>/NAME" becomes
 * "@NAME", as the user named it, and a cgroup path "/sys/fs/cgroup/..."
 * "its cgroup". rundir_failure_line applies it. */
void rundir_hide_internals(char *s);

/* weights.safetensors as {key: {"shape": [...], "data": [...]}} in file
 * order (the seed's model for /api/destroy), read with safetensors_read of
 * lib/io; NULL with *err ("PATH: reason") if missing or malformed. */
json_t *rundir_weights_model(const char *path, char *err, size_t errlen);

#endif
