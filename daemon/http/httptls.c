/* httptls.c — the TLS files, the client-certificate check and the TLS
 * port's hint to a plain HTTP request (httptls.h). */
#include "http/httptls.h"

#include <errno.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>

#include <gnutls/gnutls.h>

#include "io/io_file.h"
#include "log.h"

/* Certificates and keys are small; a bigger file is a wrong path. */
#define HTTPTLS_FILE_MAX (1u << 20)

struct httptls {
    char *cert;      /* PEM, NUL-terminated */
    char *key;
    size_t key_len;
    char *client_ca; /* NULL: no mutual TLS */
};

/* Read the PEM file of setting `what` into *out. */
static int httptls_read(const char *what, const char *path, char **out, size_t *len, char *err,
                        size_t errlen)
{
    unsigned char *data = NULL;
    size_t n = 0;
    char why[512];
    if (io_read_file(path, HTTPTLS_FILE_MAX, &data, &n, why, sizeof why) != 0) {
        snprintf(err, errlen, "%s: %s", what, why);
        return -1;
    }
    if (!strstr((char *)data, "-----BEGIN ")) {
        snprintf(err, errlen, "%s: %s is not a PEM file (no -----BEGIN line)", what, path);
        free(data);
        return -1;
    }
    *out = (char *)data;
    if (len)
        *len = n;
    return 0;
}

/* Do the certificate and the key belong together? libmicrohttpd would only
 * fail to start; GnuTLS says which of the two is wrong. */
static int httptls_pair_ok(const config *cfg, const httptls *t, char *err, size_t errlen)
{
    gnutls_certificate_credentials_t cred;
    if (gnutls_certificate_allocate_credentials(&cred) != GNUTLS_E_SUCCESS) {
        snprintf(err, errlen, "out of memory");
        return -1;
    }
    gnutls_datum_t cert = {(unsigned char *)t->cert, (unsigned)strlen(t->cert)};
    gnutls_datum_t key = {(unsigned char *)t->key, (unsigned)t->key_len};
    int rc = gnutls_certificate_set_x509_key_mem(cred, &cert, &key, GNUTLS_X509_FMT_PEM);
    gnutls_certificate_free_credentials(cred);
    if (rc == GNUTLS_E_CERTIFICATE_KEY_MISMATCH)
        snprintf(err, errlen, "tls_key %s is not the key of tls_cert %s (their public keys "
                 "differ: give the key the certificate was made for)", cfg->tls_key,
                 cfg->tls_cert);
    else if (rc < 0)
        snprintf(err, errlen, "tls_cert %s with tls_key %s: %s", cfg->tls_cert, cfg->tls_key,
                 gnutls_strerror(rc));
    return rc < 0 ? -1 : 0;
}

int httptls_load(const config *cfg, httptls **out, char *err, size_t errlen)
{
    *out = NULL;
    if (!cfg->tls_cert[0] && !cfg->tls_key[0]) {
        if (cfg->tls_client_ca[0]) {
            snprintf(err, errlen, "tls_client_ca needs tls_cert and tls_key");
            return -1;
        }
        return 0;
    }
    if (!cfg->tls_cert[0] || !cfg->tls_key[0]) {
        snprintf(err, errlen, "tls_cert and tls_key go together: %s is not set",
                 cfg->tls_cert[0] ? "tls_key" : "tls_cert");
        return -1;
    }
    if (MHD_is_feature_supported(MHD_FEATURE_TLS) != MHD_YES) {
        snprintf(err, errlen, "this libmicrohttpd was built without TLS support");
        return -1;
    }
    httptls *t = calloc(1, sizeof *t);
    if (!t) {
        snprintf(err, errlen, "out of memory");
        return -1;
    }
    if (httptls_read("tls_cert", cfg->tls_cert, &t->cert, NULL, err, errlen) != 0 ||
        httptls_read("tls_key", cfg->tls_key, &t->key, &t->key_len, err, errlen) != 0 ||
        httptls_pair_ok(cfg, t, err, errlen) != 0 ||
        (cfg->tls_client_ca[0] &&
         httptls_read("tls_client_ca", cfg->tls_client_ca, &t->client_ca, NULL, err, errlen) != 0)) {
        httptls_free(t);
        return -1;
    }
    *out = t;
    return 0;
}

size_t httptls_options(const httptls *t, struct MHD_OptionItem *items)
{
    size_t n = 0;
    items[n++] = (struct MHD_OptionItem){MHD_OPTION_HTTPS_MEM_CERT, 0, t->cert};
    items[n++] = (struct MHD_OptionItem){MHD_OPTION_HTTPS_MEM_KEY, 0, t->key};
    if (t->client_ca)
        items[n++] = (struct MHD_OptionItem){MHD_OPTION_HTTPS_MEM_TRUST, 0, t->client_ca};
    return n;
}

bool httptls_client_ok(const httptls *t, struct MHD_Connection *conn, char *why, size_t whylen)
{
    if (!t || !t->client_ca)
        return true;
    const union MHD_ConnectionInfo *ci =
        MHD_get_connection_info(conn, MHD_CONNECTION_INFO_GNUTLS_SESSION);
    gnutls_session_t session = ci ? (gnutls_session_t)ci->tls_session : NULL;
    unsigned list_size = 0;
    if (!session || !gnutls_certificate_get_peers(session, &list_size) || list_size == 0) {
        snprintf(why, whylen, "a client certificate is required (mutual TLS)");
        return false;
    }
    unsigned status = 0;
    int rc = gnutls_certificate_verify_peers2(session, &status);
    if (rc != GNUTLS_E_SUCCESS) {
        snprintf(why, whylen, "client certificate: %s", gnutls_strerror(rc));
        return false;
    }
    if (status != 0) {
        gnutls_datum_t text = {0};
        if (gnutls_certificate_verification_status_print(status, GNUTLS_CRT_X509, &text, 0) ==
            GNUTLS_E_SUCCESS) {
            snprintf(why, whylen, "client certificate refused: %s", (char *)text.data);
            gnutls_free(text.data);
        } else {
            snprintf(why, whylen, "client certificate refused");
        }
        return false;
    }
    return true;
}

