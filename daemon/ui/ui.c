/* ui.c — serves the dashboard's embedded files (ui.h). */
#include "ui/ui.h"

#include <string.h>

/* Only this origin, no inline script or style element, no plugins, no
 * framing; inline SVG and style properties set from script stay allowed. */
#define UI_CSP                                                                              \
    "default-src 'none'; script-src 'self'; style-src 'self'; img-src 'self' data:; "      \
    "connect-src 'self'; base-uri 'none'; form-action 'none'; frame-ancestors 'none'"

static const ui_asset *ui_find(const char *path)
{
    for (size_t i = 0; i < ui_assets_count; i++)
        if (strcmp(ui_assets[i].path, path) == 0)
            return &ui_assets[i];
    return NULL;
}

enum MHD_Result ui_serve(api_request *r)
{
    const ui_asset *a = ui_find(strcmp(r->path, "/ui/") == 0 ? "/" : r->path);
    if (!a)
        return api_reply_error(r, MHD_HTTP_NOT_FOUND, NULL, "no such page: %.200s", r->path);
    const char *inm = MHD_lookup_connection_value(r->conn, MHD_HEADER_KIND,
                                                  MHD_HTTP_HEADER_IF_NONE_MATCH);
    bool fresh = inm && strstr(inm, a->etag);
    struct MHD_Response *resp =
        fresh ? MHD_create_response_from_buffer(0, (void *)"", MHD_RESPMEM_PERSISTENT)
              : MHD_create_response_from_buffer(a->len, (void *)a->data, MHD_RESPMEM_PERSISTENT);
    if (!resp)
        return api_reply_error(r, MHD_HTTP_INTERNAL_SERVER_ERROR, NULL, "out of memory");
    MHD_add_response_header(resp, MHD_HTTP_HEADER_CONTENT_TYPE, a->content_type);
    MHD_add_response_header(resp, MHD_HTTP_HEADER_ETAG, a->etag);
    /* Revalidate every load: a new punchcardd serves its own page at once. */
    MHD_add_response_header(resp, MHD_HTTP_HEADER_CACHE_CONTROL, "no-cache");
    MHD_add_response_header(resp, "Content-Security-Policy", UI_CSP);
    MHD_add_response_header(resp, "X-Content-Type-Options", "nosniff");
    MHD_add_response_header(resp, "Referrer-Policy", "no-referrer");
    MHD_add_response_header(resp, "X-Frame-Options", "DENY");
    return api_reply_response(r, fresh ? MHD_HTTP_NOT_MODIFIED : MHD_HTTP_OK, resp);
}
