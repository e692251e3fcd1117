/* test_listcost.c — what a job list costs the store, as deterministic
 * guards rather than timings: the number of SQL statements one
 * GET /api/v1/jobs runs (SQLite's trace hook, store_statements()) is the
 * same for a page of 5 as for a page of 200, and for a store of 20 jobs as
 * for one of 400, so a per-job query (the O(n²) listing of issue 20) cannot
 * come back unnoticed; and every query a list, a job's view or the
 * scheduler's queue scan runs is answered from an index (SQLite's
 * EXPLAIN QUERY PLAN shows no full SCAN of jobs, and no sort). A page asked
 * again with nothing written comes from the page cache, without a
 * statement, unless a job on it runs. A submit costs the same statements
 * and about the same SQLite steps with one user's queue of 300 as of 3,300
 * (issue 31 #10: the max_queued count and the disk quota read the whole
 * queue). A sweep of 1,000 trials is one request that stores fewer
 * statements than 1,000 jobs do, puts only its max_concurrent trials in the
 * queue the scheduler scans, and is read (and advanced) with as many
 * statements as a sweep of 4. A page's key hyperparameters (kept at
 * submit) cost no statement and no spec parse. The API runs in this process, as in
 * test_api.c, and libcurl calls it. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include <cmocka.h>
#include <curl/curl.h>
#include <sqlite3.h>

#include "daemon.h"
#include "api/api.h"
#include "http/http.h"
#include "api_server.h"
#include "api/pagecache.h"
#include "jobspec/spec.h"
#include "scratch.h"

static const char *const secrets_json =
    "[{\"secret\": \"alice-secret\", \"identity\": \"alice\"},"
    " {\"secret\": \"root-secret\", \"identity\": \"root\", \"role\": \"admin\"}]";

typedef api_server fixture;

/* The jobs grow() has stored in this test's store (setup starts it at 0). */
static int n_jobs;

typedef struct body {
    char *text;
    size_t len;
} body;

/* Keep the body when asked (arg not NULL). */
static size_t body_sink(char *p, size_t size, size_t n, void *arg)
{
    body *b = arg;
    if (!b)
        return size * n;
    char *grown = realloc(b->text, b->len + size * n + 1);
    if (!grown)
        return 0;
    memcpy(grown + b->len, p, size * n);
    b->text = grown;
    b->len += size * n;
    b->text[b->len] = '\0';
    return size * n;
}

/* GET path, or POST json when it is not NULL, as secret's user: the status,
 * and the body into *out when out is not NULL (the caller frees out->text). */
static long request(fixture *f, const char *path, const char *secret, const char *json,
                    body *out)
{
    char url[512], bearer[128];
    snprintf(url, sizeof url, "http://127.0.0.1:%d%s", f->port, path);
    snprintf(bearer, sizeof bearer, "Authorization: Bearer %s", secret);
    struct curl_slist *headers = curl_slist_append(NULL, bearer);
    if (json)
        headers = curl_slist_append(headers, "Content-Type: application/json");
    assert_non_null(headers);
    curl_easy_reset(f->curl);
    curl_easy_setopt(f->curl, CURLOPT_URL, url);
    curl_easy_setopt(f->curl, CURLOPT_HTTPHEADER, headers);
    if (json)
        curl_easy_setopt(f->curl, CURLOPT_POSTFIELDS, json);
    curl_easy_setopt(f->curl, CURLOPT_WRITEFUNCTION, body_sink);
    curl_easy_setopt(f->curl, CURLOPT_WRITEDATA, out);
    curl_easy_setopt(f->curl, CURLOPT_TIMEOUT, json ? 60L : 30L);
    assert_int_equal(curl_easy_perform(f->curl), CURLE_OK);
    curl_slist_free_all(headers);
    long status = 0;
    curl_easy_getinfo(f->curl, CURLINFO_RESPONSE_CODE, &status);
    return status;
}

static long get(fixture *f, const char *path, const char *secret)
{
    return request(f, path, secret, NULL, NULL);
}

/* Statements the store ran for one GET (nothing else uses it meanwhile:
 * no monitor runs in this test). */
static uint64_t statements_of(fixture *f, const char *path, const char *secret)
{
    uint64_t before = store_statements(f->d.st);
    assert_int_equal(get(f, path, secret), 200);
    return store_statements(f->d.st) - before;
}

