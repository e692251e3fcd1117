/* routes.h — the route table of the HTTP API: which handler answers METHOD
 * PATH, whether it needs an authenticated caller, and which job it acts on.
 * The dispatcher does those checks once, from the table, for every route. */
#ifndef PUNCH_ROUTES_H
#define PUNCH_ROUTES_H

#include "api/api.h"

/* Answer r (method, path, body, body_too_large set by http.c): 413 when the
 * body was over the cap; 404 "no such route" or 405 with Allow when no
 * route takes it; 401 when the route needs a caller and none is identified;
 * 404 when it needs a job the caller cannot see (existence does not leak),
 * 500 when the store fails reading it; else the handler's reply, with
 * r->caller, r->job and r->job_id (the path's {id}) set for its call. On
 * return r->route (for metrics) and r->status are set; r->job and r->job_id
 * are NULL again. */
enum MHD_Result routes_dispatch(api_request *r);

typedef enum routes_stream_open_result {
    ROUTES_BUFFER,      /* the route takes its body in memory, under max_body */
    ROUTES_STREAM,      /* *out takes the body as it arrives; dispatch at its end */
    ROUTES_ANSWER_NOW,  /* dispatch now, before the body (no caller, or *out refused) */
} routes_stream_open_result;

/* At a request's first call (headers read, no body yet; r's method, path,
 * conn and d set): does its route stream the body to a file? For such a
 * route the caller is authenticated here and the route's stream opened
 * into *out (which r->stream must carry to routes_dispatch; http.c frees
 * it when the request completes). *out is NULL unless opened. */
routes_stream_open_result routes_stream_open(api_request *r, api_stream **out);

#endif
