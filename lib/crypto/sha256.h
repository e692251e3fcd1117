/* sha256.h — SHA-256 (FIPS 180-4), for the hashed secrets of the secrets file.
 * Small and dependency-free: none of the project's libraries exposes it. */
#ifndef PUNCH_SHA256_H
#define PUNCH_SHA256_H

#include <stddef.h>
#include <stdint.h>

#define SHA256_DIGEST_LEN 32

typedef struct sha256_ctx {
    uint32_t h[8];
    uint64_t total;      /* bytes hashed so far */
    uint8_t block[64];   /* pending partial block */
    size_t used;         /* bytes in block */
} sha256_ctx;

void sha256_init(sha256_ctx *ctx);
void sha256_update(sha256_ctx *ctx, const void *data, size_t len);
void sha256_final(sha256_ctx *ctx, uint8_t out[SHA256_DIGEST_LEN]);

/* One-shot digest of len bytes. */
void sha256(const void *data, size_t len, uint8_t out[SHA256_DIGEST_LEN]);

/* Lowercase hex of a digest into hex (65 bytes incl. NUL). */
void sha256_hex(const uint8_t digest[SHA256_DIGEST_LEN], char hex[2 * SHA256_DIGEST_LEN + 1]);

#endif
