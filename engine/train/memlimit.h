/* memlimit.h — the data-memory ceiling of one punch-train process.
 *
 * punchcardd puts a job's processes on its own host in a cgroup with the
 * job's memory ceiling; ranks that mpirun starts on other hosts are outside
 * it. PUNCH_RANK_MEMORY_MAX (options.h) carries each rank's share to every
 * host, and this applies it as RLIMIT_DATA: an allocation beyond it fails
 * (the engine checks every allocation and ends with an error naming what
 * it was for) instead of pushing the host into its OOM killer. RLIMIT_DATA
 * counts private writable mappings (Linux >= 4.7): the heap, malloc's mmap
 * arenas, the data set, the model; not code or shared libraries. */
#ifndef PUNCH_MEMLIMIT_H
#define PUNCH_MEMLIMIT_H

#include <stddef.h>

/* Lower this process's RLIMIT_DATA to bytes (> 0; never raises it). Builds
 * with AddressSanitizer reserve terabytes of shadow memory as private
 * writable mappings, so there the limit is not applied and 1 is returned
 * (with the reason in err). 0 when applied, -1 with err on failure. */
int memlimit_apply(double bytes, char *err, size_t errlen);

#endif
