/* test_api.c — the HTTP API driven through the real server: the routes,
 * handlers and job view run in this process on 127.0.0.1 (a free port, a
 * temporary data dir and store) and a libcurl client calls them. First the
 * route table's answers (404, 405 and Allow, 401, HEAD), then every store
 * failure the API can meet: store_fault_sim() makes one chosen SQL statement
 * fail, and each failure must come back as a clean JSON 500 (or, where the
 * job is already stored, a success that says less); once the fault clears
 * the job must be there and consistent, nothing lost and nothing half done.
 * Last, a read is answered while a submit waits for its commit, on a server
 * of one HTTP thread (issue 31 #9). Under ASan, a leak on any error path fails the test. */
#include <setjmp.h>
#include <stdarg.h>
#include <stdatomic.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <pthread.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include <cmocka.h>
#include <curl/curl.h>
#include <jansson.h>

#include "daemon.h"
#include "jobspec/spec.h"
#include "http/http.h"
#include "api_server.h"
#include "run/rundir.h"

#define QUICK_JOB                                                                                 \
    "{\"name\": \"quick\", \"model\": {\"input\": [8], \"layers\": [{\"type\": \"dense\", "       \
    "\"units\": 4, \"activation\": \"softmax\"}]}, \"data\": {\"format\": \"synthetic\", "        \
    "\"synthetic_train\": 256, \"synthetic_test\": 64, \"num_classes\": 4}, \"training\": "       \
    "{\"epochs\": 2, \"batch_size\": 32, \"seed\": 1}}"

/* Statements by a fragment of their SQL text (store.c's stmt_sql). */
#define SQL_GET_JOB "trainer, workers, threads"  /* every job-row SELECT ... */
#define SQL_BY_ID "FROM jobs WHERE id = ?1"      /* ... of one job by id */
#define SQL_LATEST "ORDER BY seq DESC LIMIT 1"
#define SQL_LIST "ORDER BY seq DESC"
#define SQL_OWNER_ACTIVE "state IN ('starting', 'running')"
#define SQL_CANCEL_QUEUED "SET state = 'cancelled'"
#define SQL_SET_STOP "SET stop_reason"
#define SQL_EVENTS "FROM events WHERE job_id = ?1 ORDER BY id"
#define SQL_DELETE_FINISHED "DELETE FROM jobs WHERE id = ?1 AND state IN"
#define SQL_DELETE_EVENTS "DELETE FROM events WHERE job_id = ?1"
#define SQL_QUEUE_AHEAD "SELECT COUNT(*) FROM (SELECT 1 FROM jobs"

static const char *const secrets_json =
    "[{\"secret\": \"alice-secret\", \"identity\": \"alice\"},"
    " {\"secret\": \"carol-secret\", \"identity\": \"carol\"},"
    " {\"secret\": \"dave-secret\", \"identity\": \"dave\"},"
    " {\"secret\": \"root-secret\", \"identity\": \"root\", \"role\": \"admin\"}]";

typedef api_server fixture;

/* ---- the fault ------------------------------------------------------------- */

/* Fail the statements whose text contains `has` (and `also`, when set),
 * after letting the first `skip` of them run; count the failures. */
typedef struct fault {
    const char *has, *also;
    int skip;
    atomic_int seen, failed;
} fault;

static bool fault_hit(void *arg, const char *sql)
{
    fault *f = arg;
    if (!strstr(sql, f->has) || (f->also && !strstr(sql, f->also)))
        return false;
    if (atomic_fetch_add(&f->seen, 1) < f->skip)
        return false;
    atomic_fetch_add(&f->failed, 1);
    return true;
}

static void fault_set(fault *f, const char *has, const char *also, int skip)
{
    f->has = has;
    f->also = also;
    f->skip = skip;
    atomic_store(&f->seen, 0);
    atomic_store(&f->failed, 0);
    store_fault_sim(fault_hit, f);
}

/* Clear the fault; it must have fired (the branch under test ran). */
static void fault_clear(fault *f)
{
    store_fault_sim(NULL, NULL);
    assert_true(atomic_load(&f->failed) > 0);
}

/* ---- the client ------------------------------------------------------------ */

typedef struct reply {
    long status;
    char *text;
    size_t len;
    char content_type[64];
    char location[96];
    char allow[64];
    json_t *json; /* the body parsed, or NULL */
} reply;

static size_t reply_body(char *p, size_t size, size_t n, void *arg)
{
    reply *r = arg;
    char *grown = realloc(r->text, r->len + size * n + 1);
    if (!grown)
        return 0;
    r->text = grown;
    memcpy(r->text + r->len, p, size * n);
    r->len += size * n;
    r->text[r->len] = '\0';
    return size * n;
}

