/* api_sweeps.c — /api/v1/sweeps[/{id}]: submit, list, read and cancel
 * hyperparameter sweeps (daemon/sweep/). A sweep is private to its owner as
 * a job is: another user gets the 404 of a sweep that does not exist;
 * admins see every sweep. */
#include <string.h>

#include "api/api.h"
#include "log.h"
#include "store/store_sweeps.h"
#include "sweep/sweep.h"

enum MHD_Result api_sweeps_submit(api_request *r)
{
    char id[STORE_ID_LEN + 1];
    int status = 400;
    sweep_error err = {{0}, {0}};
    if (!sweep_create(r->d, r->caller.identity, r->body, r->body_len, id, &status, &err))
        return api_reply_error(r, status, err.field, "%s", err.msg);
    struct MHD_Response *resp = api_json_response(json_pack("{s:s}", "id", id));
    if (resp) {
        char loc[64];
        snprintf(loc, sizeof loc, "/api/v1/sweeps/%s", id);
        MHD_add_response_header(resp, MHD_HTTP_HEADER_LOCATION, loc);
    }
    return api_reply_response(r, MHD_HTTP_CREATED, resp);
}

typedef struct api_sweep_list {
    daemon_ctx *d;
    json_t *list;
    bool failed;
} api_sweep_list;

static bool api_sweep_add(const store_sweep *sw, void *arg)
{
    api_sweep_list *l = arg;
    json_t *o = sweep_json(l->d, sw, false);
    if (!o || json_array_append_new(l->list, o) != 0)
        l->failed = true;
    return !l->failed;
}

enum MHD_Result api_sweeps_list(api_request *r)
{
    bool admin = r->caller.role == AUTH_ROLE_ADMIN;
    api_sweep_list l = {r->d, json_array(), false};
    if (!l.list || store_sweep_list(r->d->st, admin ? NULL : r->caller.identity, api_sweep_add,
                                    &l) != STORE_OK || l.failed) {
        json_decref(l.list);
        return api_reply_error(r, MHD_HTTP_INTERNAL_SERVER_ERROR, NULL, "store error");
    }
    return api_reply_json(r, MHD_HTTP_OK, json_pack("{s:o}", "sweeps", l.list));
}

/* The sweep of the path, if the caller may see it; else the reply (404,
 * 500) is queued in *reply. */
static bool api_sweep_load(api_request *r, store_sweep *sw, enum MHD_Result *reply)
{
    const char *id = r->name ? r->name : "";
    store_status rs = strlen(id) == STORE_ID_LEN ? store_sweep_get(r->d->st, id, sw)
                                                 : STORE_NOT_FOUND;
    if (rs == STORE_OK && r->caller.role != AUTH_ROLE_ADMIN &&
        strcmp(sw->owner, r->caller.identity) != 0) {
        store_sweep_clear(sw);
        rs = STORE_NOT_FOUND;
    }
    if (rs == STORE_NOT_FOUND)
        *reply = api_reply_error(r, MHD_HTTP_NOT_FOUND, NULL, "no sweep %.32s", id);
    else if (rs != STORE_OK)
        *reply = api_reply_error(r, MHD_HTTP_INTERNAL_SERVER_ERROR, NULL, "store error");
    return rs == STORE_OK;
}

static enum MHD_Result api_sweep_reply(api_request *r, const char *id)
{
    store_sweep sw;
    if (store_sweep_get(r->d->st, id, &sw) != STORE_OK)
        return api_reply_error(r, MHD_HTTP_INTERNAL_SERVER_ERROR, NULL, "store error");
    json_t *o = sweep_json(r->d, &sw, true);
    store_sweep_clear(&sw);
    if (!o)
        return api_reply_error(r, MHD_HTTP_INTERNAL_SERVER_ERROR, NULL, "store error");
    return api_reply_json(r, MHD_HTTP_OK, o);
}

enum MHD_Result api_sweep_get(api_request *r)
{
    store_sweep sw;
    enum MHD_Result reply;
    if (!api_sweep_load(r, &sw, &reply))
        return reply;
    /* A read also advances a running sweep: a trial whose job ended without
     * the monitor's hook (cancelled while queued, failed at start, a
     * restart between) moves it on here. */
    if (strcmp(sw.state, "running") == 0)
        sweep_advance(r->d, sw.id);
    char id[STORE_ID_LEN + 1];
    snprintf(id, sizeof id, "%s", sw.id);
    store_sweep_clear(&sw);
    return api_sweep_reply(r, id);
}

enum MHD_Result api_sweep_cancel(api_request *r)
{
    store_sweep sw;
    enum MHD_Result reply;
    if (!api_sweep_load(r, &sw, &reply))
        return reply;
    char id[STORE_ID_LEN + 1];
    snprintf(id, sizeof id, "%s", sw.id);
    char state[sizeof sw.state];
    snprintf(state, sizeof state, "%s", sw.state);
    store_sweep_clear(&sw);
    store_status rs = sweep_cancel(r->d, id);
    if (rs == STORE_CONFLICT)
        return api_reply_error(r, MHD_HTTP_CONFLICT, NULL, "sweep %s already %s", id, state);
    if (rs != STORE_OK)
        return api_reply_error(r, MHD_HTTP_INTERNAL_SERVER_ERROR, NULL, "store error");
    log_info("sweep %s: cancelled by %s", id, r->caller.identity);
    return api_sweep_reply(r, id);
}
