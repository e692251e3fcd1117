/* random.c — key-grade random bytes through GnuTLS (random.h). */
#include "crypto/random.h"

#include <stdio.h>
#include <string.h>

#include <gnutls/crypto.h>
#include <gnutls/gnutls.h>

bool crypto_random(void *buf, size_t len, char *err, size_t errlen)
{
    int rc = gnutls_rnd(GNUTLS_RND_KEY, buf, len);
    if (rc != 0) {
        memset(buf, 0, len);
        snprintf(err, errlen, "random bytes: %s", gnutls_strerror(rc));
        return false;
    }
    return true;
}
