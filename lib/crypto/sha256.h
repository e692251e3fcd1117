/* sha256.h — SHA-256 for the hashed secrets of the secrets file, from
 * GnuTLS (which punchcardd links for HTTPS anyway, and which every Debian
 * system has: apt depends on it), so punch keygen hashes exactly as
 * punchcardd verifies. */
#ifndef PUNCH_SHA256_H
#define PUNCH_SHA256_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#define SHA256_DIGEST_LEN 32

/* An incremental digest (an upload hashed as it streams to disk). */
typedef struct sha256_ctx {
    void *hd; /* GnuTLS's hash handle; NULL once finished or discarded */
} sha256_ctx;

/* Start a digest. False when the TLS library refuses (nothing to free). */
bool sha256_init(sha256_ctx *ctx);
void sha256_update(sha256_ctx *ctx, const void *data, size_t len);
/* The digest into out (zeroed if init failed); frees the context. */
void sha256_final(sha256_ctx *ctx, uint8_t out[SHA256_DIGEST_LEN]);
/* Free a context without its digest (no-op once finished). */
void sha256_discard(sha256_ctx *ctx);

/* The digest of len bytes at data into out. False only when the TLS library
 * refuses the algorithm (out is then zeroed). */
bool sha256(const void *data, size_t len, uint8_t out[SHA256_DIGEST_LEN]);

/* Lowercase hex of a digest into hex (65 bytes incl. NUL). */
void sha256_hex(const uint8_t digest[SHA256_DIGEST_LEN], char hex[2 * SHA256_DIGEST_LEN + 1]);

#endif
