/* gpu_module.c — the CUDA backend module's entry point: the table of the
 * real gpu.h functions (gpu_backend.c, gpu_nccl.c, gpu_optim.c, ...) that
 * punch-train's gpu_loader.c forwards to. See gpu_module.h. */
#include "gpu/gpu_module.h"

#include "gpu/gpu_debug.h"

static const gpu_module_api gpu_module_table = {
    .abi = GPU_MODULE_ABI,
    .backend_size = sizeof(backend),
    .debug_set_sync = gpu_debug_set_sync,
    .available = gpu_available,
    .device_count = gpu_device_count,
    .cuda_create = backend_cuda_create,
    .backend_open = gpu_backend_open,
    .comm_create = gpu_comm_create,
    .comm_free = gpu_comm_free,
    .comm_allreduce = gpu_comm_allreduce,
    .comm_begin = gpu_comm_begin,
    .comm_layer_done = gpu_comm_layer_done,
    .comm_end = gpu_comm_end,
    .optim_create = gpu_optim_create,
    .optim_free = gpu_optim_free,
    .optim_step = gpu_optim_step,
    .optim_iterations = gpu_optim_iterations,
    .optim_state_floats = gpu_optim_state_floats,
    .optim_state_save = gpu_optim_state_save,
    .optim_state_load = gpu_optim_state_load,
};

const gpu_module_api *punch_gpu_module(void)
{
    return &gpu_module_table;
}
