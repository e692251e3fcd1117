/* joblist.c — deep-copied job rows (contract in joblist.h). */
#include "sched/joblist.h"

#include <stdlib.h>
#include <string.h>

#include "grow/grow.h"

bool joblist_collect(const store_job *job, void *arg)
{
    job_list *l = arg;
    if (!grow_reserve((void **)&l->v, &l->cap, l->n + 1, sizeof *l->v)) {
        l->short_of_memory = true;
        return false;
    }
    /* Take a deep copy: the row's strings are freed after the callback. */
    store_job *c = &l->v[l->n++];
    *c = *job;
    c->error = job->error ? strdup(job->error) : NULL;
    c->hosts = job->hosts ? strdup(job->hosts) : NULL;
    c->progress = NULL;
    c->result = NULL;
    return true;
}

void joblist_free(job_list *l)
{
    for (size_t i = 0; i < l->n; i++)
        store_job_clear(&l->v[i]);
    free(l->v);
}
