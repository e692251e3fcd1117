/* config.h — where punch finds its server and secret. Each setting comes
 * from the first source that has it: the --url/--secret flags, then the
 * PUNCH_URL/PUNCH_SECRET environment variables, then the config file
 * (~/.config/punch/config: lines `url = ...` and `secret = ...`, `#`
 * comments). The URL defaults to CONFIG_DEFAULT_URL; the secret has no
 * default (commands that need one say how to set it). */
#ifndef PUNCH_CLIENT_CONFIG_H
#define PUNCH_CLIENT_CONFIG_H

#include "cli.h"

#define CONFIG_DEFAULT_URL "http://127.0.0.1:8080"

/* The candidates, in precedence order; NULL or "" means "not given". */
typedef struct config_sources {
    const char *flag_url;
    const char *flag_secret;
    const char *env_url;
    const char *env_secret;
    const char *file_path; /* a missing file is fine; an unreadable one is not */
    FILE *warn;            /* where to warn about a world-readable file; NULL: don't */
} config_sources;

/* Fill ctx->url and ctx->secret (heap strings, free with config_free).
 * Returns 0, or PUNCH_EXIT_USAGE with *err naming the source and line of a
 * bad value. */
int config_resolve(const config_sources *src, cli_ctx *ctx, cli_error *err);

/* The config file path: $PUNCH_CONFIG, else $XDG_CONFIG_HOME/punch/config,
 * else $HOME/.config/punch/config. Heap string, or NULL without HOME. */
char *config_default_path(void);

void config_free(cli_ctx *ctx);

#endif
