/* test_log.c — under systemd (JOURNAL_STREAM names stderr's device and
 * inode) every log record starts with its syslog priority, so the journal
 * files it at the right level; the check runs once per process, so this
 * program sets the variable before the first record. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cmocka.h>

#include "log.h"

static void test_journal_priorities(void **state)
{
    (void)state;
    char path[] = "/tmp/punch-log-XXXXXX";
    int fd = mkstemp(path);
    assert_true(fd >= 0);
    int saved = dup(STDERR_FILENO);
    assert_true(saved >= 0);
    assert_int_equal(dup2(fd, STDERR_FILENO), STDERR_FILENO);
    struct stat st;
    assert_int_equal(fstat(fd, &st), 0);
    char js[64];
    snprintf(js, sizeof js, "%llu:%llu", (unsigned long long)st.st_dev,
             (unsigned long long)st.st_ino);
    setenv("JOURNAL_STREAM", js, 1);
    log_set_level(LOG_DEBUG);
    log_error("disk %s", "full");
    log_warn("slow");
    log_info("hello\nworld");
    log_debug("detail");
    dup2(saved, STDERR_FILENO);
    close(saved);
    char buf[512] = {0};
    assert_true(pread(fd, buf, sizeof buf - 1, 0) > 0);
    close(fd);
    unlink(path);
    assert_string_equal(buf, "<3>error disk full\n<4>warn  slow\n<6>info  hello world\n"
                             "<7>debug detail\n");
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_journal_priorities),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
