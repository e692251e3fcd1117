/* userconfig.c — resolving the server URL and the secret from flags, the
 * environment and the config file, with errors that name where a bad value
 * came from. */
#include "userconfig.h"

#include <ctype.h>
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

static bool userconfig_given(const char *s)
{
    return s != NULL && s[0] != '\0';
}

/* The flag's value when given, else the environment's, else NULL; *origin
 * names the one chosen for error messages. */
static const char *userconfig_first(const char *flag, const char *flag_name, const char *env,
                                    const char *env_name, const char **origin)
{
    if (userconfig_given(flag)) {
        *origin = flag_name;
        return flag;
    }
    if (userconfig_given(env)) {
        *origin = env_name;
        return env;
    }
    return NULL;
}

/* Strip leading and trailing whitespace in place; returns the new start. */
static char *userconfig_trim(char *s)
{
    while (isspace((unsigned char)*s))
        s++;
    size_t n = strlen(s);
    while (n > 0 && isspace((unsigned char)s[n - 1]))
        s[--n] = '\0';
    return s;
}

/* A URL must be http(s) and carry no bytes that would corrupt a request. */
static int userconfig_check_url(const char *url, const char *origin, cli_error *err)
{
    if (strncmp(url, "http://", 7) != 0 && strncmp(url, "https://", 8) != 0)
        return cli_fail(err, PUNCH_EXIT_USAGE,
                        "%s: \"%s\" is not a URL; expected http://HOST:PORT", origin, url);
    const char *host = strstr(url, "://") + 3;
    if (*host == '\0' || *host == '/')
        return cli_fail(err, PUNCH_EXIT_USAGE, "%s: \"%s\" has no host; expected http://HOST:PORT",
                        origin, url);
    for (const char *p = url; *p; p++) {
        if ((unsigned char)*p <= ' ' || *p == 0x7f)
            return cli_fail(err, PUNCH_EXIT_USAGE,
                            "%s: the URL contains a space or control character", origin);
    }
    return 0;
}

/* The secret goes into an HTTP header: control bytes would let it inject
 * headers, so refuse them (without echoing the secret). */
static int userconfig_check_secret(const char *secret, const char *origin, cli_error *err)
{
    for (const char *p = secret; *p; p++) {
        if ((unsigned char)*p < ' ' || *p == 0x7f)
            return cli_fail(err, PUNCH_EXIT_USAGE,
                            "%s: the secret contains a control character", origin);
    }
    return 0;
}

/* Replace *dst with a copy of value; a URL loses its trailing slashes,
 * which would double up with the API paths. */
static int userconfig_set(char **dst, const char *value, bool is_url, cli_error *err)
{
    char *copy = strdup(value);
    if (copy == NULL)
        return cli_fail(err, PUNCH_EXIT_LOCAL, "out of memory");
    size_t n = strlen(copy);
    while (is_url && n > 0 && copy[n - 1] == '/')
        copy[--n] = '\0';
    free(*dst);
    *dst = copy;
    return 0;
}

/* One `key = value` line of the config file. */
static int userconfig_file_line(char *line, const char *path, int lineno, char **url,
                                char **secret, char *origin, size_t origin_len, cli_error *err)
{
    char *s = userconfig_trim(line);
    if (*s == '\0' || *s == '#')
        return 0;
    char *eq = strchr(s, '=');
    if (eq == NULL)
        return cli_fail(err, PUNCH_EXIT_USAGE,
                        "%s:%d: expected `url = ...` or `secret = ...`", path, lineno);
    *eq = '\0';
    char *key = userconfig_trim(s);
    char *value = userconfig_trim(eq + 1);
    size_t vn = strlen(value);
    if (vn >= 2 && ((value[0] == '"' && value[vn - 1] == '"') ||
                    (value[0] == '\'' && value[vn - 1] == '\''))) {
        value[vn - 1] = '\0';
        value++;
    }
    snprintf(origin, origin_len, "%s:%d", path, lineno);
    if (strcmp(key, "url") == 0) {
        if (userconfig_check_url(value, origin, err) != 0)
            return err->code;
        return userconfig_set(url, value, true, err);
    }
    if (strcmp(key, "secret") == 0) {
        if (userconfig_check_secret(value, origin, err) != 0)
            return err->code;
        return userconfig_set(secret, value, false, err);
    }
    return cli_fail(err, PUNCH_EXIT_USAGE, "%s:%d: unknown key \"%s\"; expected url or secret",
                    path, lineno, key);
}