/* Keep a header's value (without CRLF) when its name is `name`. */
static void reply_keep(const char *line, size_t n, const char *name, char *out, size_t cap)
{
    size_t k = strlen(name);
    if (n <= k || strncasecmp(line, name, k) != 0)
        return;
    line += k;
    n -= k;
    while (n > 0 && *line == ' ') {
        line++;
        n--;
    }
    while (n > 0 && (line[n - 1] == '\r' || line[n - 1] == '\n'))
        n--;
    snprintf(out, cap, "%.*s", (int)n, line);
}

static size_t reply_header(char *p, size_t size, size_t n, void *arg)
{
    reply *r = arg;
    reply_keep(p, size * n, "Content-Type:", r->content_type, sizeof r->content_type);
    reply_keep(p, size * n, "Location:", r->location, sizeof r->location);
    reply_keep(p, size * n, "Allow:", r->allow, sizeof r->allow);
    return size * n;
}

static reply call(fixture *f, const char *method, const char *path, const char *secret,
                  const char *body)
{
    reply r;
    memset(&r, 0, sizeof r);
    char url[512], bearer[128];
    snprintf(url, sizeof url, "http://127.0.0.1:%d%s", f->port, path);
    struct curl_slist *headers = NULL;
    if (secret) {
        snprintf(bearer, sizeof bearer, "Authorization: Bearer %s", secret);
        headers = curl_slist_append(headers, bearer);
        assert_non_null(headers);
    }
    CURL *c = f->curl;
    curl_easy_reset(c);
    curl_easy_setopt(c, CURLOPT_URL, url);
    if (strcmp(method, "HEAD") == 0)
        curl_easy_setopt(c, CURLOPT_NOBODY, 1L);
    else
        curl_easy_setopt(c, CURLOPT_CUSTOMREQUEST, method);
    curl_easy_setopt(c, CURLOPT_HTTPHEADER, headers);
    if (body)
        curl_easy_setopt(c, CURLOPT_POSTFIELDS, body);
    curl_easy_setopt(c, CURLOPT_WRITEFUNCTION, reply_body);
    curl_easy_setopt(c, CURLOPT_WRITEDATA, &r);
    curl_easy_setopt(c, CURLOPT_HEADERFUNCTION, reply_header);
    curl_easy_setopt(c, CURLOPT_HEADERDATA, &r);
    curl_easy_setopt(c, CURLOPT_TIMEOUT, 30L);
    assert_int_equal(curl_easy_perform(c), CURLE_OK);
    curl_slist_free_all(headers);
    curl_easy_getinfo(c, CURLINFO_RESPONSE_CODE, &r.status);
    r.json = r.text ? json_loadb(r.text, r.len, 0, NULL) : NULL;
    return r;
}

static void reply_clear(reply *r)
{
    free(r->text);
    json_decref(r->json);
    memset(r, 0, sizeof *r);
}

/* A clean error: the status, JSON with an "error" text and a "field". */
static void expect_error(fixture *f, const char *method, const char *path, const char *secret,
                         int status)
{
    reply r = call(f, method, path, secret, NULL);
    if (r.status != status)
        fail_msg("%s %s: %ld %s, want %d", method, path, r.status, r.text ? r.text : "", status);
    assert_string_equal(r.content_type, "application/json");
    assert_true(json_is_string(json_object_get(r.json, "error")));
    assert_non_null(json_object_get(r.json, "field"));
    reply_clear(&r);
}

static void expect_500(fixture *f, const char *method, const char *path, const char *secret)
{
    expect_error(f, method, path, secret, 500);
}

/* POST a job for secret's owner; its id. */
static void submit(fixture *f, const char *secret, char id[STORE_ID_LEN + 1])
{
    reply r = call(f, "POST", "/api/v1/jobs", secret, QUICK_JOB);
    if (r.status != 201)
        fail_msg("submit: %ld %s", r.status, r.text ? r.text : "");
    snprintf(id, STORE_ID_LEN + 1, "%s", json_string_value(json_object_get(r.json, "id")));
    assert_int_equal(strlen(id), STORE_ID_LEN);
    reply_clear(&r);
}

/* The job's state as GET /api/v1/jobs/{id} shows it (200 required). */
static const char *state_of(fixture *f, const char *id, char *buf, size_t cap)
{
    char path[64];
    snprintf(path, sizeof path, "/api/v1/jobs/%s", id);
    reply r = call(f, "GET", path, "root-secret", NULL);
    if (r.status != 200)
        fail_msg("GET %s: %ld %s", path, r.status, r.text ? r.text : "");
    snprintf(buf, cap, "%s", json_string_value(json_object_get(r.json, "state")));
    reply_clear(&r);
    return buf;
}

