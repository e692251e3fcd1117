/* dist_run.c — a minimal launcher for the distributed trainers, so the
 * tests drive engine/dist directly: dist_run JOB.json --out DIR
 * [--datasets DIR] [--threads N] [--resume]. punch-train's own command
 * line does the same through its trainer dispatch. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "dist/dist.h"
#include "spec.h"

int main(int argc, char **argv)
{
    const char *job = NULL, *root = "/usr/share/datasets";
    dist_options opt = {0};
    for (int i = 1; i < argc; i++) {
        if (strcmp(argv[i], "--out") == 0 && i + 1 < argc)
            opt.out_dir = argv[++i];
        else if (strcmp(argv[i], "--datasets") == 0 && i + 1 < argc)
            root = argv[++i];
        else if (strcmp(argv[i], "--threads") == 0 && i + 1 < argc)
            opt.threads = atoi(argv[++i]);
        else if (strcmp(argv[i], "--resume") == 0)
            opt.resume = true;
        else
            job = argv[i];
    }
    if (!job || !opt.out_dir) {
        fprintf(stderr, "usage: dist_run JOB.json --out DIR [--datasets DIR] [--threads N] "
                        "[--resume]\n");
        return 2;
    }
    spec_error err;
    job_spec *spec = spec_load_file(job, &err);
    if (!spec) {
        char msg[600];
        fprintf(stderr, "dist_run: %s: %s\n", job, spec_error_str(&err, msg, sizeof msg));
        return 2;
    }
    const char *dirs[] = {root};
    opt.roots = (dataset_roots){dirs, 1};
    int rc = dist_handles(spec) ? dist_train(spec, &opt) : 2;
    spec_free(spec);
    return rc;
}
