/* sha256.c — SHA-256 through GnuTLS (sha256.h). */
#include "crypto/sha256.h"

#include <string.h>

#include <gnutls/crypto.h>
#include <gnutls/gnutls.h>

bool sha256(const void *data, size_t len, uint8_t out[SHA256_DIGEST_LEN])
{
    if (gnutls_hash_fast(GNUTLS_DIG_SHA256, data, len, out) != 0) {
        memset(out, 0, SHA256_DIGEST_LEN);
        return false;
    }
    return true;
}

bool sha256_init(sha256_ctx *ctx)
{
    gnutls_hash_hd_t hd;
    ctx->hd = gnutls_hash_init(&hd, GNUTLS_DIG_SHA256) == 0 ? hd : NULL;
    return ctx->hd != NULL;
}

void sha256_update(sha256_ctx *ctx, const void *data, size_t len)
{
    if (ctx->hd && gnutls_hash(ctx->hd, data, len) != 0)
        sha256_discard(ctx);
}

void sha256_final(sha256_ctx *ctx, uint8_t out[SHA256_DIGEST_LEN])
{
    if (!ctx->hd) {
        memset(out, 0, SHA256_DIGEST_LEN);
        return;
    }
    gnutls_hash_deinit(ctx->hd, out);
    ctx->hd = NULL;
}

void sha256_discard(sha256_ctx *ctx)
{
    if (ctx->hd)
        gnutls_hash_deinit(ctx->hd, NULL);
    ctx->hd = NULL;
}

void sha256_hex(const uint8_t digest[SHA256_DIGEST_LEN], char hex[2 * SHA256_DIGEST_LEN + 1])
{
    static const char digits[] = "0123456789abcdef";
    for (int i = 0; i < SHA256_DIGEST_LEN; i++) {
        hex[2 * i] = digits[digest[i] >> 4];
        hex[2 * i + 1] = digits[digest[i] & 15];
    }
    hex[2 * SHA256_DIGEST_LEN] = '\0';
}
