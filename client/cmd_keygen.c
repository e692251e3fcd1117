/* cmd_keygen.c — `punch keygen --identity NAME`: a new random secret for a
 * user, and the hashed secrets.json entry for the admin, so the daemon's
 * secrets file never needs to hold the secret itself. The hash is the
 * SHA-256 the daemon checks secrets with (lib/crypto), so both sides agree
 * by construction. */
#include <getopt.h>
#include <stdlib.h>
#include <string.h>

#include <jansson.h>

#include "commands.h"
#include "crypto/random.h"
#include "crypto/sha256.h"

/* 32 random bytes: 256 bits, as hex. */
#define KEYGEN_SECRET_BYTES 32
/* As the daemon's secrets file accepts (daemon/http/auth.c). */
#define KEYGEN_IDENTITY_MAX 63

const char cmd_keygen_usage[] =
    "usage: punch keygen --identity NAME [--admin]\n"
    "\n"
    "Make a new random secret (256 bits from GnuTLS's generator) for user NAME. Prints, on\n"
    "stdout, the secret (line 1: give it to NAME only; it is stored nowhere) and the\n"
    "entry for punchcardd's secrets file (line 2: it holds only the SHA-256 of the\n"
    "secret). Explanations go to stderr. The admin adds the entry to the JSON array\n"
    "in the secrets file and sends punchcardd SIGHUP to reload it.\n"
    "\n"
    "  -i, --identity NAME   who the secret is for: 1-63 letters, digits or . _ - @ +\n"
    "  --admin               the entry gets \"role\": \"admin\" (sees all jobs)\n"
    "\n"
    "exit: 0 done, 2 bad identity, 9 no randomness available.\n";

int keygen_parse_args(int argc, char **argv, keygen_args *args, cli_error *err)
{
    *args = (keygen_args){0};
    const cli_option options[] = {
        {.name = "identity", .letter = 'i', .dest = &args->identity, .take = cli_take_string},
        {.name = "admin", .dest = &args->admin},
        {0},
    };
    if (cli_parse_options(argc, argv, options, err) != 0)
        return err->code;
    if (optind < argc)
        return cli_fail(err, PUNCH_EXIT_USAGE,
                        "keygen: unexpected argument \"%s\"; did you mean --identity %s?",
                        argv[optind], argv[optind]);
    if (args->identity == NULL)
        return cli_fail(err, PUNCH_EXIT_USAGE,
                        "keygen: missing --identity NAME (who the secret is for)");
    size_t n = strlen(args->identity);
    bool ok = n >= 1 && n <= KEYGEN_IDENTITY_MAX;
    for (size_t i = 0; ok && i < n; i++) {
        char ch = args->identity[i];
        ok = (ch >= 'a' && ch <= 'z') || (ch >= 'A' && ch <= 'Z') || (ch >= '0' && ch <= '9') ||
             strchr("._-@+", ch) != NULL;
    }
    if (!ok)
        return cli_fail(err, PUNCH_EXIT_USAGE,
                        "keygen: identity \"%s\": use 1-%d letters, digits or . _ - @ +",
                        args->identity, KEYGEN_IDENTITY_MAX);
    return 0;
}

int cmd_keygen(const cli_ctx *ctx, int argc, char **argv, cli_error *err)
{
    (void)ctx;
    keygen_args args;
    if (keygen_parse_args(argc, argv, &args, err) != 0)
        return err->code;
    unsigned char raw[KEYGEN_SECRET_BYTES];
    char why[256];
    if (!crypto_random(raw, sizeof raw, why, sizeof why))
        return cli_fail(err, PUNCH_EXIT_LOCAL, "keygen: %s", why);
    char secret[2 * KEYGEN_SECRET_BYTES + 1];
    for (size_t i = 0; i < sizeof raw; i++)
        snprintf(secret + 2 * i, 3, "%02x", raw[i]);
    uint8_t digest[SHA256_DIGEST_LEN];
    char hex[2 * SHA256_DIGEST_LEN + 1];
    if (!sha256(secret, strlen(secret), digest)) {
        explicit_bzero(secret, sizeof secret);
        explicit_bzero(raw, sizeof raw);
        return cli_fail(err, PUNCH_EXIT_LOCAL, "keygen: SHA-256 is unavailable");
    }
    sha256_hex(digest, hex);

    json_t *entry = json_pack("{s:s, s:s}", "secret_sha256", hex, "identity", args.identity);
    if (entry != NULL && args.admin && json_object_set_new(entry, "role", json_string("admin")))
        json_decref(entry), entry = NULL;
    char *line = entry ? json_dumps(entry, JSON_PRESERVE_ORDER) : NULL;
    json_decref(entry);
    if (line == NULL) {
        explicit_bzero(secret, sizeof secret);
        return cli_fail(err, PUNCH_EXIT_LOCAL, "out of memory");
    }
    fprintf(stderr, "# secret for %s: give it to %s only (PUNCH_SECRET, or `secret = ...` in "
                    "~/.config/punch/config); it is stored nowhere:\n",
            args.identity, args.identity);
    fflush(stderr);
    printf("%s\n", secret);
    fflush(stdout);
    fprintf(stderr, "# entry for punchcardd's secrets file (add it to the JSON array, then "
                    "kill -HUP the daemon):\n");
    fflush(stderr);
    printf("%s\n", line);
    explicit_bzero(secret, sizeof secret);
    explicit_bzero(raw, sizeof raw);
    free(line);
    return PUNCH_EXIT_OK;
}
