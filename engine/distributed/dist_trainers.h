/* dist_trainers.h — the trainers dist_run.c dispatches to. */
#ifndef PUNCH_DIST_TRAINERS_H
#define PUNCH_DIST_TRAINERS_H

#include "distributed/dist_ctx.h"

int dist_run_allreduce(dist_ctx *c);
int dist_run_replicas(dist_ctx *c);   /* averaging and ensemble */
int dist_run_async(dist_ctx *c);      /* downpour, adag, dynsgd, aeasgd, eamsgd */

#endif
