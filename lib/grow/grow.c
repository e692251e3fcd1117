/* grow.c — grow_reserve (grow.h). */
#include "grow/grow.h"

#include <stdint.h>
#include <stdlib.h>

bool grow_reserve(void **v, size_t *cap, size_t need, size_t size)
{
    if (need <= *cap)
        return true;
    size_t n = *cap ? *cap : 16;
    while (n < need) {
        if (n > SIZE_MAX / 2)
            return false;
        n *= 2;
    }
    if (size && n > SIZE_MAX / size)
        return false;
    void *p = realloc(*v, n * size);
    if (!p)
        return false;
    *v = p;
    *cap = n;
    return true;
}
