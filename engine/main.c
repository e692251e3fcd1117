/* main.c — punch-train's command line (foundation: --validate only; the
 * training engine replaces this as it lands). */
#include <stdio.h>
#include <string.h>

#include "spec.h"

int main(int argc, char **argv)
{
    if (argc != 3 || strcmp(argv[1], "--validate") != 0) {
        fprintf(stderr, "usage: punch-train --validate JOB.json\n");
        return 2;
    }
    spec_error err;
    job_spec *spec = spec_load_file(argv[2], &err);
    if (!spec) {
        char msg[600];
        fprintf(stderr, "punch-train: %s: %s\n", argv[2], spec_error_str(&err, msg, sizeof msg));
        return 2;
    }
    spec_print_summary(spec, stdout);
    spec_free(spec);
    return 0;
}