/* Add jobs until the store holds n: of every 10, 2 finish, 1 runs, the
 * rest stay queued; alice owns half, bob and carol the rest. */
static void grow(fixture *f, int n, char last_id[STORE_ID_LEN + 1])
{
    static const char *const owners[] = {"alice", "bob", "alice", "carol"};
    for (; n_jobs < n; n_jobs++) {
        store_new_job nj = {.owner = owners[n_jobs % 4], .name = "j", .trainer = "single",
                            .spec = "{}", .ranks = 1, .workers = 1, .threads = 1};
        assert_int_equal(store_job_submit(f->d.st, &nj, 0, 0, last_id), STORE_OK);
        int kind = n_jobs % 10;
        if (kind < 3)
            assert_int_equal(store_job_mark_starting(f->d.st, last_id, NULL, NULL, 1), STORE_OK);
        if (kind < 2)
            assert_int_equal(store_job_finish(f->d.st, last_id, JOB_SUCCEEDED, NULL, NULL, NULL,
                                              NULL, 2),
                             STORE_OK);
    }
}

static int setup(void **state)
{
    n_jobs = 0;
    return api_server_setup(state, "listcost", secrets_json);
}

static int teardown(void **state)
{
    return api_server_teardown(state);
}

/* The lists whose cost is compared, each with the page size as %d. */
static const struct {
    const char *path, *secret;
} lists[] = {
    {"/api/v1/jobs?limit=%d", "alice-secret"},
    {"/api/v1/jobs?limit=%d&state=queued", "alice-secret"},
    {"/api/v1/jobs?limit=%d", "root-secret"},
    {"/api/v1/jobs?limit=%d&state=queued", "root-secret"},
    {"/api/v1/jobs?limit=%d&user=bob&since=0", "root-secret"},
    /* Server-side filters: several states merge index ranges; a name
     * pattern is checked on the rows a range reads. */
    {"/api/v1/jobs?limit=%d&state=queued,cancelled", "alice-secret"},
    {"/api/v1/jobs?limit=%d&state=queued,starting&name=j*", "root-secret"},
    {"/api/v1/jobs?limit=%d&name=j", "alice-secret"},
};
enum { N_LISTS = sizeof lists / sizeof lists[0] };

/* Statements of each list at page size `limit`: after a change to the
 * queue (its places are walked again) into cold[], and again with nothing
 * changed (the places are reused) into warm[]. */
static void measure(fixture *f, int limit, uint64_t cold[N_LISTS], uint64_t warm[N_LISTS])
{
    char path[128], id[STORE_ID_LEN + 1];
    for (int i = 0; i < N_LISTS; i++) {
        store_new_job nj = {.owner = "dave", .name = "j", .trainer = "single", .spec = "{}",
                            .ranks = 1, .workers = 1, .threads = 1};
        assert_int_equal(store_job_submit(f->d.st, &nj, 0, 0, id), STORE_OK);
        assert_int_equal(store_job_cancel_queued(f->d.st, id, 3), STORE_OK);
        snprintf(path, sizeof path, lists[i].path, limit);
        cold[i] = statements_of(f, path, lists[i].secret);
        warm[i] = statements_of(f, path, lists[i].secret);
    }
}

static void test_statements_do_not_grow(void **state)
{
    fixture *f = *state;
    char id[STORE_ID_LEN + 1];
    uint64_t cold_small[N_LISTS], warm_small[N_LISTS], cold[N_LISTS], warm[N_LISTS];
    grow(f, 20, id);
    measure(f, 5, cold_small, warm_small);
    grow(f, 400, id);
    for (int limit = 5; limit <= 200; limit *= 40) {
        measure(f, limit, cold, warm);
        for (int i = 0; i < N_LISTS; i++) {
            if (cold[i] != cold_small[i] || warm[i] != warm_small[i])
                fail_msg("%s, page of %d, 400 jobs: %llu/%llu statements (after a change / "
                         "again), against %llu/%llu for a page of 5 of 20 jobs",
                         lists[i].path, limit, (unsigned long long)cold[i],
                         (unsigned long long)warm[i], (unsigned long long)cold_small[i],
                         (unsigned long long)warm_small[i]);
            assert_true(warm[i] <= cold[i]);
        }
    }
}

