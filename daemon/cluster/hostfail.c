/* hostfail.c — finding a lost host in Open MPI's output (contract in
 * hostfail.h). */
#include "cluster/hostfail.h"

#include <ctype.h>
#include <stdio.h>
#include <string.h>
#include <strings.h>

/* Most specific first: a log may hold more than one. */
static const struct {
    const char *banner;
    const char *what;
} hostfail_banners[] = {
    {"ORTE has lost communication with a remote daemon",
     "Open MPI lost communication with its daemon"},
    {"An ORTE daemon has unexpectedly failed after launch",
     "Open MPI's daemon failed after launch"},
    {"ORTE was unable to reliably start one or more daemons",
     "Open MPI could not start or keep its daemon"},
};

/* What an rsh agent's line says when it names a host it cannot reach. */
static const char *const hostfail_agent_words[] = {
    "ssh:", "connect to host", "resolve hostname", "unknown host", "lost host", "unreachable",
    "cannot reach", "no route to host", "no host",
    "closed by remote host", /* ssh: "Connection to h2 closed by remote host." */
};

static bool hostfail_name_char(char ch)
{
    return isalnum((unsigned char)ch) || ch == '.' || ch == '-' || ch == '_';
}

/* Does line [b, e) contain name as a whole word? */
static bool hostfail_line_names(const char *b, const char *e, const char *name)
{
    size_t n = strlen(name);
    for (const char *p = b; n > 0 && p + n <= e; p++) {
        if (memcmp(p, name, n) != 0)
            continue;
        bool starts = p == b || !hostfail_name_char(p[-1]);
        bool ends = p + n == e || !hostfail_name_char(p[n]);
        if (starts && ends)
            return true;
    }
    return false;
}

static bool hostfail_line_has(const char *b, const char *e, const char *word)
{
    size_t n = strlen(word);
    for (const char *p = b; p + n <= e; p++)
        if (strncasecmp(p, word, n) == 0)
            return true;
    return false;
}

/* The node of "Remote daemon: [[...],K] on node NAME". */
static bool hostfail_remote_daemon(const char *text, char *host, size_t cap)
{
    const char *p = strstr(text, "Remote daemon:");
    if (!p)
        return false;
    const char *eol = p + strcspn(p, "\n");
    static const char on_node[] = " on node ";
    for (const char *q = p; q + sizeof on_node - 1 <= eol; q++) {
        if (memcmp(q, on_node, sizeof on_node - 1) != 0)
            continue;
        q += sizeof on_node - 1;
        size_t n = 0;
        while (q + n < eol && !isspace((unsigned char)q[n]))
            n++;
        if (n == 0 || n >= cap)
            return false;
        memcpy(host, q, n);
        host[n] = '\0';
        return true;
    }
    return false;
}

/* The first host of hosts that an rsh agent's line outside the banners
 * (which Open MPI frames in rules of dashes) names. */
static bool hostfail_agent_line(const char *text, const char *const *hosts, int n,
                                char *host, size_t cap)
{
    bool in_banner = false;
    for (const char *b = text; *b;) {
        const char *e = b + strcspn(b, "\n");
        if (e - b >= 10 && strspn(b, "-") >= 10) {
            in_banner = !in_banner;
        } else if (!in_banner) {
            bool agent = false;
            for (size_t w = 0; w < sizeof hostfail_agent_words / sizeof *hostfail_agent_words; w++)
                agent |= hostfail_line_has(b, e, hostfail_agent_words[w]);
            for (int h = 0; agent && h < n; h++)
                if (hostfail_line_names(b, e, hosts[h])) {
                    snprintf(host, cap, "%s", hosts[h]);
                    return true;
                }
        }
        b = *e ? e + 1 : e;
    }
    return false;
}

const char *hostfail_find(const char *text, const char *const *hosts, int n, char *host,
                          size_t cap)
{
    host[0] = '\0';
    const char *what = NULL;
    for (size_t i = 0; i < sizeof hostfail_banners / sizeof *hostfail_banners && !what; i++)
        if (strstr(text, hostfail_banners[i].banner))
            what = hostfail_banners[i].what;
    if (!what)
        return NULL;
    if (!hostfail_remote_daemon(text, host, cap) &&
        !hostfail_agent_line(text, hosts, n, host, cap))
        host[0] = '\0';
    return what;
}
