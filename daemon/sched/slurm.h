/* slurm.h — talking to Slurm as text: the sbatch command and batch script
 * for a job, and what squeue, scontrol and sbatch print back.
 *
 * Pure functions, so the whole conversation is unit-tested on Slurm
 * 22.05's own text without a cluster; running the commands (found on PATH
 * or under the slurm_bin_dir setting) belongs to the caller
 * (slurmsched.c). */
#ifndef PUNCH_SLURM_H
#define PUNCH_SLURM_H

#include <stdbool.h>
#include <stddef.h>

#include "jobstate/jobstate.h"

/* The admin's settings that go on every sbatch (NULL or "": not given). */
typedef struct slurm_site {
    const char *bin_dir;   /* directory of sbatch, squeue, scancel, scontrol; "": PATH */
    const char *partition;
    const char *account;
    const char *qos;
    const char *args;      /* free-form, split on whitespace, after the daemon's own */
} slurm_site;

/* What sbatch needs to know of one punchcard job. */
typedef struct slurm_job {
    const char *id;        /* punchcard job id */
    const char *owner;     /* punchcard identity */
    const char *rundir;    /* holds the batch script; --output goes there */
    int ranks;             /* --ntasks: workers (+ the async trainers' server) */
    int threads;           /* --cpus-per-task */
    int gpus_per_worker;   /* --gres=gpu:N when > 0 (per node: one worker a node) */
    long time_limit_s;     /* --time, rounded up to whole minutes; 0: Slurm's default */
    int priority;          /* punchcard's -10..10; below 0 becomes --nice */
    double mem_per_rank;   /* estimated bytes a rank needs (memest.c): --mem-per-cpu =
                              it / threads in MiB, rounded up; 0: Slurm's default */
} slurm_job;

/* Name of the batch script and of Slurm's output file in the run directory. */
#define SLURM_SCRIPT "slurm.sh"
/* The engine's checkpoint in the run directory (a requeued job resumes from it). */
#define SLURM_CHECKPOINT "checkpoints/ckpt.bin"
#define SLURM_OUTPUT "slurm.out"

/* The path of Slurm command `cmd` ("sbatch", ...): under site->bin_dir when
 * set, else the bare name for execvp's PATH search. False if out is short. */
bool slurm_command(const slurm_site *site, const char *cmd, char *out, size_t cap);

/* The argv (NULL-terminated, heap; free with launcher_argv_free) of
 *   sbatch --parsable --job-name=pc-ID --ntasks=R --cpus-per-task=T
 *          [--gres=gpu:N] [--time=D-HH:MM:SS] [--nice=N]
 *          --output=RUNDIR/slurm.out --chdir=RUNDIR
 *          --comment="punchcard id=ID user=OWNER" --requeue
 *          [--partition=P] [--account=A] [--qos=Q] [ARGS...] RUNDIR/slurm.sh
 * Slurm lets only administrators raise a job above the default, so
 * priorities 0..10 submit with no --nice and -1..-10 with --nice=100..1000.
 * Characters outside printable ASCII in the owner become '?'. NULL when out
 * of memory. */
char **slurm_sbatch_argv(const slurm_site *site, const slurm_job *job);

/* The batch script: a bash script that execs `command` (the supervisor
 * with its mpirun, whose argv is given word by word and quoted here), so
 * the job writes the run directory's supervisor.json and exit.json as under
 * the local scheduler, and mpirun takes its hosts from Slurm's allocation.
 * Run again after a requeue (SLURM_RESTART_COUNT > 0) with a checkpoint in
 * the run directory, the command gets --resume as its last word.
 * Heap; NULL when out of memory. */
char *slurm_batch_script(const slurm_job *job, char *const *command);

/* sbatch --parsable printed "JOBID" or "JOBID;CLUSTER": the id, or 0 when
 * the text holds none. */
long slurm_parse_submit(const char *out);

/* Slurm's answer said the controller could not be reached (slurmctld down,
 * munge broken, network): the caller refuses submits with 503 and keeps
 * following its jobs once the controller answers again. */
bool slurm_unreachable(const char *err_text);

/* Where a Slurm job state leaves a punchcard job. */
typedef enum slurm_phase {
    SLURM_WAITING,   /* PENDING, CONFIGURING, REQUEUED...: queued, with Slurm's reason */
    SLURM_ACTIVE,    /* RUNNING, COMPLETING, SUSPENDED, ... */
    SLURM_ENDED,     /* a final state: see *final */
    SLURM_UNKNOWN,   /* a state this version does not know: leave the job as it is */
} slurm_phase;

/* Map a state word of squeue %T or scontrol's JobState ("PENDING",
 * "TIMEOUT", "CANCELLED"; a trailing "+" or " by UID" is ignored). For an
 * ended job, *final is COMPLETED → succeeded, CANCELLED → cancelled,
 * TIMEOUT and DEADLINE → timeout, every other final state (FAILED,
 * NODE_FAIL, PREEMPTED, OUT_OF_MEMORY, BOOT_FAIL) → failed. */
slurm_phase slurm_state_map(const char *state, job_state *final);

/* One job as squeue or scontrol shows it. */
typedef struct slurm_status {
    long job_id;
    char state[32];     /* Slurm's word, e.g. "PENDING" */
    char name[64];      /* its job name: "pc-ID" for punchcard's (squeue only) */
    char reason[128];   /* "Priority", "Resources", "NonZeroExitCode"; "" for None */
    int exit_code;      /* scontrol's ExitCode=E:S, E; -1 if not shown */
    int exit_signal;    /* S; -1 if not shown */
} slurm_status;

/* The argv of the one squeue call that lists every job of the calling user
 * (punchcardd submits as itself), finished ones Slurm still remembers
 * included, as "ID|STATE|NAME|REASON" lines that slurm_parse_squeue reads.
 * Heap, free with launcher_argv_free; NULL when out of memory. */
char **slurm_squeue_argv(const slurm_site *site);

/* Parse squeue's lines into out (at most cap; array and het-job members,
 * "123_4" or "123+1", are skipped: punchcard submits neither). Returns how
 * many were read; unreadable lines are skipped. */
size_t slurm_parse_squeue(const char *text, slurm_status *out, size_t cap);

/* Parse `scontrol show job ID` (one job). False if the text names no job
 * (scontrol printed "Invalid job id specified": Slurm forgot it). */
bool slurm_parse_scontrol(const char *text, slurm_status *out);

/* The error line for a job Slurm ended other than COMPLETED, e.g.
 * "Slurm: FAILED (NonZeroExitCode), exit code 1" or "Slurm: NODE_FAIL". */
void slurm_error_line(const slurm_status *s, char *out, size_t cap);

#endif
