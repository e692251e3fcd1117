/* joblist.h — a list of job rows read from the store, deep-copied: what a
 * tick and a scheduling pass hold while the store's rows are gone. */
#ifndef PUNCH_JOBLIST_H
#define PUNCH_JOBLIST_H

#include <stdbool.h>
#include <stddef.h>

#include "store/store.h"

typedef struct job_list {
    store_job *v;
    size_t n, cap;
    bool short_of_memory; /* a row was dropped: the list is incomplete */
} job_list;

/* A store_job_cb appending a deep copy of each row (without progress and
 * result) to the job_list at arg; false (stop) when out of memory, with
 * short_of_memory set. */
bool joblist_collect(const store_job *job, void *arg);

/* Release the rows and the array. */
void joblist_free(job_list *l);

#endif
