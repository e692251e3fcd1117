/* ctf_format.h — a CNTK Text Format line's head: an optional sequence id,
 * then "|name values ..." streams. Lines that share an id in a row are one
 * sequence; a line without one is a sequence by itself. */
#ifndef PUNCH_CTF_FORMAT_H
#define PUNCH_CTF_FORMAT_H

#include <stdbool.h>
#include <stddef.h>

typedef struct ctffmt_head {
    const char *id;     /* the sequence id (id_len 0: none) */
    size_t id_len;
    const char *bar;    /* the first stream's '|', or the line's end */
} ctffmt_head;

/* Spaces between a CTF line's tokens (a CRLF line's '\r' among them). */
bool ctffmt_space(char c);

/* Line [p, end)'s head: 0, or -1 when something other than '|' follows
 * the id. */
int ctffmt_head_parse(const char *p, const char *end, ctffmt_head *h);

/* Whether line [p, end) is blank (spaces only). */
bool ctffmt_blank(const char *p, const char *end);

/* Whether a line with sequence id [id, id + len) starts a new sequence
 * after the line with id prev (first: no line before it). */
bool ctffmt_new_seq(const char *id, size_t len, const char *prev, size_t prev_len, bool first);

#endif
