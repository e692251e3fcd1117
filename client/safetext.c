/* safetext.c — control characters out of printed text (safetext.h). */
#include "safetext.h"

void safetext_clean(char *s)
{
    char *w = s;
    for (const unsigned char *r = (const unsigned char *)s; *r; r++) {
        if (r[0] == 0xc2 && r[1] >= 0x80 && r[1] <= 0x9f) {
            *w++ = '?'; /* C1, two bytes in UTF-8 */
            r++;
        } else {
            *w++ = *r < 0x20 || *r == 0x7f ? '?' : (char)*r;
        }
    }
    *w = '\0';
}