/* Number of jobs secret's caller sees. */
static size_t count_jobs(fixture *f, const char *secret)
{
    reply r = call(f, "GET", "/api/v1/jobs", secret, NULL);
    assert_int_equal(r.status, 200);
    size_t n = json_array_size(json_object_get(r.json, "jobs"));
    reply_clear(&r);
    return n;
}

/* ---- set-up ---------------------------------------------------------------- */

static int setup(void **state)
{
    return api_server_setup(state, "apifaults", secrets_json);
}

static int teardown(void **state)
{
    return api_server_teardown(state);
}

/* ---- routing --------------------------------------------------------------- */

/* 405 with the Allow of each path: the methods of its routes, HEAD with GET. */
static void test_routes_405(void **state)
{
    fixture *f = *state;
    char id[STORE_ID_LEN + 1], path[96];
    submit(f, "alice-secret", id);
    struct {
        const char *method, *path, *allow;
    } cases[] = {
        {"POST", "/healthz", "GET, HEAD"},
        {"DELETE", "/metrics", "GET, HEAD"},
        {"PUT", "/api/v1/jobs", "GET, HEAD, POST"},
        {"GET", "/api/submit", "POST"},
        {"POST", "/api/state", "GET, HEAD"},
        {"PUT", "/api/cancel", "GET, HEAD, POST"},
        {"DELETE", "/api/destroy", "GET, HEAD, POST"},
        {"POST", "/api/v1/jobs/%s", "GET, HEAD, DELETE"},
        {"DELETE", "/api/v1/jobs/%s/logs", "GET, HEAD"},
        {"POST", "/api/v1/jobs/%s/weights", "GET, HEAD"},
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        snprintf(path, sizeof path, cases[i].path, id);
        reply r = call(f, cases[i].method, path, "alice-secret", NULL);
        if (r.status != 405 || strcmp(r.allow, cases[i].allow) != 0)
            fail_msg("%s %s: %ld, Allow \"%s\"", cases[i].method, path, r.status, r.allow);
        assert_string_equal(json_string_value(json_object_get(r.json, "error")),
                            "method not allowed");
        reply_clear(&r);
    }
}

/* Paths no route takes; callers the routes refuse; HEAD answered as GET. */
static void test_routes_refusals(void **state)
{
    fixture *f = *state;
    char id[STORE_ID_LEN + 1], path[96];
    submit(f, "alice-secret", id);
    const char *unknown[] = {"/index.html", "/api/v1", "/api/v1/jobs/", "/api/v1/jobs/012",
                             "/api/v1/jobs/0123456789AB", "/api/v1/jobs/%s/", "/api/v1/jobs/%s/x",
                             "/api/v1/jobs/%s/logs/more", "/healthz/"};
    for (size_t i = 0; i < sizeof unknown / sizeof unknown[0]; i++) {
        snprintf(path, sizeof path, unknown[i], id);
        reply r = call(f, "GET", path, "alice-secret", NULL);
        assert_int_equal(r.status, 404);
        assert_non_null(strstr(json_string_value(json_object_get(r.json, "error")),
                               "no such route"));
        reply_clear(&r);
    }
    /* Four characters or more are a short id: no job begins 0000 here. */
    reply short_id = call(f, "GET", "/api/v1/jobs/0000", "alice-secret", NULL);
    assert_int_equal(short_id.status, id[0] == '0' && id[1] == '0' && id[2] == '0' &&
                                          id[3] == '0' ? 200 : 404);
    reply_clear(&short_id);
    snprintf(path, sizeof path, "/api/v1/jobs/%s/events", id);
    expect_error(f, "GET", path, NULL, 401);
    expect_error(f, "GET", path, "wrong-secret", 401);
    expect_error(f, "GET", "/api/v1/jobs", NULL, 401);
    expect_error(f, "GET", "/api/state", NULL, 401);
    /* Someone else's job does not exist for the caller; the admin sees it. */
    expect_error(f, "GET", path, "carol-secret", 404);
    reply r = call(f, "GET", path, "root-secret", NULL);
    assert_int_equal(r.status, 200);
    reply_clear(&r);
    expect_error(f, "GET", "/api/v1/jobs/0123456789ab", "alice-secret", 404);
    r = call(f, "HEAD", path, "alice-secret", NULL);
    assert_int_equal(r.status, 200);
    reply_clear(&r);
    r = call(f, "GET", "/healthz", NULL, NULL);
    assert_int_equal(r.status, 200);
    reply_clear(&r);
}

