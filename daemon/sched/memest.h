/* memest.h — how much memory a job needs, estimated from its spec at submit.
 *
 * Per rank, in bytes, following what punch-train allocates (engine/model/
 * model.c's model_allocate): parameters, their gradients, the optimizer's
 * per-parameter state, non-trainable state (batch norm), each layer's
 * output and output gradient at the batch size, the batch itself, the data
 * set held in memory, and a fixed allowance for the runtime (Open MPI, the
 * libraries, code). The data is counted only when the spec says its size
 * (synthetic data, or train_samples/test_samples): a named file's size is
 * not known at submit. Every rank is charged the same, the asynchronous
 * trainers' parameter server included: an overestimate there is small. */
#ifndef PUNCH_MEMEST_H
#define PUNCH_MEMEST_H

#include "jobspec/spec.h"

/* Bytes each rank is allowed beyond what its spec asks for: the MPI
 * runtime's buffers, libraries and code (punch-train's resident size on an
 * empty model is about 40 MiB). */
#define MEMEST_RANK_RUNTIME (64.0 * 1024 * 1024)

typedef struct memest {
    double params, grads, optimizer, state, activations, batch, data, runtime; /* per rank */
    double per_rank;  /* their sum */
    int ranks;
    double total;     /* per_rank x ranks */
} memest;

/* Fill *out for spec (validated by spec_parse). Pure; doubles, so an absurd
 * spec cannot overflow. */
void memest_job(const job_spec *spec, memest *out);

/* Bytes of a host that jobs may use: host_memory_mb MiB when it is > 0,
 * else /proc/meminfo's MemTotal less a headroom for the system and
 * punchcardd (a tenth, at least 1 GiB); 0 when neither is known. */
double memest_host_memory(long host_memory_mb);

/* The memory ceiling enforced on a running job (cgroup.h): twice its
 * estimate, at least the estimate plus 2 GiB (what the estimate cannot see,
 * data files read whole, sanitizer builds), and never more than a host has
 * for jobs (host_memory, when known). A guard against a runaway job taking
 * the host, not a tight fit. */
double memest_ceiling(const memest *m, double host_memory);

/* "1.5 GiB", "300.0 MiB": bytes for a message. */
const char *memest_format(double bytes, char *buf, size_t cap);

#endif
