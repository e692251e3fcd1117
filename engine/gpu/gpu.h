/* gpu.h — the CUDA backend's public entry points beyond backend.h.
 *
 * backend_cuda_create() makes the backend itself; this header also has
 * what the engine's start-up and the distributed trainers need:
 * whether a device is usable, the NCCL communicator for data-parallel
 * gradient averaging, and a device-side optimizer so parameters need not
 * leave the GPU. Every function exists in every build: in a build without
 * CUDA (PUNCH_HAVE_CUDA undefined) each one fails with GPU_NO_CUDA_BUILD,
 * so callers need no #ifdef.
 *
 * A CUDA backend, and everything made from it, is used from the thread
 * that created it (CUDA's current device is per thread).
 *
 * Error strings are one line a user can act on; the no-device one is
 * "no CUDA device: <the CUDA runtime's reason>", e.g. "no CUDA device:
 * CUDA driver version is insufficient for CUDA runtime version" on a
 * machine with the toolkit but no driver. */
#ifndef PUNCH_GPU_H
#define PUNCH_GPU_H

#include <stdbool.h>
#include <stddef.h>

#include <mpi.h>

#include "backend/backend.h"
#include "gpu/gpu_bucket.h"

/* The message every entry point gives in a build without CUDA. */
#define GPU_NO_CUDA_BUILD \
    "punch-train was built without CUDA support (meson -Dcuda=enabled)"

/* True when this build has the CUDA backend compiled in. */
bool gpu_built(void);

/* True when at least one CUDA device is usable. Otherwise false, with the
 * one-line reason in why ("no CUDA device: ...", or GPU_NO_CUDA_BUILD). */
bool gpu_available(char *why, size_t whylen);

/* The number of usable CUDA devices (after CUDA_VISIBLE_DEVICES); 0 with
 * the reason in why when there are none. */
int gpu_device_count(char *why, size_t whylen);

/* Create the CUDA backend on the device chosen by the local MPI rank. NULL
 * + message ("no CUDA device: ...", or GPU_NO_CUDA_BUILD) when there is no
 * usable device. */
backend *backend_cuda_create(int local_rank, char *err, size_t errlen);

/* The CUDA backend on the device picked for this process's node-local
 * rank (gpu_device.h: local rank modulo visible devices). Same as
 * backend_cuda_create(launch_env_local_rank(launch_env_getenv), ...). */
backend *gpu_backend_open(char *err, size_t errlen);

/* ---- data-parallel gradient averaging (NCCL) ------------------------ */

typedef struct gpu_comm gpu_comm;

/* One NCCL communicator over every rank of `comm`, each on its own CUDA
 * backend `be` (which must outlive it). Rank 0 creates the NCCL unique id
 * and MPI_Bcast sends it; collective over `comm`. NULL + message on
 * failure. */
gpu_comm *gpu_comm_create(backend *be, MPI_Comm comm, char *err, size_t errlen);
void gpu_comm_free(gpu_comm *c);

/* Sum, or average, across ranks: a trainer that weights each rank's
 * gradient by its share of the global batch scales first and sums. */
typedef enum gpu_reduce_op { GPU_REDUCE_SUM, GPU_REDUCE_MEAN } gpu_reduce_op;

/* Reduce n floats of device memory in place across all ranks, in the
 * backend's stream order (queued after every op before it, before every
 * op after it). */
void gpu_comm_allreduce(gpu_comm *c, float *buf, long n, gpu_reduce_op op);

/* Bucketed reduction overlapped with the backward pass. begin() before
 * the backward pass of a step; layer_done(i) after each layer's backward
 * ops are queued (layers in any order; gpu_bucket.h says which layers a
 * bucket waits for); end() after the last layer: every bucket has been
 * launched and the backend's stream waits for all of them, so the next op
 * queued (the optimizer step) sees reduced gradients. `plan` and `grads`
 * must stay valid until end(). */
void gpu_comm_begin(gpu_comm *c, const gpu_bucket_plan *plan, float *grads,
                    gpu_reduce_op op);
void gpu_comm_layer_done(gpu_comm *c, int layer);
void gpu_comm_end(gpu_comm *c);

/* ---- device optimizer ------------------------------------------------ */

typedef struct gpu_optim gpu_optim;

/* The optimizer of optim.h with its state on the device: same formulas
 * (Keras's), same coefficients, so a step matches optim_step() to float
 * rounding. NULL + message on failure. */
gpu_optim *gpu_optim_create(backend *be, const spec_optimizer *cfg, long n,
                            char *err, size_t errlen);
void gpu_optim_free(gpu_optim *o);
/* params -= f(grads) at rate lr, both n floats of device memory. */
void gpu_optim_step(gpu_optim *o, float *params, const float *grads, float lr);
long gpu_optim_iterations(const gpu_optim *o);
/* Checkpointing, in optim.h's layout (optim_state_floats() floats: the
 * iteration count, Nadam's schedule product, then the slots), so a state
 * saved by either optimizer loads into the other. load() takes a state the
 * caller has validated (optim_state_valid's rules); a corrupt iteration
 * count restarts from 0 rather than misbehave. */
long gpu_optim_state_floats(const gpu_optim *o);
void gpu_optim_state_save(const gpu_optim *o, float *dst);
void gpu_optim_state_load(gpu_optim *o, const float *src);

#endif
