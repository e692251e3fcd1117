/* grow.h — a growable array's room: the one doubling realloc that lists of
 * rows, events and strings share.
 *
 *     struct { row *v; size_t n, cap; } l = {0};
 *     if (!grow_reserve((void **)&l.v, &l.cap, l.n + 1, sizeof *l.v))
 *         return out_of_memory;
 *     l.v[l.n++] = r;
 */
#ifndef PUNCH_GROW_H
#define PUNCH_GROW_H

#include <stdbool.h>
#include <stddef.h>

/* Make room for `need` elements of `size` bytes in *v (capacity *cap),
 * doubling from 16; *v and *cap change only on success. False when out of
 * memory or when the bytes would overflow (*v kept, still the caller's). */
bool grow_reserve(void **v, size_t *cap, size_t need, size_t size);

#endif
