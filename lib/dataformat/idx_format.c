/* idx_format.c — IDX headers and bodies (idx_format.h). */
#include "dataformat/idx_format.h"

uint32_t idxfmt_be32(const unsigned char *p)
{
    return (uint32_t)p[0] << 24 | (uint32_t)p[1] << 16 | (uint32_t)p[2] << 8 | p[3];
}

bool idxfmt_magic_ok(const unsigned char *p, size_t len)
{
    return len >= 4 && p[0] == 0 && p[1] == 0 && p[2] == 0x08 && p[3] >= 1 &&
           p[3] <= IDXFMT_MAX_RANK;
}

long idxfmt_header_parse(const unsigned char *p, size_t len, idxfmt_header *h)
{
    if (!idxfmt_magic_ok(p, len))
        return len < 4 ? 4 : -1;
    h->rank = p[3];
    h->header_len = 4 + 4 * (size_t)h->rank;
    if (len < h->header_len)
        return (long)h->header_len;
    h->record_bytes = 1;
    for (int i = 0; i < h->rank; i++) {
        h->dims[i] = idxfmt_be32(p + 4 + 4 * i);
        if (i > 0)
            h->record_bytes *= h->dims[i];
    }
    return 0;
}

idxfmt_body idxfmt_body_check(const idxfmt_header *h, uint64_t body_bytes, uint64_t *have,
                              uint64_t *extra)
{
    *have = h->record_bytes ? body_bytes / h->record_bytes : 0;
    *extra = 0;
    uint64_t want = (uint64_t)h->dims[0] * h->record_bytes;
    if (body_bytes < want)
        return IDXFMT_BODY_SHORT;
    *extra = body_bytes - want;
    return *extra ? IDXFMT_BODY_EXTRA : IDXFMT_BODY_OK;
}
