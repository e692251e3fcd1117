/* ui.h — the web dashboard: GET / and /ui/NAME serve the page's files,
 * compiled into the binary (daemon/ui/, embedded by daemon/ui/embed.py), so
 * a cluster without internet access gets the whole page from punchcardd and
 * nothing from another origin. Everything the page shows it reads from the
 * public API with the user's secret. */
#ifndef PUNCH_UI_H
#define PUNCH_UI_H

#include <stddef.h>

#include "api/api.h"

typedef struct ui_asset {
    const char *path;         /* "/" or "/ui/app.js" */
    const char *content_type;
    const char *etag;         /* quoted, from the file's SHA-256 */
    const unsigned char *data;
    size_t len;
} ui_asset;

/* The generated table (ui_assets.c). */
extern const ui_asset ui_assets[];
extern const size_t ui_assets_count;

/* GET / and GET /ui/{name}: the file with a strict Content-Security-Policy
 * (only this origin's scripts, styles and API; no inline script, no
 * framing), nosniff, no referrer; 304 when If-None-Match has its ETag; 404
 * for a name that is not part of the page. Public: the page holds no data,
 * the API it calls checks the secret. */
enum MHD_Result ui_serve(api_request *r);

#endif