/* ---- store failures -------------------------------------------------------- */

/* Loading the job a route names: every {id} route answers 500. */
static void test_route_job_load(void **state)
{
    fixture *f = *state;
    fault fl;
    char id[STORE_ID_LEN + 1], path[96], st[32];
    submit(f, "alice-secret", id);
    const char *subs[] = {"", "/history", "/weights", "/logs", "/events"};
    for (size_t i = 0; i < sizeof subs / sizeof subs[0]; i++) {
        snprintf(path, sizeof path, "/api/v1/jobs/%s%s", id, subs[i]);
        fault_set(&fl, SQL_GET_JOB, SQL_BY_ID, 0);
        expect_500(f, "GET", path, "alice-secret");
        fault_clear(&fl);
    }
    snprintf(path, sizeof path, "/api/v1/jobs/%s", id);
    fault_set(&fl, SQL_GET_JOB, SQL_BY_ID, 0);
    expect_500(f, "DELETE", path, "alice-secret");
    fault_clear(&fl);
    assert_string_equal(state_of(f, id, st, sizeof st), "queued");
}

/* The seed API's current job: state, cancel and destroy answer 500. */
static void test_current_job_load(void **state)
{
    fixture *f = *state;
    fault fl;
    char id[STORE_ID_LEN + 1], st[32];
    submit(f, "alice-secret", id);
    const char *paths[] = {"/api/state", "/api/cancel", "/api/destroy"};
    for (size_t i = 0; i < sizeof paths / sizeof paths[0]; i++) {
        fault_set(&fl, SQL_LATEST, NULL, 0);
        expect_500(f, "GET", paths[i], "alice-secret");
        fault_clear(&fl);
    }
    assert_string_equal(state_of(f, id, st, sizeof st), "queued");
}

/* Every statement of the submit transaction: 500, and no job half-stored. */
static void test_submit(void **state)
{
    fixture *f = *state;
    const char *stmts[] = {
        "BEGIN IMMEDIATE",
        "SELECT queued FROM owners WHERE owner = ?1",
        "SELECT value FROM meta WHERE key = 'vclock'",
        "SELECT vfinish FROM owners",
        "INSERT INTO jobs",
        "INSERT INTO owners",
        "INSERT INTO events",
        "COMMIT",
    };
    size_t before = count_jobs(f, "carol-secret");
    for (size_t i = 0; i < sizeof stmts / sizeof stmts[0]; i++) {
        fault fl;
        fault_set(&fl, stmts[i], NULL, 0);
        reply r = call(f, "POST", "/api/v1/jobs", "carol-secret", QUICK_JOB);
        if (r.status != 500)
            fail_msg("fault at %s: %ld %s", stmts[i], r.status, r.text ? r.text : "");
        assert_string_equal(json_string_value(json_object_get(r.json, "error")),
                            "could not store the job; see the server log");
        reply_clear(&r);
        r = call(f, "POST", "/api/submit", NULL,
                 "{\"secret\": \"carol-secret\", \"job\": " QUICK_JOB "}");
        assert_int_equal(r.status, 500);
        reply_clear(&r);
        fault_clear(&fl);
        assert_int_equal(count_jobs(f, "carol-secret"), before);
    }
    char id[STORE_ID_LEN + 1], st[32];
    submit(f, "carol-secret", id);
    assert_int_equal(count_jobs(f, "carol-secret"), before + 1);
    assert_string_equal(state_of(f, id, st, sizeof st), "queued");
}

/* A submit parses its spec once (spec_submit_read) and stores the facts a
 * start needs; a refusal for a control character costs one parse too. */
