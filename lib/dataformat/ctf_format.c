/* ctf_format.c — CTF line heads and sequences (ctf_format.h). */
#include "dataformat/ctf_format.h"

#include <string.h>

bool ctffmt_space(char c)
{
    return c == ' ' || c == '\t' || c == '\r';
}

int ctffmt_head_parse(const char *p, const char *end, ctffmt_head *h)
{
    while (p < end && ctffmt_space(*p))
        p++;
    h->id = p;
    while (p < end && *p != '|' && !ctffmt_space(*p))
        p++;
    h->id_len = (size_t)(p - h->id);
    while (p < end && ctffmt_space(*p))
        p++;
    h->bar = p;
    return p < end && *p != '|' ? -1 : 0;
}

bool ctffmt_blank(const char *p, const char *end)
{
    while (p < end && ctffmt_space(*p))
        p++;
    return p == end;
}

bool ctffmt_new_seq(const char *id, size_t len, const char *prev, size_t prev_len, bool first)
{
    return first || len == 0 || len != prev_len || memcmp(id, prev, len) != 0;
}
