/* httpframe.c — RFC 9112 framing checks on a request's header fields
 * (httpframe.h says why they are needed on top of libmicrohttpd). */
#include "http/httpframe.h"

#include <stdbool.h>
#include <string.h>
#include <strings.h>

/* What the header fields say about framing, gathered by one pass. */
typedef struct httpframe_scan {
    unsigned hosts;
    unsigned lengths;
    const char *length;      /* the first Content-Length value */
    bool lengths_differ;
    unsigned codings;        /* Transfer-Encoding fields */
    bool coding_not_chunked;
    bool bad_name;           /* a field name with whitespace or empty */
} httpframe_scan;

/* RFC 9110 §5.6.2: a field name is a token; libmicrohttpd keeps the
 * whitespace of "Name :" in the name, which RFC 9112 §5.1 says to reject. */
static bool httpframe_name_ok(const char *name)
{
    if (!name[0])
        return false;
    for (const char *p = name; *p; p++)
        if (*p == ' ' || *p == '\t' || (unsigned char)*p < 0x21 || (unsigned char)*p > 0x7e)
            return false;
    return true;
}

/* The value without the optional whitespace around it equals `word`, case
 * ignored (transfer codings are case-insensitive). */
static bool httpframe_value_is(const char *value, const char *word)
{
    while (*value == ' ' || *value == '\t')
        value++;
    size_t n = strlen(word);
    if (strncasecmp(value, word, n) != 0)
        return false;
    for (value += n; *value; value++)
        if (*value != ' ' && *value != '\t')
            return false;
    return true;
}

static enum MHD_Result httpframe_visit(void *cls, enum MHD_ValueKind kind, const char *key,
                                       const char *value)
{
    (void)kind;
    httpframe_scan *s = cls;
    if (!key || !httpframe_name_ok(key)) {
        s->bad_name = true;
        return MHD_YES;
    }
    if (!value)
        value = "";
    if (strcasecmp(key, MHD_HTTP_HEADER_HOST) == 0) {
        s->hosts++;
    } else if (strcasecmp(key, MHD_HTTP_HEADER_CONTENT_LENGTH) == 0) {
        if (s->lengths++ == 0)
            s->length = value;
        else if (strcmp(s->length, value) != 0)
            s->lengths_differ = true;
    } else if (strcasecmp(key, MHD_HTTP_HEADER_TRANSFER_ENCODING) == 0) {
        s->codings++;
        if (!httpframe_value_is(value, "chunked"))
            s->coding_not_chunked = true;
    }
    return MHD_YES;
}

/* RFC 9110 §5.6.2 tchar. */
static bool httpframe_token_ok(const char *t)
{
    if (!t || !t[0])
        return false;
    for (const unsigned char *p = (const unsigned char *)t; *p; p++)
        if (*p < 0x21 || *p > 0x7e || strchr("\"(),/:;<=>?@[\\]{}", *p))
            return false;
    return true;
}

static bool httpframe_path_ok(const char *url)
{
    for (const unsigned char *p = (const unsigned char *)url; p && *p; p++)
        if (*p < 0x20 || *p == 0x7f)
            return false;
    return true;
}

const char *httpframe_check(struct MHD_Connection *conn, const char *method, const char *url,
                            const char *version)
{
    if (!httpframe_token_ok(method))
        return "malformed request method (not an RFC 9110 token)";
    if (!httpframe_path_ok(url))
        return "the request path contains a control character (%00-%1F or %7F)";
    httpframe_scan s = {0};
    MHD_get_connection_values(conn, MHD_HEADER_KIND, httpframe_visit, &s);
    if (s.bad_name)
        return "malformed header field name (whitespace before the colon?)";
    if (s.lengths_differ)
        return "conflicting Content-Length headers";
    if (s.lengths && s.codings)
        return "both Content-Length and Transfer-Encoding";
    if (s.codings > 1 || s.coding_not_chunked)
        return "unsupported Transfer-Encoding: only \"chunked\" is accepted";
    bool http11 = version && strcmp(version, MHD_HTTP_VERSION_1_1) == 0;
    if (http11 && s.hosts == 0)
        return "missing Host header (required in HTTP/1.1)";
    if (s.hosts > 1)
        return "more than one Host header";
    return NULL;
}
