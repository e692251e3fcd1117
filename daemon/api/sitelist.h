/* sitelist.h — the site's datasets (installed by the admin under the
 * `datasets` roots) listed for GET /api/v1/datasets?site=1: each one by the
 * name a job writes, its format, and what the file headers say cheaply
 * (IDX and npz shapes, sample counts). */
#ifndef PUNCH_SITELIST_H
#define PUNCH_SITELIST_H

#include <stdbool.h>

#include <jansson.h>

#define SITELIST_DEFAULT_LIMIT 500
#define SITELIST_MAX_LIMIT 5000

/* The datasets under roots (colon-separated; the first root holding a
 * name wins, as the engine resolves it), at most limit of them, in path
 * order: an array of {"name", "format", "records" or null, "shapes"
 * object or null}. Directories are read 3 levels deep; an entry whose
 * real path (symlinks followed) leaves its root is neither listed nor
 * entered. *truncated: more were there. NULL when out of memory. */
json_t *sitelist_scan(const char *roots, int limit, bool *truncated);

#endif
