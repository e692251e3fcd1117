/* auth.c — secrets file parsing and constant-time secret lookup. */
#include "http/auth.h"

#include <errno.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <jansson.h>

#include "io/io_file.h"

/* A secrets file's size at most: a line per user, far beyond any site. */
#define AUTH_FILE_MAX (16u << 20)

bool auth_ct_equal(const void *a, const void *b, size_t n)
{
    const volatile uint8_t *x = a, *y = b;
    uint8_t diff = 0;
    for (size_t i = 0; i < n; i++)
        diff |= x[i] ^ y[i];
    return diff == 0;
}

static void auth_fail(char *err, size_t errlen, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));

static void auth_fail(char *err, size_t errlen, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(err, errlen, fmt, ap);
    va_end(ap);
}

/* Identities become owner names in the store and in logs: keep them short
 * and printable so they cannot forge log lines or paths. */
static bool auth_identity_ok(const char *s)
{
    size_t n = strlen(s);
    if (n == 0 || n >= AUTH_IDENTITY_MAX)
        return false;
    for (size_t i = 0; i < n; i++) {
        char c = s[i];
        bool ok = (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') ||
                  c == '.' || c == '_' || c == '-' || c == '@' || c == '+';
        if (!ok)
            return false;
    }
    return true;
}

static int auth_hex_nibble(char c)
{
    if (c >= '0' && c <= '9')
        return c - '0';
    if (c >= 'a' && c <= 'f')
        return c - 'a' + 10;
    if (c >= 'A' && c <= 'F')
        return c - 'A' + 10;
    return -1;
}

static bool auth_parse_hex_digest(const char *hex, uint8_t out[SHA256_DIGEST_LEN])
{
    if (strlen(hex) != 2 * SHA256_DIGEST_LEN)
        return false;
    for (int i = 0; i < SHA256_DIGEST_LEN; i++) {
        int hi = auth_hex_nibble(hex[2 * i]), lo = auth_hex_nibble(hex[2 * i + 1]);
        if (hi < 0 || lo < 0)
            return false;
        out[i] = (uint8_t)(hi << 4 | lo);
    }
    return true;
}

/* Fill *e from the JSON object of entry number `index` (1-based in messages). */
static bool auth_parse_entry(json_t *obj, size_t index, auth_entry *e, char *err, size_t errlen)
{
    if (!json_is_object(obj)) {
        auth_fail(err, errlen, "entry %zu: must be an object", index);
        return false;
    }
    const char *key;
    json_t *val;
    json_object_foreach(obj, key, val) {
        if (strcmp(key, "secret") && strcmp(key, "secret_sha256") && strcmp(key, "identity") &&
            strcmp(key, "role")) {
            auth_fail(err, errlen, "entry %zu: unknown key \"%.40s\"; expected secret, "
                      "secret_sha256, identity, role", index, key);
            return false;
        }
    }
    json_t *identity = json_object_get(obj, "identity");
    if (!json_is_string(identity) || !auth_identity_ok(json_string_value(identity))) {
        auth_fail(err, errlen, "entry %zu: identity: must be a string of 1-%d letters, digits "
                  "or . _ - @ +", index, AUTH_IDENTITY_MAX - 1);
        return false;
    }
    snprintf(e->identity, sizeof e->identity, "%s", json_string_value(identity));
    json_t *secret = json_object_get(obj, "secret");
    json_t *hashed = json_object_get(obj, "secret_sha256");
    if ((secret != NULL) == (hashed != NULL)) {
        auth_fail(err, errlen, "entry %zu (%s): needs exactly one of secret, secret_sha256",
                  index, e->identity);
        return false;
    }
    if (secret) {
        if (!json_is_string(secret) || json_string_length(secret) == 0) {
            auth_fail(err, errlen, "entry %zu (%s): secret: must be a non-empty string", index,
                      e->identity);
            return false;
        }
        if (!sha256(json_string_value(secret), json_string_length(secret), e->digest)) {
            auth_fail(err, errlen, "entry %zu (%s): secret: SHA-256 is unavailable", index,
                      e->identity);
            return false;
        }
    } else if (!json_is_string(hashed) ||
               !auth_parse_hex_digest(json_string_value(hashed), e->digest)) {
        auth_fail(err, errlen, "entry %zu (%s): secret_sha256: must be 64 hex digits", index,
                  e->identity);
        return false;
    }
    e->role = AUTH_ROLE_USER;
    json_t *role = json_object_get(obj, "role");
    if (role) {
        const char *r = json_string_value(role);
        if (r && strcmp(r, "admin") == 0) {
            e->role = AUTH_ROLE_ADMIN;
        } else if (!r || strcmp(r, "user") != 0) {
            auth_fail(err, errlen, "entry %zu (%s): role: must be \"user\" or \"admin\"", index,
                      e->identity);
            return false;
        }
    }
    return true;
}

auth_table *auth_table_parse(const char *text, size_t len, char *err, size_t errlen)
{
    json_error_t jerr;
    json_t *root = json_loadb(text, len, JSON_REJECT_DUPLICATES, &jerr);
    if (!root) {
        auth_fail(err, errlen, "line %d column %d: %s", jerr.line, jerr.column, jerr.text);
        return NULL;
    }
    auth_table *t = NULL;
    if (!json_is_array(root)) {
        auth_fail(err, errlen, "must be a JSON array of {\"secret\", \"identity\"} objects");
        goto out;
    }
    if (json_array_size(root) == 0) {
        auth_fail(err, errlen, "has no entries: nobody could log in");
        goto out;
    }
    t = calloc(1, sizeof *t);
    if (!t || !(t->entries = calloc(json_array_size(root), sizeof *t->entries))) {
        auth_fail(err, errlen, "out of memory");
        goto fail;
    }
    size_t i;
    json_t *obj;
    json_array_foreach(root, i, obj) {
        auth_entry *e = &t->entries[i];
        if (!auth_parse_entry(obj, i + 1, e, err, errlen))
            goto fail;
        for (size_t j = 0; j < i; j++) {
            if (auth_ct_equal(t->entries[j].digest, e->digest, SHA256_DIGEST_LEN)) {
                auth_fail(err, errlen, "entry %zu (%s): same secret as entry %zu (%s)", i + 1,
                          e->identity, j + 1, t->entries[j].identity);
                goto fail;
            }
        }
        t->n++;
    }
    goto out;
fail:
    auth_table_free(t);
    t = NULL;
out:
    json_decref(root);
    return t;
}

auth_table *auth_table_load(const char *path, char *err, size_t errlen)
{
    unsigned char *data = NULL;
    size_t len = 0;
    if (io_read_file(path, AUTH_FILE_MAX, &data, &len, err, errlen) != 0)
        return NULL;
    char *buf = (char *)data;
    char inner[400];
    auth_table *t = auth_table_parse(buf, len, inner, sizeof inner);
    memset(buf, 0, len); /* it held secrets */
    free(buf);
    if (!t)
        auth_fail(err, errlen, "%s: %s", path, inner);
    return t;
}

void auth_table_free(auth_table *table)
{
    if (!table)
        return;
    free(table->entries);
    free(table);
}

const auth_entry *auth_table_find(const auth_table *table, const char *secret, size_t len)
{
    uint8_t digest[SHA256_DIGEST_LEN];
    if (!sha256(secret, len, digest))
        return NULL;
    /* Visit every entry and select without branching on the comparison. */
    const auth_entry *found = NULL;
    for (size_t i = 0; i < table->n; i++) {
        uintptr_t hit = (uintptr_t)auth_ct_equal(table->entries[i].digest, digest, sizeof digest);
        uintptr_t mask = (uintptr_t)0 - hit;
        found = (const auth_entry *)(((uintptr_t)&table->entries[i] & mask) |
                                     ((uintptr_t)found & ~mask));
    }
    return found;
}

struct auth {
    char *path;
    pthread_rwlock_t lock;
    auth_table *table;
};

auth *auth_open(const char *path, char *err, size_t errlen)
{
    auth_table *t = auth_table_load(path, err, errlen);
    if (!t)
        return NULL;
    auth *a = calloc(1, sizeof *a);
    if (!a || !(a->path = strdup(path))) {
        free(a);
        auth_table_free(t);
        auth_fail(err, errlen, "out of memory");
        return NULL;
    }
    pthread_rwlock_init(&a->lock, NULL);
    a->table = t;
    return a;
}

void auth_close(auth *a)
{
    if (!a)
        return;
    auth_table_free(a->table);
    pthread_rwlock_destroy(&a->lock);
    free(a->path);
    free(a);
}

bool auth_reload(auth *a, char *err, size_t errlen)
{
    auth_table *t = auth_table_load(a->path, err, errlen);
    if (!t)
        return false;
    pthread_rwlock_wrlock(&a->lock);
    auth_table *old = a->table;
    a->table = t;
    pthread_rwlock_unlock(&a->lock);
    auth_table_free(old);
    return true;
}

size_t auth_count(auth *a)
{
    pthread_rwlock_rdlock(&a->lock);
    size_t n = a->table->n;
    pthread_rwlock_unlock(&a->lock);
    return n;
}

bool auth_identify(auth *a, const char *secret, size_t len, auth_caller *caller)
{
    pthread_rwlock_rdlock(&a->lock);
    const auth_entry *e = auth_table_find(a->table, secret, len);
    if (e) {
        memcpy(caller->identity, e->identity, sizeof caller->identity);
        caller->role = e->role;
    }
    pthread_rwlock_unlock(&a->lock);
    return e != NULL;
}
