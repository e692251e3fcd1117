/* test_hostfail.c — finding the lost host in train.log (hostfail.h), on
 * Open MPI 4.1.4's own output captured on this kind of machine (mpirun with
 * an rsh agent that cannot reach one host; an orted killed mid-job) and its
 * "node-died" banner as help-errmgr-base.txt prints it: the named node is
 * trusted, an agent's line must name one of the job's hosts, the banners'
 * own text never counts (the captured "target node: h2" names a good host),
 * engine lines that mention a host do not count, and a log without a
 * daemon failure blames nothing. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include <cmocka.h>

#include "cluster/hostfail.h"

static const char *const job_hosts[] = {"h2", "h3"};

/* Open MPI's banner when its daemons (orted) do not start or die: the part
 * that names no host, common to the outputs below. */
#define ORTE_START_FAILED \
    "--------------------------------------------------------------------------\n" \
    "ORTE was unable to reliably start one or more daemons.\n" \
    "This usually is caused by:\n" \
    "\n" \
    "* not finding the required libraries and/or binaries on\n" \
    "  one or more nodes. Please check your PATH and LD_LIBRARY_PATH\n" \
    "  settings, or configure OMPI with --enable-orterun-prefix-by-default\n" \
    "\n" \
    "* lack of authority to execute on one or more specified nodes.\n" \
    "  Please verify your allocation and authorities.\n" \
    "\n" \
    "* the inability to write startup files into /tmp (--tmpdir/orte_tmpdir_base).\n" \
    "  Please check with your sys admin to determine the correct location to use.\n" \
    "\n" \
    "*  compilation of the orted with dynamic libraries when static are required\n" \
    "  (e.g., on Cray). Please check your configure cmd line and consider using\n" \
    "  one of the contrib/platform definitions for your system type.\n" \
    "\n" \
    "* an inability to create a connection back to mpirun due to a\n" \
    "  lack of common network interfaces and/or no route found between\n" \
    "  them. Please check network connectivity (including firewalls\n" \
    "  and network routing requirements).\n" \
    "--------------------------------------------------------------------------\n"

/* mpirun --hostfile (h2, h3) with an agent failing for h3: the agent's line,
 * then Open MPI's banners. */
static const char start_failure[] =
    "agent: cannot reach h3\n"
    ORTE_START_FAILED
    "--------------------------------------------------------------------------\n"
    "ORTE does not know how to route a message to the specified daemon\n"
    "located on the indicated node:\n"
    "\n"
    "  my node:   daemonhost\n"
    "  target node:  h2\n"
    "\n"
    "This is usually an internal programming error that should be\n"
    "reported to the developers. In the meantime, a workaround may\n"
    "be to set the MCA param routed=direct on the command line or\n"
    "in your environment. We apologize for the problem.\n"
    "--------------------------------------------------------------------------\n"
    "------------------------------------------------------------\n"
    "A process or daemon was unable to complete a TCP connection\n"
    "to another process:\n"
    "  Local host:    vm\n"
    "  Remote host:   vm\n"
    "This is usually caused by a firewall on the remote host. Please\n"
    "check that any firewall (e.g., iptables) has been disabled and\n"
    "try again.\n"
    "------------------------------------------------------------\n";

/* An orted killed mid-job (its agent exits): no host named anywhere. */
static const char killed_orted[] =
    ORTE_START_FAILED;

static const char node_died[] =
    "punch-train: rank 0 on h1: epoch 1 step 3\n"
    "--------------------------------------------------------------------------\n"
    "ORTE has lost communication with a remote daemon.\n"
    "\n"
    "  HNP daemon   : [[36533,0],0] on node daemonhost\n"
    "  Remote daemon: [[36533,0],2] on node h3\n"
    "\n"
    "This is usually due to either a failure of the TCP network\n"
    "connection to the node, or possibly an internal failure of\n"
    "the daemon itself. We cannot recover from this failure, and\n"
    "therefore will terminate the job.\n"
    "--------------------------------------------------------------------------\n";

static void test_agent_line_names_host(void **state)
{
    (void)state;
    char host[64];
    const char *what = hostfail_find(start_failure, job_hosts, 2, host, sizeof host);
    assert_non_null(what);
    assert_string_equal(what, "Open MPI could not start or keep its daemon");
    assert_string_equal(host, "h3");
    /* The same log for a job that does not run on h3: nothing to blame. */
    const char *const other[] = {"h2"};
    assert_non_null(hostfail_find(start_failure, other, 1, host, sizeof host));
    assert_string_equal(host, "");
}

/* A line of ssh or the rsh agent before the killed orted's banner, and the
 * host it blames ("" for none). */
static const struct {
    const char *line, *host;
} ssh_lines[] = {
    {"ssh: connect to host h3 port 22: No route to host\n", "h3"},
    {"ssh: Could not resolve hostname h2: Name or service not known\n", "h2"},
    /* The test cluster's rsh agent (tests/cluster/run.sh), as ssh would. */
    {"rsh-agent: h3: no route to host\n", "h3"},
    {"rsh-agent: lost host h2: connection closed by remote host\n", "h2"},
    /* Real ssh when the host goes away under a running orted. */
    {"Connection to h2 closed by remote host.\n", "h2"},
    /* A host name inside a longer word is not that host. */
    {"ssh: connect to host h33 port 22: refused\n", ""},
};

static void test_ssh_lines(void **state)
{
    (void)state;
    for (size_t i = 0; i < sizeof ssh_lines / sizeof ssh_lines[0]; i++) {
        char host[64], log[4096];
        snprintf(log, sizeof log, "%s%s", ssh_lines[i].line, killed_orted);
        assert_non_null(hostfail_find(log, job_hosts, 2, host, sizeof host));
        assert_string_equal(host, ssh_lines[i].host);
    }
}

static void test_killed_orted_names_nothing(void **state)
{
    (void)state;
    char host[64] = "x";
    assert_non_null(hostfail_find(killed_orted, job_hosts, 2, host, sizeof host));
    assert_string_equal(host, "");
}

static void test_node_died(void **state)
{
    (void)state;
    char host[64];
    const char *what = hostfail_find(node_died, job_hosts, 2, host, sizeof host);
    assert_non_null(what);
    assert_string_equal(what, "Open MPI lost communication with its daemon");
    assert_string_equal(host, "h3");
    /* Too small a buffer for the name: none rather than a cut one. */
    assert_non_null(hostfail_find(node_died, job_hosts, 2, host, 2));
    assert_string_equal(host, "");
}

static void test_no_daemon_failure(void **state)
{
    (void)state;
    char host[64] = "x";
    assert_null(hostfail_find("punch-train: no such dataset\n"
                              "ssh: connect to host h3 port 22: refused\n"
                              "mpirun detected that one or more processes exited\n",
                              job_hosts, 2, host, sizeof host));
    assert_string_equal(host, "");
    assert_null(hostfail_find("", job_hosts, 2, host, sizeof host));
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_agent_line_names_host),
        cmocka_unit_test(test_ssh_lines),
        cmocka_unit_test(test_killed_orted_names_nothing),
        cmocka_unit_test(test_node_died),
        cmocka_unit_test(test_no_daemon_failure),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
