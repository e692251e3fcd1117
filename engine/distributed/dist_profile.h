/* dist_profile.h — training.profile for the distributed trainers. */
#ifndef PUNCH_DIST_PROFILE_H
#define PUNCH_DIST_PROFILE_H

#include "distributed/dist_ctx.h"

/* Turn profiling on for this rank's model when the spec asks (training
 * ranks only: a parameter server trains nothing). Ends the job when out of
 * memory. */
void dist_profile_enable(dist_ctx *c);
/* Around one training step: begin before loading the batch, mark the end
 * of each phase (load, forward, loss, backward with the update), end after
 * the step's communication (the MPI seconds are comm_s's growth since
 * begin). Each is one branch when profiling is off. */
void dist_profile_begin(dist_ctx *c);
void dist_profile_mark(dist_ctx *c, profile_phase phase);
void dist_profile_end(dist_ctx *c);
/* Collective over c->comm after training, before rank 0 writes the "end"
 * event (as the single trainer orders them): rank 0 gathers every rank's
 * figures and writes profile.json. Nothing when profiling is off. */
void dist_profile_write(dist_ctx *c);

#endif
