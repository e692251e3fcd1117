/* cluster.h — the hosts punchcardd places jobs on, and their health.
 *
 * The hosts are the hostfile's lines ("NAME slots=N"; a line without slots=
 * has 1), in order; without a hostfile, one host "localhost" with --slots or
 * the core count. Every host has --gpus GPUs (Open MPI 4.1 rejects unknown
 * hostfile tokens, so a line cannot say). Names and capacities never change
 * while the daemon runs; what does (use, state) is behind a mutex, because
 * the monitor writes it on the main thread and GET /api/v1/cluster reads it
 * on HTTP threads.
 *
 * Health: a job whose train.log shows Open MPI losing a host (hostfail.h)
 * marks that host down; the scheduler places nothing new there. A down host
 * is probed every probe interval by running the probe command ("%h" is the
 * host) as a child process in its own process group; cluster_probe_tick()
 * starts and times out probes, and the monitor hands every child it reaps to
 * cluster_probe_reaped(), so the tick never blocks. A probe that exits 0
 * brings the host up. State lives in memory only: a restarted daemon starts
 * with every host up. */
#ifndef PUNCH_CLUSTER_H
#define PUNCH_CLUSTER_H

#include <stdbool.h>
#include <stddef.h>
#include <sys/types.h>

#include <jansson.h>

#include "sched/placement.h"

/* A probe that has not ended after this many seconds failed (killed). */
#define CLUSTER_PROBE_TIMEOUT_S 10.0

typedef struct cluster cluster;

/* The hosts of hostfile (NULL or "": the local host alone, with `slots`
 * slots), each with `gpus` GPUs. Host names are letters, digits and ".-_:"
 * only (they go into a shell command and a hostfile); a name listed twice
 * adds its slots. NULL with *err on failure (unreadable file, no hosts,
 * more than PLACEMENT_MAX_HOSTS, a bad name). */
cluster *cluster_open(const char *hostfile, int slots, int gpus, char *err, size_t errlen);
void cluster_close(cluster *c);

int cluster_hosts(const cluster *c);
int cluster_total_slots(const cluster *c);
/* Host names, index-aligned with placement_cluster (valid until close). */
const char *const *cluster_names(const cluster *c);

/* Every host's whole capacity; with_down: and which hosts are down now
 * (under the mutex), else all up (capacity never changes: no lock). Memory
 * is left uncounted (mem -1): the caller sets it where it knows it. */
void cluster_capacity(cluster *c, placement_cluster *out, bool with_down);

/* Record what the active jobs hold per host (capacity minus free). */
void cluster_set_used(cluster *c, const placement_cluster *free_cap);

/* Mark host `name` down with a reason (copied) at time now. True if it was
 * up (the caller logs the change); false if already down or unknown. */
bool cluster_mark_down(cluster *c, const char *name, const char *reason, double now);

/* A job on host `name` failed in a way that may be the host's, without
 * saying so (Open MPI named no host): probe it on the next tick, whatever
 * the interval; a failed probe marks it down with `reason` (copied), a
 * successful one leaves it up. True if it was up and not already suspect
 * or being probed. */
bool cluster_suspect(cluster *c, const char *name, const char *reason);

/* Host `name`: is it down, and is a suspect's probe still to answer?
 * False for an unknown host. */
bool cluster_host_health(cluster *c, const char *name, bool *down, bool *checking);

/* Start a probe for each down host whose interval has passed since its last
 * probe (or since it went down) and for each suspect host, and kill probes older than
 * CLUSTER_PROBE_TIMEOUT_S. probe_cmd is the command with %h for the host. */
void cluster_probe_tick(cluster *c, const char *probe_cmd, int interval_s, double now);

/* A child the monitor reaped: if it was a probe, record its result (exit 0
 * brings its host up) and return true. */
bool cluster_probe_reaped(cluster *c, pid_t pid, int status, double now);

/* The probe command to use: `configured` when set, else the first agent of
 * rsh_agent (Open MPI's plm_rsh_agent, "AGENT [ARGS] : ALT...") followed by
 * " %h true", else "ssh -o BatchMode=yes -o ConnectTimeout=5 %h true". */
void cluster_probe_command(const char *configured, const char *rsh_agent, char *out,
                           size_t cap);

/* GET /api/v1/cluster: {"hosts": [{"host", "slots", "slots_used", "gpus",
 * "gpus_used", "state": "up"|"down", "down_since"?, "reason"?}], "slots",
 * "slots_used", "gpus", "gpus_used"}. NULL when out of memory. */
json_t *cluster_json(cluster *c);

#endif