/* ---- query plans -------------------------------------------------------- */

typedef struct sql_seen {
    char *text[64];
    int n;
} sql_seen;

/* store_fault_sim's hook used as a recorder: every statement the store
 * prepares to run, once each; it never injects a fault. */
static bool record_sql(void *arg, const char *sql)
{
    sql_seen *seen = arg;
    for (int i = 0; i < seen->n; i++)
        if (strcmp(seen->text[i], sql) == 0)
            return false;
    if (seen->n < 64)
        seen->text[seen->n++] = strdup(sql);
    return false;
}

static bool ignore_job(const store_job *job, void *arg)
{
    (void)job, (void)arg;
    return true;
}

static void test_queries_use_indexes(void **state)
{
    fixture *f = *state;
    char id[STORE_ID_LEN + 1], path[128];
    grow(f, 50, id);
    sql_seen seen = {0};
    store_fault_sim(record_sql, &seen);
    for (int i = 0; i < N_LISTS; i++) {
        snprintf(path, sizeof path, lists[i].path, 10);
        assert_int_equal(get(f, path, lists[i].secret), 200);
    }
    snprintf(path, sizeof path, "/api/v1/jobs/%s", id);
    assert_int_equal(get(f, path, "root-secret"), 200);
    assert_int_equal(get(f, "/api/v1/jobs?limit=10&user=bob&state=queued", "root-secret"), 200);
    assert_int_equal(store_queue_scan(f->d.st, 1000, ignore_job, NULL), STORE_OK);
    assert_int_equal(store_queue_scan_startable(f->d.st, 1000, 1, ignore_job, NULL), STORE_OK);
    store_fault_sim(NULL, NULL);
    assert_true(seen.n >= 8);

    sqlite3 *db;
    assert_int_equal(sqlite3_open_v2(f->db, &db, SQLITE_OPEN_READONLY, NULL), SQLITE_OK);
    for (int i = 0; i < seen.n; i++) {
        char *eqp = sqlite3_mprintf("EXPLAIN QUERY PLAN %s", seen.text[i]);
        sqlite3_stmt *s;
        assert_int_equal(sqlite3_prepare_v2(db, eqp, -1, &s, NULL), SQLITE_OK);
        while (sqlite3_step(s) == SQLITE_ROW) {
            const char *detail = (const char *)sqlite3_column_text(s, 3);
            /* SEARCH reads a range of an index; SCAN of jobs reads all of it. */
            if (strncmp(detail, "SCAN jobs", 9) == 0)
                fail_msg("%s\n  reads every job: %s", seen.text[i], detail);
            /* A sort reads the whole range before the first row comes. */
            if (strstr(detail, "TEMP B-TREE FOR ORDER BY"))
                fail_msg("%s\n  sorts its rows: %s", seen.text[i], detail);
        }
        sqlite3_finalize(s);
        sqlite3_free(eqp);
        free(seen.text[i]);
    }
    sqlite3_close(db);
}

/* ---- the page cache ---------------------------------------------------- */

/* The body and statement count of one GET (200 required). */
static uint64_t fetch(fixture *f, const char *path, body *b)
{
    *b = (body){0};
    uint64_t before = store_statements(f->d.st);
    assert_int_equal(request(f, path, "alice-secret", NULL, b), 200);
    return store_statements(f->d.st) - before;
}

static void test_repeated_pages(void **state)
{
    fixture *f = *state;
    char id[STORE_ID_LEN + 1];
    grow(f, 50, id);
    assert_non_null(f->d.pages = pagecache_new());
    const char *queued = "/api/v1/jobs?limit=10&state=queued";
    body first, again, after;
    /* Asked again with nothing written: the same bytes, no statement. */
    assert_true(fetch(f, queued, &first) > 0);
    assert_int_equal(fetch(f, queued, &again), 0);
    assert_string_equal(first.text, again.text);
    /* Any write: read afresh, and the new job is on the page. */
    store_new_job nj = {.owner = "alice", .name = "j", .trainer = "single", .spec = "{}",
                        .ranks = 1, .workers = 1, .threads = 1};
    assert_int_equal(store_job_submit(f->d.st, &nj, 0, 0, id), STORE_OK);
    assert_true(fetch(f, queued, &after) > 0);
    assert_non_null(strstr(after.text, id));
    assert_null(strstr(first.text, id));
    free(first.text);
    free(again.text);
    free(after.text);
    /* A page with a started job is read every time: its progress lives in
     * its run directory, which no store write announces. */
    assert_int_equal(store_job_mark_starting(f->d.st, id, NULL, NULL, 5), STORE_OK);
    assert_true(fetch(f, "/api/v1/jobs?limit=10", &first) > 0);
    assert_non_null(strstr(first.text, "\"starting\""));
    assert_true(fetch(f, "/api/v1/jobs?limit=10", &again) > 0);
    free(first.text);
    free(again.text);
    pagecache_free(f->d.pages);
    f->d.pages = NULL;
}

