/* test_config.c — settings: defaults, config file, flags overriding it,
 * both flag spellings, booleans, range and syntax errors, and the shipped
 * etc/punchcardd.conf (parses, shows the defaults), the installed config
 * an installed binary reads by default. The hostfile is read by
 * cluster.c (test_cluster.c). */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <cmocka.h>

#include "config.h"

static char conf_path[64];

static void write_conf(const char *text)
{
    snprintf(conf_path, sizeof conf_path, "/tmp/punch-conf-XXXXXX");
    int fd = mkstemp(conf_path);
    assert_true(fd >= 0);
    assert_int_equal(write(fd, text, strlen(text)), (ssize_t)strlen(text));
    close(fd);
}

static config_result parse(config *c, char *err, int argc, ...)
{
    char *argv[32] = {"punchcardd"};
    va_list ap;
    va_start(ap, argc);
    for (int i = 1; i < argc; i++)
        argv[i] = va_arg(ap, char *);
    va_end(ap);
    return config_parse(c, argc, argv, NULL, err, 512);
}

static void test_defaults(void **state)
{
    (void)state;
    config c;
    char err[512];
    assert_int_equal(parse(&c, err, 1), CONFIG_OK);
    assert_string_equal(c.listen, "127.0.0.1:8080");
    assert_int_equal(c.max_running, 1);
    assert_int_equal(c.max_body, 1L << 20);
    assert_int_equal(c.slots, 0);
    assert_int_equal(c.per_ip_limit, 128);
    assert_int_equal(c.header_timeout, 30);
    assert_int_equal(c.body_timeout, 60);
    assert_int_equal(c.gpus, 0);
    assert_false(c.hold);
    assert_string_equal(c.mpirun_args, "");
    assert_string_equal(c.host_probe, "");
    assert_int_equal(c.host_probe_interval_s, 30);
}

static void test_file_then_flags(void **state)
{
    (void)state;
    write_conf("# comment\n"
               "listen = 0.0.0.0:9000\n"
               "data_dir=/srv/punch   # trailing comment\n"
               "max-queued = 7\n"
               "slots 3\n"
               "hold = yes\n"
               "gpus = 2\n"
               "hostfile =\n"
               "mpirun_args = --mca btl self,tcp --mca btl_tcp_if_include 10.0.0.0/24\n"
               "host-probe = ssh %h true\n"
               "host_probe_interval_s = 5\n");
    config c;
    char err[512];
    assert_int_equal(parse(&c, err, 5, "--slots", "8", "--config", conf_path), CONFIG_OK);
    assert_string_equal(c.listen, "0.0.0.0:9000");
    assert_string_equal(c.data_dir, "/srv/punch");
    assert_int_equal(c.max_queued, 7);
    assert_int_equal(c.slots, 8); /* the flag wins, wherever --config is */
    assert_true(c.hold);
    assert_int_equal(c.gpus, 2);
    assert_string_equal(c.hostfile, "");
    assert_string_equal(c.mpirun_args, "--mca btl self,tcp --mca btl_tcp_if_include 10.0.0.0/24");
    assert_string_equal(c.host_probe, "ssh %h true");
    assert_int_equal(c.host_probe_interval_s, 5);
    assert_int_equal(parse(&c, err, 4, "--config=x", "--max-body=2048", "--hold=false"),
                     CONFIG_ERROR); /* x does not exist */
    assert_non_null(strstr(err, "x"));
    assert_int_equal(parse(&c, err, 3, "--max_body=2048", "--verbose"), CONFIG_OK);
    assert_int_equal(c.max_body, 2048);
    assert_true(c.verbose);
    unlink(conf_path);
}