void httptls_free(httptls *t)
{
    if (!t)
        return;
    if (t->key)
        explicit_bzero(t->key, t->key_len);
    free(t->cert);
    free(t->key);
    free(t->client_ca);
    free(t);
}

/* Do the bytes look like an HTTP request line ("GET ", "POST "...), where
 * a TLS client's first byte is 0x16 (a handshake record)? */
static bool httptls_looks_plain(const unsigned char *b, size_t n)
{
    size_t i = 0;
    while (i < n && b[i] >= 'A' && b[i] <= 'Z')
        i++;
    return i >= 3 && i < n && b[i] == ' ';
}

/* The reads of one TLS connection: GnuTLS pulls its bytes through
 * httptls_sniff_pull, which looks at the first ones (MSG_PEEK) before the
 * handshake takes them, when they have come: nothing ever waits for a
 * client that sends nothing. Lives as long as the connection's session. */
struct httptls_sniff {
    gnutls_session_t session;
    int fd;
    bool decided; /* the first bytes came (or the end): plain reads from now */
};

static void httptls_plain_reply(int fd);

static ssize_t httptls_sniff_pull(gnutls_transport_ptr_t ptr, void *buf, size_t len)
{
    httptls_sniff *sn = ptr;
    if (!sn->decided) {
        unsigned char head[12];
        ssize_t n = recv(sn->fd, head, sizeof head, MSG_PEEK | MSG_DONTWAIT);
        if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK || errno == EINTR)) {
            gnutls_transport_set_errno(sn->session, errno == EINTR ? EINTR : EAGAIN);
            return -1;
        }
        sn->decided = true;
        if (n > 0 && httptls_looks_plain(head, (size_t)n)) {
            httptls_plain_reply(sn->fd);
            log_debug("http: a plain HTTP request to the TLS port was told to use https");
            /* The handshake fails on this, and libmicrohttpd closes. */
            gnutls_transport_set_errno(sn->session, ECONNRESET);
            return -1;
        }
    }
    ssize_t got = recv(sn->fd, buf, len, 0);
    if (got < 0)
        gnutls_transport_set_errno(sn->session, errno);
    return got;
}

static int httptls_sniff_pull_timeout(gnutls_transport_ptr_t ptr, unsigned int ms)
{
    httptls_sniff *sn = ptr;
    struct pollfd p = {.fd = sn->fd, .events = POLLIN};
    return poll(&p, 1, ms == GNUTLS_INDEFINITE_TIMEOUT ? -1 : (int)ms);
}

static gnutls_session_t httptls_session(struct MHD_Connection *conn)
{
    const union MHD_ConnectionInfo *ci =
        MHD_get_connection_info(conn, MHD_CONNECTION_INFO_GNUTLS_SESSION);
    return ci ? (gnutls_session_t)ci->tls_session : NULL;
}

httptls_sniff *httptls_sniff_start(struct MHD_Connection *conn, int fd)
{
    gnutls_session_t session = httptls_session(conn);
    httptls_sniff *sn = session ? malloc(sizeof *sn) : NULL;
    if (!sn) {
        log_warn("http: no plain-HTTP check for a TLS connection (%s)",
                 session ? "out of memory" : "no TLS session");
        return NULL;
    }
    *sn = (httptls_sniff){.session = session, .fd = fd};
    gnutls_transport_ptr_t recv_ptr, send_ptr;
    gnutls_transport_get_ptr2(session, &recv_ptr, &send_ptr);
    /* Sends keep libmicrohttpd's transport (the socket itself). */
    gnutls_transport_set_ptr2(session, sn, send_ptr);
    gnutls_transport_set_pull_function(session, httptls_sniff_pull);
    gnutls_transport_set_pull_timeout_function(session, httptls_sniff_pull_timeout);
    return sn;
}

void httptls_sniff_free(httptls_sniff *sn)
{
    free(sn);
}

/* The 400 in clear for a plain request on fd, then the end of writing. */
static void httptls_plain_reply(int fd)
{
    static const char body[] =
        "{\"error\":\"this port speaks HTTPS: use https:// (a plain http:// request was "
        "sent to it)\"}\n";
    /* Read what came (a header; bounded), so that the close does not reset
     * the connection before the client reads the answer. */
    char sink[4096];
    for (int i = 0; i < 16 && recv(fd, sink, sizeof sink, MSG_DONTWAIT) > 0; i++)
        ;
    char reply[512];
    int len = snprintf(reply, sizeof reply,
                       "HTTP/1.1 400 Bad Request\r\nContent-Type: application/json\r\n"
                       "Connection: close\r\nContent-Length: %zu\r\n\r\n%s",
                       sizeof body - 1, body);
    (void)!send(fd, reply, (size_t)len, MSG_NOSIGNAL | MSG_DONTWAIT);
    shutdown(fd, SHUT_WR);
}