static void test_submit_parses_once(void **state)
{
    fixture *f = *state;
    const char *spec =
        "{\"name\": \"keep3\", \"model\": {\"input\": [8], \"layers\": [{\"type\": "
        "\"dense\", \"units\": 4, \"activation\": \"softmax\"}]}, \"data\": {\"format\": "
        "\"synthetic\", \"synthetic_train\": 256, \"num_classes\": 4}, \"training\": "
        "{\"epochs\":   2, \"checkpoint_keep\": 3}}";
    unsigned long before = spec_parse_count();
    reply r = call(f, "POST", "/api/v1/jobs", "alice-secret", spec);
    assert_int_equal(r.status, 201);
    assert_int_equal(spec_parse_count(), before + 1);
    store_job j;
    assert_int_equal(store_job_get(f->d.st, json_string_value(json_object_get(r.json, "id")),
                                   &j), STORE_OK);
    assert_int_equal(j.checkpoint_keep, 3);
    assert_true(j.mem_per_rank > 0);
    assert_int_equal(j.ranks, 1);
    char *text = NULL;
    assert_int_equal(store_job_spec(f->d.st, j.id, &text), STORE_OK);
    assert_non_null(strstr(text, "\"epochs\":2,")); /* the canonical text: compact */
    free(text);
    /* The key hyperparameters a list shows, from the same parse. */
    json_t *h = json_loads(j.hparams, 0, NULL);
    assert_non_null(h);
    assert_string_equal(json_string_value(json_object_get(h, "model")), "custom");
    assert_int_equal(json_integer_value(json_object_get(h, "epochs")), 2);
    assert_true(json_is_string(json_object_get(h, "optimizer")));
    assert_true(json_real_value(json_object_get(h, "lr")) > 0);
    json_decref(h);
    store_job_clear(&j);
    reply_clear(&r);
    before = spec_parse_count();
    r = call(f, "POST", "/api/v1/jobs", "alice-secret",
             "{\"name\": \"a\\u001b[2Jb\", \"model\": {\"input\": [8], \"layers\": "
             "[{\"type\": \"dense\", \"units\": 4}]}, \"data\": {\"format\": \"synthetic\", "
             "\"num_classes\": 4}}");
    assert_int_equal(r.status, 400);
    assert_string_equal(json_string_value(json_object_get(r.json, "field")), "name");
    assert_non_null(strstr(json_string_value(json_object_get(r.json, "error")),
                           "control characters"));
    assert_int_equal(spec_parse_count(), before + 1);
    reply_clear(&r);
}

/* Reading the stored job's place back fails: the job is durable, so 201
 * without a position (a 500 would make the client submit it twice). */
static void test_submit_position(void **state)
{
    fixture *f = *state;
    const char *frags[][2] = {{SQL_GET_JOB, SQL_BY_ID}, {SQL_QUEUE_AHEAD, NULL}};
    for (size_t i = 0; i < 2; i++) {
        fault fl;
        fault_set(&fl, frags[i][0], frags[i][1], 0);
        reply r = call(f, "POST", "/api/v1/jobs", "alice-secret", QUICK_JOB);
        fault_clear(&fl);
        assert_int_equal(r.status, 201);
        assert_true(json_is_null(json_object_get(r.json, "queue_position")));
        const char *id = json_string_value(json_object_get(r.json, "id"));
        assert_non_null(id);
        char loc[64], st[32];
        snprintf(loc, sizeof loc, "/api/v1/jobs/%s", id);
        assert_string_equal(r.location, loc);
        assert_string_equal(state_of(f, id, st, sizeof st), "queued");
        reply_clear(&r);
    }
}

static void test_list(void **state)
{
    fixture *f = *state;
    fault fl;
    char id[STORE_ID_LEN + 1];
    submit(f, "alice-secret", id);
    size_t n = count_jobs(f, "alice-secret");
    fault_set(&fl, SQL_LIST, NULL, 0);
    expect_500(f, "GET", "/api/v1/jobs", "alice-secret");
    expect_500(f, "GET", "/api/v1/jobs?state=queued", "alice-secret");
    expect_500(f, "GET", "/api/v1/jobs", "root-secret");
    fault_clear(&fl);
    assert_int_equal(count_jobs(f, "alice-secret"), n);
}

/* A queued job's view asks the store why it waits: 500 from the job, the
 * list and the seed's state when it cannot. */
static void test_view(void **state)
{
    fixture *f = *state;
    fault fl;
    char id[STORE_ID_LEN + 1], path[64];
    submit(f, "alice-secret", id);
    snprintf(path, sizeof path, "/api/v1/jobs/%s", id);
    const char *paths[] = {path, "/api/v1/jobs", "/api/state"};
    for (size_t i = 0; i < 3; i++) {
        fault_set(&fl, SQL_OWNER_ACTIVE, "COUNT(*)", 0);
        expect_500(f, "GET", paths[i], "alice-secret");
        fault_clear(&fl);
    }
    reply r = call(f, "GET", path, "alice-secret", NULL);
    assert_int_equal(r.status, 200);
    assert_string_equal(json_string_value(json_object_get(r.json, "waiting_for")), "resources");
    /* Queued: no allocation yet. */
    assert_int_equal(json_array_size(json_object_get(r.json, "hosts")), 0);
    assert_true(json_is_array(json_object_get(r.json, "hosts")));
    reply_clear(&r);
    /* Started: its allocation, in rank order. */
    assert_int_equal(store_job_mark_starting(f->d.st, id, NULL,
                                             "[{\"host\":\"localhost\",\"ranks\":2}]",
                                             daemon_now()),
                     STORE_OK);
    r = call(f, "GET", path, "alice-secret", NULL);
    assert_int_equal(r.status, 200);
    json_t *part = json_array_get(json_object_get(r.json, "hosts"), 0);
    assert_string_equal(json_string_value(json_object_get(part, "host")), "localhost");
    assert_int_equal(json_integer_value(json_object_get(part, "ranks")), 2);
    reply_clear(&r);
    assert_int_equal(store_job_finish(f->d.st, id, JOB_FAILED, NULL, NULL, NULL, NULL,
                                      daemon_now()),
                     STORE_OK);
}

