/* gpu_module.h — the seam between punch-train and the CUDA backend module.
 *
 * In a CUDA build the backend (the .cu kernels and the gpu_*.c that call
 * CUDA, cuBLAS, cuDNN and NCCL) is a loadable module, punch-gpu.so, so
 * that punch-train does not link the CUDA libraries: their load-time
 * constructors (libcublasLt's above all) cost ~0.5 s of CPU on every
 * start, GPU job or not. punch-train's gpu_loader.c dlopen()s the module
 * the first time a gpu.h entry point needs it and forwards every gpu.h call
 * through the table below; the module exports nothing else.
 *
 * The table is the whole of gpu.h (not only the backend vtable: the
 * distributed trainers also need NCCL and the device optimizer), plus the
 * PUNCH_GPU_SYNC switch, whose value the module keeps in its own copy of
 * gpu_debug.c. `abi` and `backend_size` catch a module from another build. */
#ifndef PUNCH_GPU_MODULE_H
#define PUNCH_GPU_MODULE_H

#include "gpu/gpu.h"

/* Raise when the table below or backend.h changes incompatibly. */
#define GPU_MODULE_ABI 1

/* The one symbol the module exports (see punch-gpu.map). */
#define GPU_MODULE_ENTRY "punch_gpu_module"

/* The installed file name; gpu_loader.c says where it is looked for. */
#define GPU_MODULE_FILE "punch-gpu.so"

/* Tests only: the module's path, overriding the search. */
#define GPU_MODULE_ENV "PUNCH_GPU_MODULE"

typedef struct gpu_module_api {
    int abi;
    size_t backend_size;
    void (*debug_set_sync)(bool on);
    bool (*available)(char *why, size_t whylen);
    int (*device_count)(char *why, size_t whylen);
    backend *(*cuda_create)(int local_rank, char *err, size_t errlen);
    backend *(*backend_open)(char *err, size_t errlen);
    gpu_comm *(*comm_create)(backend *be, MPI_Comm comm, char *err, size_t errlen);
    void (*comm_free)(gpu_comm *c);
    void (*comm_allreduce)(gpu_comm *c, float *buf, long n, gpu_reduce_op op);
    void (*comm_begin)(gpu_comm *c, const gpu_bucket_plan *plan, float *grads,
                       gpu_reduce_op op);
    void (*comm_layer_done)(gpu_comm *c, int layer);
    void (*comm_end)(gpu_comm *c);
    gpu_optim *(*optim_create)(backend *be, const spec_optimizer *cfg, long n, char *err,
                               size_t errlen);
    void (*optim_free)(gpu_optim *o);
    void (*optim_step)(gpu_optim *o, float *params, const float *grads, float lr);
    long (*optim_iterations)(const gpu_optim *o);
    long (*optim_state_floats)(const gpu_optim *o);
    void (*optim_state_save)(const gpu_optim *o, float *dst);
    void (*optim_state_load)(gpu_optim *o, const float *src);
} gpu_module_api;

typedef const gpu_module_api *(*gpu_module_entry_fn)(void);

/* Defined in the module only (gpu_module.c). */
const gpu_module_api *punch_gpu_module(void);

#endif
