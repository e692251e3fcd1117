/* dist_async_protocol.c — the sizes of dist_async_protocol.h's messages
 * that depend on the job, which the server, the workers and the resume
 * path all use (kept apart from dist_async.c, which calls the server and
 * the workers, so that they need not call back into it). */
#include "distributed/dist_async_protocol.h"

#include "optim/optim.h"

long dist_ps_optim_floats(const dist_ctx *c)
{
    long n = optim_state_floats(c->optim);
    return c->spec->distributed.trainer == TRAINER_EAMSGD ? n + c->m->n_params : n;
}

long dist_ps_state_floats(const dist_ctx *c)
{
    return c->m->n_params + c->m->n_state + dist_ps_optim_floats(c);
}