/* GET /api/v1/cluster: admins see the hosts; anyone else gets 403; no
 * secret is a 401. */
static void test_cluster(void **state)
{
    fixture *f = *state;
    reply r = call(f, "GET", "/api/v1/cluster", "root-secret", NULL);
    assert_int_equal(r.status, 200);
    json_t *host = json_array_get(json_object_get(r.json, "hosts"), 0);
    assert_string_equal(json_string_value(json_object_get(host, "host")), "localhost");
    assert_int_equal(json_integer_value(json_object_get(host, "slots")), 4);
    assert_string_equal(json_string_value(json_object_get(host, "state")), "up");
    assert_int_equal(json_integer_value(json_object_get(r.json, "slots")), 4);
    reply_clear(&r);
    expect_error(f, "GET", "/api/v1/cluster", "alice-secret", 403);
    expect_error(f, "GET", "/api/v1/cluster", NULL, 401);
    expect_error(f, "POST", "/api/v1/cluster", "root-secret", 405);
}

/* Cancelling a queued job: a failure anywhere in the transaction is a 500
 * (not a 409) and leaves it queued; the cancel then goes through. */
static void test_cancel_queued(void **state)
{
    fixture *f = *state;
    char id[STORE_ID_LEN + 1], path[64], st[32];
    submit(f, "alice-secret", id);
    snprintf(path, sizeof path, "/api/v1/jobs/%s", id);
    const char *stmts[] = {"BEGIN IMMEDIATE", "SELECT state FROM jobs", SQL_CANCEL_QUEUED,
                           "INSERT INTO events", "COMMIT"};
    for (size_t i = 0; i < sizeof stmts / sizeof stmts[0]; i++) {
        fault fl;
        fault_set(&fl, stmts[i], NULL, 0);
        expect_500(f, "DELETE", path, "alice-secret");
        fault_clear(&fl);
        assert_string_equal(state_of(f, id, st, sizeof st), "queued");
    }
    /* The cancel is stored, but the job cannot be read back for the reply. */
    fault fl;
    fault_set(&fl, SQL_GET_JOB, SQL_BY_ID, 1);
    expect_500(f, "DELETE", path, "alice-secret");
    fault_clear(&fl);
    assert_string_equal(state_of(f, id, st, sizeof st), "cancelled");
    snprintf(path, sizeof path, "/api/v1/jobs/%s/events", id);
    reply r = call(f, "GET", path, "alice-secret", NULL);
    assert_int_equal(r.status, 200);
    json_t *events = json_object_get(r.json, "events");
    assert_int_equal(json_array_size(events), 2); /* queued, then cancelled: once */
    assert_string_equal(json_string_value(json_object_get(json_array_get(events, 1), "to")),
                        "cancelled");
    reply_clear(&r);
}

/* Cancelling a running job records a stop request; its failure is a 500
 * and no request is recorded. */
static void test_cancel_running(void **state)
{
    fixture *f = *state;
    char id[STORE_ID_LEN + 1], path[64];
    submit(f, "dave-secret", id);
    assert_int_equal(store_job_mark_starting(f->d.st, id, NULL, NULL, daemon_now()), STORE_OK);
    assert_int_equal(store_job_mark_running(f->d.st, id, 4242, daemon_now()), STORE_OK);
    snprintf(path, sizeof path, "/api/v1/jobs/%s", id);
    fault fl;
    fault_set(&fl, SQL_SET_STOP, NULL, 0);
    expect_500(f, "DELETE", path, "dave-secret");
    expect_500(f, "GET", "/api/cancel", "dave-secret");
    fault_clear(&fl);
    reply r = call(f, "GET", path, "dave-secret", NULL);
    assert_int_equal(r.status, 200);
    assert_true(json_is_false(json_object_get(r.json, "cancel_requested")));
    reply_clear(&r);
    r = call(f, "DELETE", path, "dave-secret", NULL);
    assert_int_equal(r.status, 200);
    assert_string_equal(json_string_value(json_object_get(r.json, "state")), "running");
    assert_true(json_is_true(json_object_get(r.json, "cancel_requested")));
    reply_clear(&r);
    int code = 0;
    assert_int_equal(store_job_finish(f->d.st, id, JOB_CANCELLED, &code, NULL, NULL, NULL,
                                      daemon_now()),
                     STORE_OK);
}

