/* replay.c — the main() a fuzz target is linked with outside libFuzzer:
 * runs LLVMFuzzerTestOneInput once on every file named, or on every file
 * of every directory named (the seed corpus and its crash regressions), so
 * gcc and the ASan build check the corpus on every test run. Fails when a
 * directory holds no file, so a corpus cannot go missing unnoticed; a
 * finding shows as the crash or the sanitizer's report it causes. */
#include <dirent.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "fuzz.h"
#include "io/io_file.h"

/* Corpus files are small; a bigger one is a mistake, not an input. */
#define REPLAY_MAX_FILE (16L << 20)

static int replay_file(const char *path)
{
    unsigned char *data;
    size_t len;
    char err[512];
    if (io_read_file(path, REPLAY_MAX_FILE, &data, &len, err, sizeof err) != 0) {
        fprintf(stderr, "replay: %s\n", err);
        return -1;
    }
    LLVMFuzzerTestOneInput(data, len);
    free(data);
    return 0;
}

/* Every regular file of dir, in name order (runs are reproducible). */
static int replay_dir(const char *dir, long *count)
{
    struct dirent **names;
    int n = scandir(dir, &names, NULL, alphasort);
    if (n < 0) {
        perror(dir);
        return -1;
    }
    int rc = 0;
    long before = *count;
    for (int i = 0; i < n; i++) {
        char path[4096];
        struct stat st;
        if (rc == 0 && names[i]->d_name[0] != '.' &&
            snprintf(path, sizeof path, "%s/%s", dir, names[i]->d_name) < (int)sizeof path &&
            stat(path, &st) == 0 && S_ISREG(st.st_mode)) {
            rc = replay_file(path);
            (*count)++;
        }
        free(names[i]);
    }
    free(names);
    if (rc == 0 && *count == before) {
        fprintf(stderr, "replay: %s: no inputs\n", dir);
        return -1;
    }
    return rc;
}

int main(int argc, char **argv)
{
    if (argc < 2) {
        fprintf(stderr, "usage: %s DIR|FILE...\n", argv[0]);
        return 2;
    }
    long count = 0;
    for (int i = 1; i < argc; i++) {
        struct stat st;
        if (stat(argv[i], &st) != 0) {
            perror(argv[i]);
            return 1;
        }
        int rc = S_ISDIR(st.st_mode) ? replay_dir(argv[i], &count) : replay_file(argv[i]);
        if (S_ISREG(st.st_mode))
            count++;
        if (rc != 0)
            return 1;
    }
    printf("replay: %ld inputs, no crash\n", count);
    return 0;
}