/* ---- a sweep of 1,000 trials --------------------------------------------- */

static bool count_job(const store_job *job, void *arg)
{
    (void)job;
    ++*(int *)arg;
    return true;
}

/* POST a grid sweep of n trials (training.seed 0..n-1) as alice: its id,
 * and the statements the request ran into *statements. */
static void post_sweep(fixture *f, int n, char id[STORE_ID_LEN + 1], uint64_t *statements)
{
    size_t cap = 600 + (size_t)n * 8;
    char *json = malloc(cap);
    assert_non_null(json);
    int len = snprintf(json, cap,
                       "{\"name\": \"big\", \"job\": {\"name\": \"t\", \"model\": {\"input\": [8],"
                       " \"layers\": [{\"type\": \"dense\", \"units\": 4, \"activation\":"
                       " \"softmax\"}]}, \"data\": {\"format\": \"synthetic\", \"synthetic_train\":"
                       " 256, \"synthetic_test\": 64, \"num_classes\": 4}, \"training\":"
                       " {\"epochs\": 1, \"batch_size\": 32}}, \"search\": {\"method\": \"grid\","
                       " \"metric\": \"loss\", \"max_concurrent\": 4, \"parameters\":"
                       " {\"training.seed\": {\"values\": [");
    for (int i = 0; i < n; i++)
        len += snprintf(json + len, cap - (size_t)len, "%s%d", i ? "," : "", i);
    snprintf(json + len, cap - (size_t)len, "]}}}}");
    body reply = {0};
    uint64_t before = store_statements(f->d.st);
    long status = request(f, "/api/v1/sweeps", "alice-secret", json, &reply);
    *statements = store_statements(f->d.st) - before;
    if (status != 201)
        fail_msg("POST /api/v1/sweeps: %ld %s", status, reply.text ? reply.text : "");
    json_t *o = json_loads(reply.text, 0, NULL);
    assert_non_null(json_string_value(json_object_get(o, "id")));
    snprintf(id, STORE_ID_LEN + 1, "%s", json_string_value(json_object_get(o, "id")));
    json_decref(o);
    free(reply.text);
    free(json);
}