/* A finished job: the 409 still answers when its state cannot be re-read;
 * the seed's routes answer as the seed. */
static void test_cancel_finished(void **state)
{
    fixture *f = *state;
    char id[STORE_ID_LEN + 1], path[64];
    submit(f, "alice-secret", id);
    int code = 0;
    assert_int_equal(store_job_finish(f->d.st, id, JOB_SUCCEEDED, &code, NULL, NULL, NULL,
                                      daemon_now()),
                     STORE_OK);
    snprintf(path, sizeof path, "/api/v1/jobs/%s/cancel", id);
    fault fl;
    fault_set(&fl, SQL_GET_JOB, SQL_BY_ID, 1);
    expect_error(f, "POST", path, "alice-secret", 409);
    fault_clear(&fl);
    /* The seed's cancel answers 200 whatever the state, and leaves the
     * job as it is; its destroy of an unfinished job is a 400. */
    reply r = call(f, "GET", "/api/cancel", "alice-secret", NULL);
    assert_int_equal(r.status, 200);
    assert_string_equal(json_string_value(json_object_get(r.json, "state")), "succeeded");
    reply_clear(&r);
    char other[STORE_ID_LEN + 1];
    submit(f, "alice-secret", other);
    expect_error(f, "POST", "/api/destroy", "alice-secret", 400);
    /* DELETE of the finished job: a store error on either statement is a
     * 500 that leaves the job in place; then it is deleted. */
    snprintf(path, sizeof path, "/api/v1/jobs/%s", id);
    fault_set(&fl, SQL_DELETE_FINISHED, NULL, 0);
    expect_500(f, "DELETE", path, "alice-secret");
    fault_clear(&fl);
    fault_set(&fl, SQL_DELETE_EVENTS, NULL, 0);
    expect_500(f, "DELETE", path, "alice-secret");
    fault_clear(&fl);
    reply d = call(f, "DELETE", path, "alice-secret", NULL);
    assert_int_equal(d.status, 200);
    assert_true(json_is_true(json_object_get(d.json, "deleted")));
    reply_clear(&d);
    expect_error(f, "DELETE", path, "alice-secret", 404);
}

static void test_events(void **state)
{
    fixture *f = *state;
    char id[STORE_ID_LEN + 1], path[96];
    submit(f, "alice-secret", id);
    snprintf(path, sizeof path, "/api/v1/jobs/%s/events", id);
    fault fl;
    fault_set(&fl, SQL_EVENTS, NULL, 0);
    expect_500(f, "GET", path, "alice-secret");
    fault_clear(&fl);
    reply r = call(f, "GET", path, "alice-secret", NULL);
    assert_int_equal(r.status, 200);
    assert_int_equal(json_array_size(json_object_get(r.json, "events")), 1);
    reply_clear(&r);
}

/* Destroy forgets the row before the run directory: when the store fails,
 * both stay and a later destroy returns the history. */
static void test_destroy(void **state)
{
    fixture *f = *state;
    char id[STORE_ID_LEN + 1], dir[256], err[256], st[32];
    submit(f, "dave-secret", id);
    int code = 0;
    assert_int_equal(store_job_finish(f->d.st, id, JOB_SUCCEEDED, &code, NULL, NULL, NULL,
                                      daemon_now()),
                     STORE_OK);
    assert_true(rundir_path(dir, sizeof dir, f->d.cfg.data_dir, id, NULL));
    assert_true(rundir_create(dir, QUICK_JOB, err, sizeof err));
    const char *history = "{\"loss\": [0.5]}";
    assert_true(rundir_write_atomic(dir, "history.json", history, strlen(history), err,
                                    sizeof err));
    const char *stmts[] = {"BEGIN IMMEDIATE", "DELETE FROM jobs", "DELETE FROM events",
                           "COMMIT"};
    for (size_t i = 0; i < sizeof stmts / sizeof stmts[0]; i++) {
        fault fl;
        fault_set(&fl, stmts[i], NULL, 0);
        expect_500(f, "POST", "/api/destroy", "dave-secret");
        fault_clear(&fl);
        assert_string_equal(state_of(f, id, st, sizeof st), "succeeded");
        assert_int_equal(access(dir, F_OK), 0);
    }
    reply r = call(f, "POST", "/api/destroy", "dave-secret", NULL);
    assert_int_equal(r.status, 200);
    assert_true(json_is_object(json_object_get(r.json, "history")));
    reply_clear(&r);
    assert_int_not_equal(access(dir, F_OK), 0);
    char path[64];
    snprintf(path, sizeof path, "/api/v1/jobs/%s", id);
    expect_error(f, "GET", path, "dave-secret", 404);
}