static void test_errors(void **state)
{
    (void)state;
    config c;
    char err[512];
    assert_int_equal(parse(&c, err, 2, "--nope"), CONFIG_ERROR);
    assert_non_null(strstr(err, "--nope"));
    assert_int_equal(parse(&c, err, 3, "--slots", "-1"), CONFIG_ERROR);
    assert_non_null(strstr(err, "slots"));
    assert_int_equal(parse(&c, err, 3, "--slots", "4x"), CONFIG_ERROR);
    assert_int_equal(parse(&c, err, 2, "--slots"), CONFIG_ERROR);
    assert_non_null(strstr(err, "needs a value"));
    assert_int_equal(parse(&c, err, 2, "stray"), CONFIG_ERROR);
    assert_int_equal(parse(&c, err, 3, "--hold=maybe", "x"), CONFIG_ERROR);
    assert_int_equal(parse(&c, err, 2, "--max-body=12"), CONFIG_ERROR); /* below 1024 */
    assert_int_equal(parse(&c, err, 3, "--gpus", "-1"), CONFIG_ERROR);
    assert_non_null(strstr(err, "gpus"));
    assert_int_equal(parse(&c, err, 3, "--host-probe-interval-s", "0"), CONFIG_ERROR);
    assert_non_null(strstr(err, "host_probe_interval_s"));
    assert_int_equal(parse(&c, err, 2, "--gpus=65"), CONFIG_ERROR); /* more than a host's set */
    assert_int_equal(parse(&c, err, 2, "--gpus=8"), CONFIG_OK);
    assert_int_equal(c.gpus, 8);
    assert_false(config_slurm(&c));
    assert_int_equal(parse(&c, err, 3, "--scheduler", "pbs"), CONFIG_ERROR);
    assert_non_null(strstr(err, "expected local or slurm"));
    assert_int_equal(parse(&c, err, 4, "--scheduler=slurm", "--slurm-args", "--requeue -C ib"),
                     CONFIG_OK);
    assert_true(config_slurm(&c));
    assert_string_equal(c.slurm_args, "--requeue -C ib");
    assert_int_equal(parse(&c, err, 3, "--metrics-auth", "users"), CONFIG_ERROR);
    assert_non_null(strstr(err, "expected public or admin"));
    assert_int_equal(parse(&c, err, 1), CONFIG_OK);
    assert_false(config_metrics_admin(&c));
    assert_int_equal(parse(&c, err, 2, "--metrics-auth=admin"), CONFIG_OK);
    assert_true(config_metrics_admin(&c));
    write_conf("listen = 1.2.3.4:5\nbogus = 1\n");
    assert_int_equal(parse(&c, err, 3, "--config", conf_path), CONFIG_ERROR);
    assert_non_null(strstr(err, ":2"));
    assert_non_null(strstr(err, "bogus"));
    unlink(conf_path);
}

/* etc/punchcardd.conf says "every key below shows its default": parsed, it
 * must give exactly the built-in defaults (config_defaults zeroes the struct
 * first, so whole-struct comparison is exact). */
static void test_shipped_conf(void **state)
{
    (void)state;
    const char *root = getenv("PUNCH_SOURCE_ROOT");
    if (!root)
        skip();
    char path[1024];
    snprintf(path, sizeof path, "%s/etc/punchcardd.conf", root);
    config shipped, defaults;
    char err[512];
    assert_int_equal(parse(&shipped, err, 3, "--config", path), CONFIG_OK);
    config_defaults(&defaults);
    assert_memory_equal(&shipped, &defaults, sizeof shipped);
    /* A changed value shows up, so the comparison can fail. */
    assert_int_equal(parse(&shipped, err, 5, "--config", path, "--gpus", "2"), CONFIG_OK);
    assert_memory_not_equal(&shipped, &defaults, sizeof shipped);
}

/* Only a binary in the install's bindir reads the installed config, and
 * only when that file exists. */
static void test_installed_file(void **state)
{
    (void)state;
    write_conf("verbose = true\n");
    assert_string_equal(config_installed_file("/usr/bin/punchcardd", "/usr/bin", conf_path),
                        conf_path);
    assert_null(config_installed_file("/work/build/daemon/punchcardd", "/usr/bin", conf_path));
    assert_null(config_installed_file("/usr/bin2/punchcardd", "/usr/bin", conf_path));
    assert_null(config_installed_file("/usr/local/bin/punchcardd", "/usr/bin", conf_path));
    assert_null(config_installed_file(NULL, "/usr/bin", conf_path));
    unlink(conf_path);
    assert_null(config_installed_file("/usr/bin/punchcardd", "/usr/bin", conf_path));
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_defaults),
        cmocka_unit_test(test_file_then_flags),
        cmocka_unit_test(test_errors),
        cmocka_unit_test(test_shipped_conf),
        cmocka_unit_test(test_installed_file),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
