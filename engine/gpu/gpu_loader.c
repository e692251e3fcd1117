/* gpu_loader.c — punch-train's gpu.h in a CUDA build: every entry point
 * forwards to the CUDA backend module (gpu_module.h), dlopen()ed the first
 * time a GPU is actually asked for, so a CPU job never loads the CUDA
 * libraries.
 *
 * The module is looked for, first found wins:
 *   1. $PUNCH_GPU_MODULE (tests only);
 *   2. punch-gpu.so beside the executable (the build tree: build/engine/);
 *   3. PUNCH_GPU_MODULE_PATH, the install path baked in at configure time
 *      (<libdir>/punchcard/punch-gpu.so).
 * When it cannot be loaded, every call that would create a GPU object
 * fails with "cannot load the CUDA backend module <path>: <dlerror()>". */
#include <dlfcn.h>
#include <limits.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "gpu/gpu_debug.h"
#include "gpu/gpu_module.h"

#ifndef PUNCH_GPU_MODULE_PATH
#error "PUNCH_GPU_MODULE_PATH must name the installed CUDA backend module"
#endif

static pthread_once_t gpu_loader_once = PTHREAD_ONCE_INIT;
static const gpu_module_api *gpu_loader_api;
static char gpu_loader_error[PATH_MAX + 512];

/* punch-gpu.so in the executable's directory, in path; false when there is
 * none (or /proc is not mounted). */
static bool gpu_loader_beside_exe(char *path, size_t pathlen)
{
    char exe[PATH_MAX];
    ssize_t n = readlink("/proc/self/exe", exe, sizeof exe - 1);
    if (n <= 0)
        return false;
    exe[n] = '\0';
    char *slash = strrchr(exe, '/');
    if (!slash)
        return false;
    *slash = '\0';
    int len = snprintf(path, pathlen, "%s/%s", exe, GPU_MODULE_FILE);
    return len > 0 && (size_t)len < pathlen && access(path, F_OK) == 0;
}

static void gpu_loader_path(char *path, size_t pathlen)
{
    const char *env = getenv(GPU_MODULE_ENV);
    if (env && *env) {
        snprintf(path, pathlen, "%s", env);
        return;
    }
    if (gpu_loader_beside_exe(path, pathlen))
        return;
    snprintf(path, pathlen, "%s", PUNCH_GPU_MODULE_PATH);
}

/* Load the module and check it came from a compatible build. */
static void gpu_loader_load(void)
{
    char path[PATH_MAX];
    gpu_loader_path(path, sizeof path);
    /* RTLD_LOCAL: the engine code linked into the module stays its own. */
    void *h = dlopen(path, RTLD_NOW | RTLD_LOCAL);
    if (!h) {
        snprintf(gpu_loader_error, sizeof gpu_loader_error,
                 "cannot load the CUDA backend module %s: %s", path, dlerror());
        return;
    }
    gpu_module_entry_fn entry;
    /* POSIX's sanctioned way from the void * of dlsym to a function pointer. */
    *(void **)&entry = dlsym(h, GPU_MODULE_ENTRY);
    const gpu_module_api *api = entry ? entry() : NULL;
    if (!api || api->abi != GPU_MODULE_ABI || api->backend_size != sizeof(backend)) {
        snprintf(gpu_loader_error, sizeof gpu_loader_error,
                 "cannot load the CUDA backend module %s: not from this build of "
                 "punch-train (reinstall both)", path);
        dlclose(h);
        return;
    }
    /* The module has its own copy of the switch; main.c sets ours first. */
    api->debug_set_sync(gpu_debug_sync());
    gpu_loader_api = api; /* the handle stays open for the process's life */
}

/* The module's table, or NULL with the reason in err. */
static const gpu_module_api *gpu_loader_get(char *err, size_t errlen)
{
    pthread_once(&gpu_loader_once, gpu_loader_load);
    if (!gpu_loader_api && err && errlen)
        snprintf(err, errlen, "%s", gpu_loader_error);
    return gpu_loader_api;
}

/* For the calls that take an object only the module can have made. */
static const gpu_module_api *gpu_loader_loaded(void)
{
    return gpu_loader_get(NULL, 0);
}

bool gpu_built(void)
{
    return true;
}

bool gpu_available(char *why, size_t whylen)
{
    const gpu_module_api *api = gpu_loader_get(why, whylen);
    return api && api->available(why, whylen);
}

int gpu_device_count(char *why, size_t whylen)
{
    const gpu_module_api *api = gpu_loader_get(why, whylen);
    return api ? api->device_count(why, whylen) : 0;
}

backend *backend_cuda_create(int local_rank, char *err, size_t errlen)
{
    const gpu_module_api *api = gpu_loader_get(err, errlen);
    return api ? api->cuda_create(local_rank, err, errlen) : NULL;
}

backend *gpu_backend_open(char *err, size_t errlen)
{
    const gpu_module_api *api = gpu_loader_get(err, errlen);
    return api ? api->backend_open(err, errlen) : NULL;
}

gpu_comm *gpu_comm_create(backend *be, MPI_Comm comm, char *err, size_t errlen)
{
    const gpu_module_api *api = gpu_loader_get(err, errlen);
    return api ? api->comm_create(be, comm, err, errlen) : NULL;
}

void gpu_comm_free(gpu_comm *c)
{
    if (c)
        gpu_loader_loaded()->comm_free(c);
}

void gpu_comm_allreduce(gpu_comm *c, float *buf, long n, gpu_reduce_op op)
{
    gpu_loader_loaded()->comm_allreduce(c, buf, n, op);
}

void gpu_comm_begin(gpu_comm *c, const gpu_bucket_plan *plan, float *grads,
                    gpu_reduce_op op)
{
    gpu_loader_loaded()->comm_begin(c, plan, grads, op);
}

void gpu_comm_layer_done(gpu_comm *c, int layer)
{
    gpu_loader_loaded()->comm_layer_done(c, layer);
}

void gpu_comm_end(gpu_comm *c)
{
    gpu_loader_loaded()->comm_end(c);
}

gpu_optim *gpu_optim_create(backend *be, const spec_optimizer *cfg, long n, char *err,
                            size_t errlen)
{
    const gpu_module_api *api = gpu_loader_get(err, errlen);
    return api ? api->optim_create(be, cfg, n, err, errlen) : NULL;
}

void gpu_optim_free(gpu_optim *o)
{
    if (o)
        gpu_loader_loaded()->optim_free(o);
}

void gpu_optim_step(gpu_optim *o, float *params, const float *grads, float lr)
{
    gpu_loader_loaded()->optim_step(o, params, grads, lr);
}

long gpu_optim_iterations(const gpu_optim *o)
{
    return gpu_loader_loaded()->optim_iterations(o);
}

long gpu_optim_state_floats(const gpu_optim *o)
{
    return gpu_loader_loaded()->optim_state_floats(o);
}

void gpu_optim_state_save(const gpu_optim *o, float *dst)
{
    gpu_loader_loaded()->optim_state_save(o, dst);
}

void gpu_optim_state_load(gpu_optim *o, const float *src)
{
    gpu_loader_loaded()->optim_state_load(o, src);
}
