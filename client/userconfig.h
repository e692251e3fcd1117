/* userconfig.h — where punch finds its server and secret: the user's
 * settings, not the daemon's configuration (that lives in daemon/). Each
 * setting comes from the first source that has it: the --url/--secret
 * flags, then the PUNCH_URL/PUNCH_SECRET environment variables, then the
 * config file (~/.config/punch/config: lines `url = ...` and `secret = ...`,
 * `#` comments). The URL defaults to USERCONFIG_DEFAULT_URL; the secret has
 * no default (commands that need one say how to set it). */
#ifndef PUNCH_CLIENT_USERCONFIG_H
#define PUNCH_CLIENT_USERCONFIG_H

#include "cli.h"

#define USERCONFIG_DEFAULT_URL "http://127.0.0.1:8080"

/* The candidates, in precedence order; NULL or "" means "not given". */
typedef struct userconfig_sources {
    const char *flag_url;
    const char *flag_secret;
    const char *env_url;
    const char *env_secret;
    const char *file_path; /* a missing file is fine; an unreadable one is not */
    FILE *warn;            /* where to warn about a world-readable file; NULL: don't */
} userconfig_sources;

/* Fill ctx->url and ctx->secret (heap strings, free with userconfig_free).
 * Returns 0, or PUNCH_EXIT_USAGE with *err naming the source and line of a
 * bad value. */
int userconfig_resolve(const userconfig_sources *src, cli_ctx *ctx, cli_error *err);

/* The config file path: $PUNCH_CONFIG, else $XDG_CONFIG_HOME/punch/config,
 * else $HOME/.config/punch/config. Heap string, or NULL without HOME. */
char *userconfig_default_path(void);

/* Free ctx->url and ctx->secret (wiping the secret first) and set them to
 * NULL; safe on a ctx that holds neither. */
void userconfig_free(cli_ctx *ctx);

#endif
