/* placement.h — which hosts a job's ranks run on.
 *
 * The cluster is a list of hosts (the hostfile's lines, in order; without a
 * hostfile the local host alone), each with its slots and GPUs (--gpus per
 * host). A starting job gets an allocation: parts {host, ranks}, in rank
 * order, so rank 0 is on the first part's host. mpirun runs it with a
 * hostfile of exactly those parts and `--map-by slot` (launcher.h), so the
 * ranks fill the parts in that order and concurrent jobs never share a slot.
 *
 * Packing policy, for every trainer: the first host that can hold the whole
 * job takes it (all ranks share memory: vader, no TCP); otherwise the job
 * fills the hosts in hostfile order, each as far as it can, so as few hosts
 * as possible carry it and neighbouring ranks share a host. The parameter
 * server of an asynchronous trainer (the extra rank: ranks > workers) is
 * rank 0, so it is counted on the first host of the allocation, and it needs
 * no GPU. A job's GPUs (resources.gpus x workers) belong to its workers:
 * worker w of W holds GPUs floor((w+1)G/W) - floor(wG/W) of the G, which is
 * resources.gpus each whenever G is a multiple of W, as the daemon always
 * stores it. A host marked down takes no part.
 *
 * Pure: no I/O, no locks. tests/daemon/test_placement.c. */
#ifndef PUNCH_PLACEMENT_H
#define PUNCH_PLACEMENT_H

#include <stdbool.h>
#include <stddef.h>

#include "store/store.h"

#define PLACEMENT_MAX_HOSTS 256

/* Capacity (or what is free of it) per host, in hostfile order. */
typedef struct placement_cluster {
    int n_hosts;
    int slots[PLACEMENT_MAX_HOSTS];
    int gpus[PLACEMENT_MAX_HOSTS];
    bool down[PLACEMENT_MAX_HOSTS]; /* nothing new is placed there */
    double mem[PLACEMENT_MAX_HOSTS]; /* bytes for jobs; < 0: memory not counted */
} placement_cluster;

/* What a job needs: its ranks, workers (ranks - 1 for an asynchronous
 * trainer, whose rank 0 is the parameter server), GPUs in all, and memory
 * per rank (bytes; 0: not counted), charged to a host for each of its ranks
 * there. */
typedef struct placement_need {
    int ranks;
    int workers;
    int gpus;
    double mem_per_rank;
} placement_need;

typedef struct placement_part {
    int host;  /* index into the cluster's hosts */
    int ranks;
} placement_part;

typedef struct placement {
    int n;     /* parts; 0 for none */
    placement_part part[PLACEMENT_MAX_HOSTS];
} placement;

/* The need of a stored job (ranks, workers, gpus, memory per rank). */
placement_need placement_need_of(const store_job *job);

/* Place need on the free capacity by the policy above. True with *out set,
 * or false (and *out empty) when it does not fit now. */
bool placement_pack(const placement_cluster *free_cap, placement_need need, placement *out);

/* GPUs the i-th part of a holds. */
int placement_part_gpus(placement_need need, const placement *a, int i);

/* Subtract a's slots and GPUs from free_cap (never below 0). */
void placement_take(placement_cluster *free_cap, placement_need need, const placement *a);

/* The allocation as stored and shown: JSON text
 * [{"host": NAME, "ranks": N}, ...] (heap, caller frees; NULL on failure).
 * names[i] is host i's name. */
char *placement_to_json(const placement *a, const char *const *names);

/* The allocation a placement_to_json() text names, against this cluster's
 * host names (n of them). Parts whose host is not among them (the hostfile
 * changed since) are left out; false on malformed text. */
bool placement_from_json(const char *text, const char *const *names, int n, placement *out);

/* The per-job Open MPI hostfile: "NAME slots=N\n" per part, in order.
 * False if cap is too small. */
bool placement_hostfile(const placement *a, const char *const *names, char *buf, size_t cap);

#endif
