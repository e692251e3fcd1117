/* hostfail.h — did a job fail because Open MPI lost one of its hosts, and
 * which one? Read from the job's train.log, where mpirun writes Open MPI
 * 4.1's banners:
 *   "ORTE was unable to reliably start one or more daemons."  (rsh/ssh to a
 *       host failed, or its orted died; also what an orted killed mid-job
 *       gives when its rsh agent exits)
 *   "An ORTE daemon has unexpectedly failed after launch ..."
 *   "ORTE has lost communication with a remote daemon."  (names it:
 *       "Remote daemon: [[36533,0],2] on node h3")
 * Only the last banner names the node. For the others the host is taken
 * from a line of the rsh agent outside the banners that names one of the
 * job's hosts: ssh's ("ssh: connect to host h3 port 22: No route to host",
 * "ssh: Could not resolve hostname h3: ...") or an agent's own saying
 * "unknown host h3", "no host h3", "lost host h3", "cannot reach h3",
 * "h3: no route to host" or "host h3 unreachable". When nothing
 * names a host, none is blamed (a wrong guess would take a good host out).
 *
 * Pure text scanning; tests/daemon/test_hostfail.c feeds it captured Open
 * MPI output. */
#ifndef PUNCH_HOSTFAIL_H
#define PUNCH_HOSTFAIL_H

#include <stdbool.h>
#include <stddef.h>

/* Scan text (a log tail). Returns NULL if it shows no daemon failure;
 * else a static description of the failure ("Open MPI lost communication
 * with its daemon"), with host (capacity cap) set to the failed host, or ""
 * when the log does not say which. A host taken from an rsh agent's line
 * must be one of the n names of hosts (the job's allocation); the
 * "Remote daemon ... on node X" line is trusted as it stands. */
const char *hostfail_find(const char *text, const char *const *hosts, int n, char *host,
                          size_t cap);

#endif
