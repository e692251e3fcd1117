/* httpframe.h — RFC 9112 message-framing checks on a request's header
 * section, made before a byte of its body is read. libmicrohttpd 0.9.75
 * accepts ambiguous framing (two differing Content-Lengths: a second,
 * smuggled request is parsed from the body) and leaves an unknown transfer
 * coding hanging; a request that fails here is answered 400 and its
 * connection closed (RFC 9112 §6.3: the framing cannot be trusted). */
#ifndef PUNCH_HTTPFRAME_H
#define PUNCH_HTTPFRAME_H

#include <microhttpd.h>

/* NULL when conn's request (HTTP version `version`) has a method that is an
 * RFC 9110 token, a path free of control characters (a decoded %00..%1F or
 * %7F: http.c keeps a %00 visible as 0x7F so the path is not cut short
 * there) and is framed unambiguously:
 * at most one Content-Length value (repeats must be equal), not both
 * Content-Length and Transfer-Encoding, a Transfer-Encoding of exactly
 * "chunked", no whitespace in a field name (before its colon), and for
 * HTTP/1.1 exactly one Host. Otherwise a static message saying which rule
 * the request breaks. */
const char *httpframe_check(struct MHD_Connection *conn, const char *method, const char *url,
                            const char *version);

#endif
