/* utf8.h — strict UTF-8 decoding, shared by the text dataset loader
 * (engine/data/text.c) and the daemon's upload check, so both accept
 * exactly the same files. */
#ifndef PUNCH_UTF8_H
#define PUNCH_UTF8_H

#include <stddef.h>
#include <stdint.h>

/* The code point at p[0..n) (n >= 1) into *cp: the bytes it uses, 1 to
 * 4, or 0 when they are not well-formed UTF-8 (a stray continuation
 * byte, an overlong form, a surrogate, past U+10FFFF, or a sequence cut
 * short by n; a caller reading in chunks tries again with more bytes). */
size_t utf8_next(const unsigned char *p, size_t n, uint32_t *cp);

#endif
