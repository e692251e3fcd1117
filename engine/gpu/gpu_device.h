/* gpu_device.h — which CUDA device a rank uses. Plain C with no CUDA
 * dependence, so its rules are unit-tested on machines without a GPU.
 *
 * One GPU per rank: `mpirun -np G` on a node with G devices gives node-local
 * ranks 0..G-1, and local rank r takes device r. The device count is what
 * the CUDA runtime sees, i.e. after CUDA_VISIBLE_DEVICES: a launcher that
 * gives each rank its own single visible device (Slurm --gpus-per-task)
 * yields a count of 1, and every rank correctly takes device 0. The
 * node-local rank itself comes from backend/launch_env.h. */
#ifndef PUNCH_GPU_DEVICE_H
#define PUNCH_GPU_DEVICE_H

#include <stdbool.h>
#include <stddef.h>

typedef struct gpu_device_choice {
    int device;    /* CUDA ordinal to cudaSetDevice(), -1 when none */
    bool shared;   /* a lower local rank has the same device (more local
                      ranks than devices): a warning, not an error */
    char visible[64]; /* the CUDA_VISIBLE_DEVICES entry it maps to, or the
                         ordinal as text when that variable is unset */
} gpu_device_choice;

/* Device for node-local rank `local_rank` among `device_count` visible
 * devices, given CUDA_VISIBLE_DEVICES (NULL when unset). False with a
 * message when there is no device to choose. */
bool gpu_device_choose(int local_rank, int device_count, const char *visible_devices,
                       gpu_device_choice *out, char *err, size_t errlen);

/* Entries in a CUDA_VISIBLE_DEVICES value as the runtime reads it: a
 * comma-separated list that ends at the first empty or invalid entry (the
 * runtime ignores everything after it); "" and "-1"-style values hide every
 * device. Copies entry `index` (when index >= 0 and present) to buf. */
int gpu_visible_devices_count(const char *value, int index, char *buf, size_t buflen);

#endif
