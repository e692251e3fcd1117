/* pagecache.h — the encoded replies of recent job-list pages, reused while
 * the store has not changed.
 *
 * A page's cost is flat (store.h), but encoding a hundred job objects as
 * JSON is most of it (a profile of GET /api/v1/jobs?limit=100: 83% in
 * Jansson and malloc, 9% in SQLite). Dashboards and notebooks poll the same
 * page over and over, so a page is kept under its query and the store's
 * write count (store_writes()); any committed write makes every entry
 * stale. Only pages whose views depend on the store alone are kept: not
 * one with a starting or running job, whose progress is read from its run
 * directory on every request. Safe from any thread. */
#ifndef PUNCH_PAGECACHE_H
#define PUNCH_PAGECACHE_H

#include <stddef.h>
#include <stdint.h>

/* Entries kept; the least recently used goes first. */
#define PAGECACHE_ENTRIES 32
/* Longest key kept; a longer one is never cached. */
#define PAGECACHE_KEY_MAX 192

typedef struct pagecache pagecache;

/* NULL when out of memory (the daemon then encodes every page). */
pagecache *pagecache_new(void);
void pagecache_free(pagecache *pc);

/* A copy of the reply kept under key at write count `writes` (the caller
 * frees it; its length in *len), or NULL. */
char *pagecache_get(pagecache *pc, const char *key, uint64_t writes, size_t *len);

/* Keep a copy of text under key, as read at write count `writes` (read
 * before the page was: then the text is never older than its count). */
void pagecache_put(pagecache *pc, const char *key, uint64_t writes, const char *text, size_t len);

#endif
