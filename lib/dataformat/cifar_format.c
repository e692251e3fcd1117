/* cifar_format.c — CIFAR-10 record counts and labels (cifar_format.h). */
#include "dataformat/cifar_format.h"

uint64_t cifarfmt_records(uint64_t size, uint64_t *part)
{
    *part = size % CIFARFMT_RECORD;
    return size / CIFARFMT_RECORD;
}

long long cifarfmt_bad_label(const unsigned char *recs, size_t n, int classes)
{
    for (size_t i = 0; i < n; i++)
        if (recs[i * CIFARFMT_RECORD] >= (unsigned)classes)
            return (long long)i;
    return -1;
}
