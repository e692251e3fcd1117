/* augment.c — data.augment, PyDTNN's --flip_images and --crop_images on
 * the training samples of a batch. Each sample's draws come from its own
 * PRNG stream keyed by (seed, epoch, sample), so a run reproduces them
 * under its seed and a sample is transformed afresh every epoch. */
#include "data_internal.h"

#include <stdio.h>
#include <string.h>

/* Stream tag that keeps augmentation apart from shuffles and synthetic data. */
#define AUGMENT_STREAM 0x4155474d00000000ULL /* "AUGM" */

bool dataset_augment_on(const spec_augment *a)
{
    return a->flip_prob > 0 || (a->crop_size > 0 && a->crop_prob > 0);
}

/* A uniform double in [0, 1). */
static double augment_uniform(data_rng *r)
{
    return (double)(data_rng_next(r) >> 11) * 0x1.0p-53;
}

static void augment_flip(const spec_shape *shape, float *x)
{
    long w = shape->dim[2], rows = (long)shape->dim[0] * shape->dim[1];
    for (long row = 0; row < rows; row++) {
        float *p = x + row * w;
        for (long i = 0, j = w - 1; i < j; i++, j--) {
            float t = p[i];
            p[i] = p[j];
            p[j] = t;
        }
    }
}

/* Keep the window [top, top + size) x [left, left + size) of every
 * channel where it is and zero the rest (PyDTNN's crop, which does not
 * resize). */
static void augment_crop(const spec_shape *shape, int size, long top, long left, float *x)
{
    long c = shape->dim[0], h = shape->dim[1], w = shape->dim[2];
    for (long ch = 0; ch < c; ch++) {
        for (long i = 0; i < h; i++) {
            float *p = x + (ch * h + i) * w;
            if (i < top || i >= top + size) {
                memset(p, 0, (size_t)w * sizeof *p);
                continue;
            }
            memset(p, 0, (size_t)left * sizeof *p);
            memset(p + left + size, 0, (size_t)(w - left - size) * sizeof *p);
        }
    }
}

void dataset_augment_sample(const spec_augment *a, const spec_shape *shape, unsigned long seed,
                            int epoch, int64_t sample, float *x)
{
    data_rng r;
    data_rng_seed(&r, seed ^ ((uint64_t)sample * 0x9e3779b97f4a7c15ULL),
                  AUGMENT_STREAM | (uint32_t)epoch);
    /* Every draw is made whether or not it is used, so one transform's
     * settings do not change the other's draws. */
    double flip = augment_uniform(&r), crop = augment_uniform(&r);
    long top = 0, left = 0;
    if (a->crop_size > 0) {
        top = (long)data_rng_below(&r, (uint64_t)(shape->dim[1] - a->crop_size) + 1);
        left = (long)data_rng_below(&r, (uint64_t)(shape->dim[2] - a->crop_size) + 1);
    }
    if (flip < a->flip_prob)
        augment_flip(shape, x);
    if (a->crop_size > 0 && crop < a->crop_prob)
        augment_crop(shape, a->crop_size, top, left, x);
}
