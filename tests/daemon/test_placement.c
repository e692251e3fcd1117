/* test_placement.c — the packing policy (placement.h): a job that fits one
 * host stays whole on the first such host, a wider one fills hosts in
 * order, a down host takes nothing, the asynchronous trainer's parameter
 * server is rank 0 on the first host and holds no GPU, a worker's GPUs are
 * on its own host, taking subtracts exactly what was placed, and the
 * allocation's JSON and hostfile texts (and reading JSON back against a
 * changed host list). */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "sched/placement.h"

static const char *const names[] = {"h1", "h2", "h3"};

static void assert_part(const placement *a, int i, int host, int ranks)
{
    assert_true(i < a->n);
    assert_int_equal(a->part[i].host, host);
    assert_int_equal(a->part[i].ranks, ranks);
}

static void test_whole_host_first(void **state)
{
    (void)state;
    placement_cluster c = {.n_hosts = 3, .slots = {1, 4, 4}};
    placement a;
    /* h1 cannot hold 3 ranks; h2 can: all on h2, none split. */
    assert_true(placement_pack(&c, (placement_need){3, 3, 0}, &a));
    assert_int_equal(a.n, 1);
    assert_part(&a, 0, 1, 3);
    placement_take(&c, (placement_need){3, 3, 0}, &a);
    assert_int_equal(c.slots[1], 1);
    /* 6 ranks fit no host: h1 1, h2 1, h3 4, in host order. */
    assert_true(placement_pack(&c, (placement_need){6, 6, 0}, &a));
    assert_int_equal(a.n, 3);
    assert_part(&a, 0, 0, 1);
    assert_part(&a, 1, 1, 1);
    assert_part(&a, 2, 2, 4);
    /* 7 do not fit at all. */
    assert_false(placement_pack(&c, (placement_need){7, 7, 0}, &a));
    assert_int_equal(a.n, 0);
    assert_false(placement_pack(&c, (placement_need){0, 0, 0}, &a));
}

static void test_down_host(void **state)
{
    (void)state;
    placement_cluster c = {.n_hosts = 3, .slots = {2, 2, 2}, .down = {true, false, false}};
    placement a;
    assert_true(placement_pack(&c, (placement_need){3, 3, 0}, &a));
    assert_int_equal(a.n, 2);
    assert_part(&a, 0, 1, 2);
    assert_part(&a, 1, 2, 1);
    assert_false(placement_pack(&c, (placement_need){5, 5, 0}, &a));
}

/* Asynchronous: ranks = workers + 1; rank 0 (the server) needs no GPU. */
static void test_async_server_and_gpus(void **state)
{
    (void)state;
    placement_need need = {3, 2, 2}; /* server + 2 workers of 1 GPU */
    placement_cluster c = {.n_hosts = 2, .slots = {2, 2}, .gpus = {1, 1}};
    placement a;
    /* No host holds server + 2 GPU workers; h1 takes the server and one
     * worker (its 1 GPU), h2 the other worker. */
    assert_true(placement_pack(&c, need, &a));
    assert_int_equal(a.n, 2);
    assert_part(&a, 0, 0, 2);
    assert_part(&a, 1, 1, 1);
    assert_int_equal(placement_part_gpus(need, &a, 0), 1);
    assert_int_equal(placement_part_gpus(need, &a, 1), 1);
    placement_take(&c, need, &a);
    assert_int_equal(c.slots[0], 0);
    assert_int_equal(c.gpus[0], 0);
    assert_int_equal(c.slots[1], 1);
    assert_int_equal(c.gpus[1], 0);
    /* Synchronous, 2 workers x 2 GPUs, hosts of 3 GPUs: one worker each. */
    placement_cluster g = {.n_hosts = 2, .slots = {4, 4}, .gpus = {3, 3}};
    assert_true(placement_pack(&g, (placement_need){2, 2, 4}, &a));
    assert_int_equal(a.n, 2);
    assert_part(&a, 0, 0, 1);
    assert_part(&a, 1, 1, 1);
    /* Three such workers cannot be held, although 6 GPUs exist. */
    assert_false(placement_pack(&g, (placement_need){3, 3, 6}, &a));
    /* A GPU count that is not a multiple of the workers is spread so the
     * parts add up to it exactly. */
    assert_true(placement_pack(&(placement_cluster){.n_hosts = 1, .slots = {4}, .gpus = {3}},
                               (placement_need){2, 2, 3}, &a));
    assert_int_equal(placement_part_gpus((placement_need){2, 2, 3}, &a, 0), 3);
}

static void test_need_of(void **state)
{
    (void)state;
    store_job j = {.ranks = 3, .workers = 2, .gpus = 4};
    placement_need n = placement_need_of(&j);
    assert_int_equal(n.ranks, 3);
    assert_int_equal(n.workers, 2);
    assert_int_equal(n.gpus, 4);
    j.workers = 0; /* a row without workers: every rank is one */
    assert_int_equal(placement_need_of(&j).workers, 3);
}

static void test_texts(void **state)
{
    (void)state;
    placement a = {2, {{1, 2}, {2, 1}}};
    char *json = placement_to_json(&a, names);
    assert_non_null(json);
    assert_string_equal(json, "[{\"host\":\"h2\",\"ranks\":2},{\"host\":\"h3\",\"ranks\":1}]");
    placement back;
    assert_true(placement_from_json(json, names, 3, &back));
    assert_int_equal(back.n, 2);
    assert_part(&back, 0, 1, 2);
    assert_part(&back, 1, 2, 1);
    /* Against a hostfile without h2 (restart with fewer hosts): h3 only. */
    const char *const fewer[] = {"h1", "h3"};
    assert_true(placement_from_json(json, fewer, 2, &back));
    assert_int_equal(back.n, 1);
    assert_part(&back, 0, 1, 1);
    free(json);
    assert_false(placement_from_json("{}", names, 3, &back));
    assert_false(placement_from_json("[{\"host\":\"h1\",\"ranks\":0}]", names, 3, &back));
    assert_false(placement_from_json("not json", names, 3, &back));
    char text[64];
    assert_true(placement_hostfile(&a, names, text, sizeof text));
    assert_string_equal(text, "h2 slots=2\nh3 slots=1\n");
    assert_false(placement_hostfile(&a, names, text, 12));
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_whole_host_first),
        cmocka_unit_test(test_down_host),
        cmocka_unit_test(test_async_server_and_gpus),
        cmocka_unit_test(test_need_of),
        cmocka_unit_test(test_texts),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