static void test_sweep_costs_no_more_than_its_jobs(void **state)
{
    fixture *f = *state;
    char big[STORE_ID_LEN + 1], small[STORE_ID_LEN + 1], id[STORE_ID_LEN + 1], path[128];
    uint64_t post_big, post_small;
    post_sweep(f, 1000, big, &post_big);
    /* Only max_concurrent trials of each sweep are jobs in the queue. */
    int queued = 0;
    assert_int_equal(store_queue_scan(f->d.st, 100000, count_job, &queued), STORE_OK);
    assert_int_equal(queued, 4);
    post_sweep(f, 4, small, &post_small);
    queued = 0;
    uint64_t before = store_statements(f->d.st);
    assert_int_equal(store_queue_scan(f->d.st, 100000, count_job, &queued), STORE_OK);
    uint64_t scan_sweeps = store_statements(f->d.st) - before;
    assert_int_equal(queued, 8);
    /* Reading (and so advancing) the big sweep costs what the small one's
     * read does: its trials are one statement, not one each. */
    snprintf(path, sizeof path, "/api/v1/sweeps/%s", big);
    uint64_t read_big = statements_of(f, path, "alice-secret");
    snprintf(path, sizeof path, "/api/v1/sweeps/%s", small);
    uint64_t read_small = statements_of(f, path, "alice-secret");
    if (read_big != read_small)
        fail_msg("GET a sweep of 1000: %llu statements, of 4: %llu",
                 (unsigned long long)read_big, (unsigned long long)read_small);
    /* The same 1,000 as jobs: 1,000 submits (each its own request, each
     * with the statements of this one), and all of them in the queue the
     * scheduler scans, which a scan of 100 already costs more than. */
    before = store_statements(f->d.st);
    store_new_job nj = {.owner = "bob", .name = "j", .trainer = "single", .spec = "{}",
                        .ranks = 1, .workers = 1, .threads = 1};
    assert_int_equal(store_job_submit(f->d.st, &nj, 0, 0, id), STORE_OK);
    uint64_t submit_jobs = 1000 * (store_statements(f->d.st) - before);
    for (int i = 1; i < 100; i++)
        assert_int_equal(store_job_submit(f->d.st, &nj, 0, 0, id), STORE_OK);
    queued = 0;
    before = store_statements(f->d.st);
    assert_int_equal(store_queue_scan(f->d.st, 100000, count_job, &queued), STORE_OK);
    uint64_t scan_jobs = store_statements(f->d.st) - before;
    assert_int_equal(queued, 108);
    if (post_big > submit_jobs || scan_sweeps > scan_jobs)
        fail_msg("a sweep of 1000: %llu statements to submit, a scan %llu; 1000 jobs: %llu "
                 "to submit, a scan of 100 of them %llu", (unsigned long long)post_big,
                 (unsigned long long)scan_sweeps, (unsigned long long)submit_jobs,
                 (unsigned long long)scan_jobs);
    print_message("sweep of 1000: %llu statements (4 trials: %llu); 1000 jobs: %llu\n",
                  (unsigned long long)post_big, (unsigned long long)post_small,
                  (unsigned long long)submit_jobs);
}

/* ---- the submit path ---------------------------------------------------- */

#define SUBMIT_SPEC                                                                         \
    "{\"name\": \"q\", \"model\": {\"input\": [8], \"layers\": [{\"type\": \"dense\", "    \
    "\"units\": 4, \"activation\": \"softmax\"}]}, \"data\": {\"format\": \"synthetic\", "     \
    "\"num_classes\": 4}, \"training\": {\"epochs\": 1}}"

/* n more queued jobs of owner, in one transaction beside the store (the
 * triggers keep the counters as for a submit). */
static void queue_many(fixture *f, const char *owner, int n)
{
    sqlite3 *db;
    assert_int_equal(sqlite3_open_v2(f->db, &db, SQLITE_OPEN_READWRITE, NULL), SQLITE_OK);
    sqlite3_busy_timeout(db, 10000);
    char *sql = sqlite3_mprintf(
        "WITH RECURSIVE k(i) AS (SELECT 1 UNION ALL SELECT i + 1 FROM k WHERE i < %d) "
        "INSERT INTO jobs (id, owner, name, state, ranks, trainer, workers, spec, "
        "submitted_at) SELECT printf('q%%011x', (SELECT count(*) FROM jobs) + i), %Q, 'j', "
        "'queued', 1, 'single', 1, '{}', 1 FROM k",
        n, owner);
    char *msg = NULL;
    if (sqlite3_exec(db, sql, NULL, NULL, &msg) != SQLITE_OK)
        fail_msg("%s", msg);
    sqlite3_free(sql);
    sqlite3_close(db);
}

/* Statements and SQLite steps of one submit of owner's. */
static void submit_cost(fixture *f, const char *owner, uint64_t *statements, uint64_t *steps)
{
    api_submitted out;
    /* One submit first: the second is the steady state (statements
     * prepared, the owner's row there). */
    assert_true(api_submit_job(&f->d, owner, SUBMIT_SPEC, strlen(SUBMIT_SPEC), false, &out));
    uint64_t s0 = store_statements(f->d.st), v0 = store_vm_steps();
    assert_true(api_submit_job(&f->d, owner, SUBMIT_SPEC, strlen(SUBMIT_SPEC), false, &out));
    *statements = store_statements(f->d.st) - s0;
    *steps = store_vm_steps() - v0;
}

