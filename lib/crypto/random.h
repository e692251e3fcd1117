/* random.h — random bytes for keys and secrets from GnuTLS's generator
 * (seeded from the kernel, as getrandom is, and the same one TLS uses). */
#ifndef PUNCH_RANDOM_H
#define PUNCH_RANDOM_H

#include <stdbool.h>
#include <stddef.h>

/* Fill buf with len random bytes fit for a key. False, with why in err,
 * when the generator fails (buf is then zeroed). */
bool crypto_random(void *buf, size_t len, char *err, size_t errlen);

#endif