/* ---- reads beside writes ------------------------------------------------- */

/* store_fault_sim's hook as a slow disk: every COMMIT takes 2 s. */
static bool slow_commit(void *arg, const char *sql)
{
    (void)arg;
    if (strncmp(sql, "COMMIT", 6) == 0) {
        struct timespec t = {2, 0};
        nanosleep(&t, NULL);
    }
    return false;
}

typedef struct slow_submit {
    int port;
    long status;
} slow_submit;

static size_t discard_body(char *p, size_t size, size_t n, void *arg)
{
    (void)p, (void)arg;
    return size * n;
}

static void *submit_thread(void *arg)
{
    slow_submit *ss = arg;
    char url[128];
    snprintf(url, sizeof url, "http://127.0.0.1:%d/api/v1/jobs", ss->port);
    CURL *c = curl_easy_init();
    struct curl_slist *h = curl_slist_append(NULL, "Authorization: Bearer carol-secret");
    if (c && h) {
        curl_easy_setopt(c, CURLOPT_URL, url);
        curl_easy_setopt(c, CURLOPT_HTTPHEADER, h);
        curl_easy_setopt(c, CURLOPT_POSTFIELDS, QUICK_JOB);
        curl_easy_setopt(c, CURLOPT_WRITEFUNCTION, discard_body);
        curl_easy_setopt(c, CURLOPT_TIMEOUT, 30L);
        if (curl_easy_perform(c) == CURLE_OK)
            curl_easy_getinfo(c, CURLINFO_RESPONSE_CODE, &ss->status);
    }
    curl_slist_free_all(h);
    curl_easy_cleanup(c);
    return NULL;
}

static double mono_s(void)
{
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (double)t.tv_sec + (double)t.tv_nsec * 1e-9;
}

/* With one libmicrohttpd thread, a read sent while a submit waits 2 s for
 * its commit is answered at once: the submit runs on a writer thread with
 * its connection suspended, not on the thread that serves the read. */
static void test_read_beside_slow_commit(void **state)
{
    fixture *f = *state;
    char err[512];
    int port, threads = f->d.cfg.http_threads;
    f->d.cfg.http_threads = 1;
    int fd = http_listen("127.0.0.1:0", &port, err, sizeof err);
    assert_true(fd >= 0);
    http_server *one = http_start(&f->d, fd, err, sizeof err);
    f->d.cfg.http_threads = threads;
    assert_non_null(one);
    store_fault_sim(slow_commit, NULL);
    slow_submit ss = {port, 0};
    pthread_t t;
    assert_int_equal(pthread_create(&t, NULL, submit_thread, &ss), 0);
    struct timespec settle = {0, 300000000}; /* the submit reaches its commit */
    nanosleep(&settle, NULL);
    int saved = f->port;
    f->port = port;
    double t0 = mono_s();
    reply r = call(f, "GET", "/api/v1/jobs?limit=5", "alice-secret", NULL);
    double took = mono_s() - t0;
    f->port = saved;
    assert_int_equal(r.status, 200);
    reply_clear(&r);
    pthread_join(t, NULL);
    store_fault_sim(NULL, NULL);
    http_stop(one);
    assert_int_equal(ss.status, 201);
    /* Before: the read waited for the commit, 1.7 s. */
    if (took > 1.0)
        fail_msg("a read beside a submit's 2 s commit took %.3f s", took);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_routes_405),
        cmocka_unit_test(test_routes_refusals),
        cmocka_unit_test(test_route_job_load),
        cmocka_unit_test(test_current_job_load),
        cmocka_unit_test(test_submit),
        cmocka_unit_test(test_submit_parses_once),
        cmocka_unit_test(test_submit_position),
        cmocka_unit_test(test_list),
        cmocka_unit_test(test_view),
        cmocka_unit_test(test_cluster),
        cmocka_unit_test(test_cancel_queued),
        cmocka_unit_test(test_cancel_running),
        cmocka_unit_test(test_cancel_finished),
        cmocka_unit_test(test_events),
        cmocka_unit_test(test_destroy),
        cmocka_unit_test(test_read_beside_slow_commit),
    };
    return cmocka_run_group_tests(tests, setup, teardown);
}