static void test_submit_cost_does_not_grow(void **state)
{
    fixture *f = *state;
    char id[STORE_ID_LEN + 1];
    f->d.cfg.max_queued = 100000; /* counted per submit */
    grow(f, 40, id);
    /* Past 256 queued: a new job's place is counted from the back, at most
     * that far (store_queue.c), whatever the queue's length. */
    queue_many(f, "alice", 300);
    uint64_t st_small, steps_small, st_big, steps_big;
    submit_cost(f, "alice", &st_small, &steps_small);
    queue_many(f, "alice", 3000);
    submit_cost(f, "alice", &st_big, &steps_big);
    print_message("submit: %llu statements, %llu steps at 300 queued; %llu, %llu at 3,300\n",
                  (unsigned long long)st_small, (unsigned long long)steps_small,
                  (unsigned long long)st_big, (unsigned long long)steps_big);
    assert_int_equal(st_big, st_small);
    /* A COUNT over the queue, or a walk of its rows, costs thousands. */
    assert_true(steps_big <= steps_small + 200);
}

/* ---- key hyperparameters ------------------------------------------------ */

#define SGD_SPEC                                                                            \
    "{\"name\": \"h\", \"model\": {\"input\": [8], \"layers\": [{\"type\": \"dense\", "    \
    "\"units\": 4, \"activation\": \"softmax\"}]}, \"data\": {\"format\": \"synthetic\", "     \
    "\"num_classes\": 4}, \"training\": {\"epochs\": 3, \"batch_size\": 32, "              \
    "\"optimizer\": {\"name\": \"sgd\", \"learning_rate\": 0.2}}}"

/* n submits of SGD_SPEC through the API; the last one's id into id. */
static void submit_sgd(fixture *f, int n, char id[STORE_ID_LEN + 1])
{
    for (int i = 0; i < n; i++) {
        api_submitted out;
        assert_true(api_submit_job(&f->d, "alice", SGD_SPEC, strlen(SGD_SPEC), false, &out));
        snprintf(id, STORE_ID_LEN + 1, "%s", out.id);
    }
}

/* A list page's jobs carry their key hyperparameters, kept at submit: the
 * page runs as many statements with 22 such jobs as with 2, and parses no
 * spec; a job stored without them (as before migration 0016) shows null. */
static void test_list_hparams_cost_nothing(void **state)
{
    fixture *f = *state;
    char id[STORE_ID_LEN + 1];
    grow(f, 10, id);
    submit_sgd(f, 2, id);
    const char *path = "/api/v1/jobs?limit=50&since=0";
    unsigned long parses = spec_parse_count();
    uint64_t few = statements_of(f, path, "alice-secret");
    assert_int_equal(spec_parse_count(), parses);
    submit_sgd(f, 20, id);
    parses = spec_parse_count();
    body b;
    uint64_t many = fetch(f, path, &b);
    assert_int_equal(spec_parse_count(), parses);
    if (many != few)
        fail_msg("a page of 22 jobs with hparams: %llu statements; of 2: %llu",
                 (unsigned long long)many, (unsigned long long)few);
    json_t *page = json_loads(b.text, 0, NULL);
    json_t *jobs = json_object_get(page, "jobs");
    int with = 0, without = 0;
    size_t i;
    json_t *job;
    json_array_foreach(jobs, i, job) {
        json_t *h = json_object_get(job, "hparams");
        if (strcmp(json_string_value(json_object_get(job, "name")), "j") == 0) {
            assert_true(json_is_null(h)); /* stored without them */
            without++;
            continue;
        }
        with++;
        assert_string_equal(json_string_value(json_object_get(h, "model")), "custom");
        assert_string_equal(json_string_value(json_object_get(h, "optimizer")), "sgd");
        assert_true(json_real_value(json_object_get(h, "lr")) == 0.2);
        assert_int_equal(json_integer_value(json_object_get(h, "batch_size")), 32);
        assert_int_equal(json_integer_value(json_object_get(h, "epochs")), 3);
    }
    assert_int_equal(with, 22);
    assert_true(without >= 1);
    json_decref(page);
    free(b.text);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_setup_teardown(test_statements_do_not_grow, setup, teardown),
        cmocka_unit_test_setup_teardown(test_queries_use_indexes, setup, teardown),
        cmocka_unit_test_setup_teardown(test_repeated_pages, setup, teardown),
        cmocka_unit_test_setup_teardown(test_sweep_costs_no_more_than_its_jobs, setup, teardown),
        cmocka_unit_test_setup_teardown(test_submit_cost_does_not_grow, setup, teardown),
        cmocka_unit_test_setup_teardown(test_list_hparams_cost_nothing, setup, teardown),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