/* Read the file's url and secret (either may stay NULL). A missing file is
 * not an error: most users configure through the environment. */
static int userconfig_read_file(const char *path, FILE *warn, char **url, char **secret,
                                cli_error *err)
{
    FILE *f = fopen(path, "r");
    if (f == NULL) {
        if (errno == ENOENT || errno == ENOTDIR)
            return 0;
        return cli_fail(err, PUNCH_EXIT_USAGE, "cannot read %s: %s", path, strerror(errno));
    }
    char line[4096];
    char origin[4200];
    int lineno = 0;
    int rc = 0;
    while (rc == 0 && fgets(line, sizeof line, f) != NULL) {
        lineno++;
        if (strchr(line, '\n') == NULL && !feof(f)) {
            rc = cli_fail(err, PUNCH_EXIT_USAGE, "%s:%d: line too long", path, lineno);
            break;
        }
        rc = userconfig_file_line(line, path, lineno, url, secret, origin, sizeof origin, err);
    }
    if (rc == 0 && ferror(f))
        rc = cli_fail(err, PUNCH_EXIT_USAGE, "cannot read %s: %s", path, strerror(errno));
    struct stat st;
    if (rc == 0 && *secret != NULL && warn != NULL && fstat(fileno(f), &st) == 0 &&
        (st.st_mode & 077) != 0)
        fprintf(warn, "punch: warning: %s holds a secret but others can read it; "
                      "run: chmod 600 %s\n", path, path);
    fclose(f);
    return rc;
}

int userconfig_resolve(const userconfig_sources *src, cli_ctx *ctx, cli_error *err)
{
    ctx->url = NULL;
    ctx->secret = NULL;
    const char *url_origin = NULL, *secret_origin = NULL;
    const char *url = userconfig_first(src->flag_url, "--url", src->env_url, "PUNCH_URL",
                                       &url_origin);
    const char *secret = userconfig_first(src->flag_secret, "--secret", src->env_secret,
                                          "PUNCH_SECRET", &secret_origin);
    if (url != NULL && userconfig_check_url(url, url_origin, err) != 0)
        return err->code;
    if (secret != NULL && userconfig_check_secret(secret, secret_origin, err) != 0)
        return err->code;

    char *file_url = NULL, *file_secret = NULL;
    if ((url == NULL || secret == NULL) && userconfig_given(src->file_path)) {
        if (userconfig_read_file(src->file_path, src->warn, &file_url, &file_secret, err) != 0) {
            free(file_url);
            free(file_secret);
            return err->code;
        }
    }
    if (url == NULL)
        url = file_url ? file_url : USERCONFIG_DEFAULT_URL;
    int rc = userconfig_set(&ctx->url, url, true, err);
    if (rc == 0 && (secret != NULL || file_secret != NULL))
        rc = userconfig_set(&ctx->secret, secret ? secret : file_secret, false, err);
    free(file_url);
    free(file_secret);
    if (rc != 0)
        userconfig_free(ctx);
    return rc;
}

char *userconfig_default_path(void)
{
    const char *explicit_path = getenv("PUNCH_CONFIG");
    if (userconfig_given(explicit_path))
        return strdup(explicit_path);
    const char *xdg = getenv("XDG_CONFIG_HOME");
    const char *home = getenv("HOME");
    char *path = NULL;
    if (userconfig_given(xdg)) {
        if (asprintf(&path, "%s/punch/config", xdg) < 0)
            return NULL;
    } else if (userconfig_given(home)) {
        if (asprintf(&path, "%s/.config/punch/config", home) < 0)
            return NULL;
    }
    return path;
}

void userconfig_free(cli_ctx *ctx)
{
    free(ctx->url);
    if (ctx->secret != NULL) {
        /* Don't leave the secret lying in freed heap memory. */
        explicit_bzero(ctx->secret, strlen(ctx->secret));
        free(ctx->secret);
    }
    ctx->url = NULL;
    ctx->secret = NULL;
}
