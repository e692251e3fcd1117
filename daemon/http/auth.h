/* auth.h — the secrets file and caller identification.
 *
 * The file is the seed's format, a JSON array of
 *   {"secret": "...", "identity": "alice"}            plain secret, or
 *   {"secret_sha256": "<64 hex>", "identity": "bob"}  its SHA-256,
 * each optionally with "role": "admin" | "user" (default user).
 * Plain secrets are hashed at load, so every lookup compares 32-byte digests
 * against every entry in constant time: neither the secret's content nor
 * which entry matched shows in the timing. The table is swapped atomically on
 * reload (SIGHUP); lookups copy the identity out. */
#ifndef PUNCH_AUTH_H
#define PUNCH_AUTH_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "crypto/sha256.h"

#define AUTH_IDENTITY_MAX 64

typedef enum auth_role { AUTH_ROLE_USER, AUTH_ROLE_ADMIN } auth_role;

typedef struct auth_entry {
    uint8_t digest[SHA256_DIGEST_LEN];
    char identity[AUTH_IDENTITY_MAX];
    auth_role role;
} auth_entry;

typedef struct auth_table {
    auth_entry *entries;
    size_t n;
} auth_table;

/* A caller, as the API sees it. */
typedef struct auth_caller {
    char identity[AUTH_IDENTITY_MAX];
    auth_role role;
} auth_caller;

/* Parse a secrets document. NULL on error with a message naming the entry
 * ("entry 3: identity: must be ..."); never quotes a secret. */
auth_table *auth_table_parse(const char *text, size_t len, char *err, size_t errlen);
auth_table *auth_table_load(const char *path, char *err, size_t errlen);
void auth_table_free(auth_table *table);

/* The entry whose secret is `secret` (len bytes), or NULL. Constant time in
 * the table size and independent of where (or whether) it matches. */
const auth_entry *auth_table_find(const auth_table *table, const char *secret, size_t len);

/* Constant-time equality of two n-byte buffers. */
bool auth_ct_equal(const void *a, const void *b, size_t n);

/* The live table behind a lock: what the HTTP threads use. */
typedef struct auth auth;

auth *auth_open(const char *path, char *err, size_t errlen);
void auth_close(auth *a);
/* Re-read the file; on error keep the old table and return false. */
bool auth_reload(auth *a, char *err, size_t errlen);
size_t auth_count(auth *a);
/* Fill *caller for a valid secret; false otherwise. */
bool auth_identify(auth *a, const char *secret, size_t len, auth_caller *caller);

#endif
