/* dist_sync_data.h — each rank's data: loading, the epochs' permutation, the
 * sharded exchange windows and the batches' rows. */
#ifndef PUNCH_DIST_SYNC_DATA_H
#define PUNCH_DIST_SYNC_DATA_H

#include <stdint.h>

#include "distributed/dist_ctx.h"

/* Collective: load this rank's train block, evaluation sets and the
 * global scaling; set up the permutation and the exchange plan (the
 * trainers' slicing of the permutation, see dist_data_consumers). */
void dist_data_load(dist_ctx *c);
void dist_data_free(dist_ctx *c);
/* The permutation of `epoch` for `seed` into c->perm (identity when
 * data.shuffle is false). */
void dist_data_epoch(dist_ctx *c, unsigned long seed, int epoch);
/* The rows of c->data holding the batch of `batch` samples at positions
 * [first, first + batch) of the permutation that this rank trains on at
 * `step` of the epoch. Collective over the training ranks when sharded:
 * every training rank calls it for each of its steps in order (with
 * batch 0 when it has no samples that step), and dist_data_epoch_end
 * after its last step. An asynchronous worker's call may repoint c->data
 * (to its batch of converted bytes): read c->data after calling. */
const int64_t *dist_data_batch(dist_ctx *c, long step, long first, int batch);
void dist_data_epoch_end(dist_ctx *c);

/* Asynchronous workers: the records trained this epoch so far, in order,
 * hashed (dist_order_hash; history.json's workers[i].order_hash). */
uint64_t dist_data_order_hash(const dist_ctx *c);

/* FNV-1a over 64-bit words: h = (h ^ record) * 0x100000001b3 (mod 2^64)
 * for each record in training order, from DIST_ORDER_HASH_INIT. */
#define DIST_ORDER_HASH_INIT 0xcbf29ce484222325ULL
static inline uint64_t dist_order_hash(uint64_t h, int64_t record)
{
    return (h ^ (uint64_t)record) * 0x100000001b3ULL;
}

#endif
