"""it_seed.py — the seed's wire format (dist-keras's Punchcard server and its
Job client), field by field, against a real punchcardd: /api/submit takes
job_name (the job's name), num_executors x num_processes (its workers) and
data_path (its training set's name) and refuses the pickled trainer with a
400 that says what to send; /api/state answers job_name and running;
/api/destroy answers the architecture and job_name with the tensors and the
history. The seed's status codes: 403 from a second submit while the first
job is unfinished, 200 from cancel in any state (and with no job), 400 from
destroy of an unfinished job or of none. Last, dist-keras's Job.send / is_finished / destroy_remote_job
rewritten as plain HTTP calls runs a real job to its trained model."""
import punchtest
from punchtest import QUICK_JOB, SECRETS, Daemon, check, expect_error, job_like


def cases():
    with Daemon(["--hold", "--slots", "8"]) as d:
        punchtest.case("submit: job_name", job_name, d)
        punchtest.case("submit: num_executors x num_processes", workers, d)
        punchtest.case("submit: data_path", data_path, d)
        punchtest.case("submit: trainer refused", pickled_trainer, d)
        punchtest.case("submit: bad seed fields", bad_fields, d)
        punchtest.case("state: job_name and running", state_fields, d)
        punchtest.case("status codes as the seed's", status_codes, d)
    punchtest.require_engine()
    with Daemon(["--slots", "2"]) as d:
        punchtest.case("dist-keras's Job client", job_client, d)


# QUICK_JOB without its name, so that job_name can give one.
UNNAMED = {k: v for k, v in QUICK_JOB.items() if k != "name"}


def seed_submit(d, user, **fields):
    return d.req("POST", "/api/submit", body=dict(fields, secret=SECRETS[user]))


def view(d, user, jid):
    r = d.req("GET", "/api/v1/jobs/" + jid, user)
    punchtest.require(r.status_code == 200, r.text)
    return r.json()


def accepted(d, user, r, what):
    """The view of the job that r (a seed submit) queued, which is then
    cancelled: the seed takes one unfinished job per caller."""
    check(r.status_code == 201, what + ": " + r.text)
    if r.status_code != 201:
        return {}
    v = view(d, user, r.json()["id"])
    c = d.req("GET", "/api/cancel?secret=" + SECRETS[user])
    punchtest.require(c.status_code == 200 and c.json()["state"] == "cancelled", c.text)
    return v


def job_name(d):
    """job_name names the job; in the spec-with-secret form too."""
    v = accepted(d, "alice", seed_submit(d, "alice", job=UNNAMED, job_name="mnist-downpour"),
                 "job_name in {job}")
    check(v.get("name") == "mnist-downpour", "job_name in {job}")
    body = dict(UNNAMED, job_name="flat", secret=SECRETS["alice"])
    v = accepted(d, "alice", d.req("POST", "/api/submit", body=body), "job_name beside the spec")
    check(v.get("name") == "flat", "job_name beside the spec")
    e = expect_error(seed_submit(d, "alice", job=QUICK_JOB, job_name="other"), 400,
                     "job_name disagreeing with the spec's name")
    check(e["field"] == "job_name" and "name differs" in e["error"], e)


def workers(d):
    """The seed runs num_executors x num_processes workers."""
    job = job_like(QUICK_JOB, distributed={"trainer": "allreduce"})
    v = accepted(d, "alice", seed_submit(d, "alice", job=job, num_executors=3, num_processes=2),
                 "3 x 2")
    check(v.get("workers") == 6 and v.get("ranks") == 6, v)
    v = accepted(d, "alice", seed_submit(d, "alice", job=job, num_executors=2), "2 executors")
    check(v.get("workers") == 2, "num_processes defaults to 1")
    e = expect_error(seed_submit(d, "alice", job=job, num_executors=20, num_processes=1), 400,
                     "the dist-keras client's default 20 executors on 8 slots")
    check("8 slots" in e["error"], e)
    two = job_like(job, distributed={"trainer": "allreduce", "workers": 4})
    e = expect_error(seed_submit(d, "alice", job=two, num_executors=2), 400,
                     "num_executors disagreeing with distributed.workers")
    check(e["field"] == "num_executors" and "distributed.workers differs" in e["error"], e)


def data_path(d):
    """data_path is data.train: a dataset name, checked as every other."""
    job = {"model": "mlp", "data": {"format": "idx"}}
    accepted(d, "alice", seed_submit(d, "alice", job=job, data_path="fashion-mnist/train"),
             "data_path as the training set")
    e = expect_error(seed_submit(d, "alice", job=job, data_path="../etc/passwd"), 400,
                     "data_path outside the dataset roots")
    check(e["field"] == "data.train", e)
    e = expect_error(seed_submit(d, "alice", job=job, data_path="hdfs://cluster/mnist.parquet"),
                     400, "an HDFS path")
    check(e["field"] == "data.train", e)
    e = expect_error(seed_submit(d, "alice", job={"model": "mlp", "data": {"train": "a/b"}},
                                 data_path="c/d"), 400, "data_path disagreeing with data.train")
    check(e["field"] == "data_path" and "data.train differs" in e["error"], e)


def pickled_trainer(d):
    """The seed's Job.send body as it is: refused, saying why and what to send."""
    e = expect_error(seed_submit(d, "alice", job_name="j", num_executors=1, num_processes=1,
                                 data_path="fashion-mnist/train", trainer="80027d71002e"), 400,
                     "a pickled trainer")
    check(e["field"] == "trainer" and "no code travels" in e["error"] and
          "\"job\"" in e["error"], e)


def bad_fields(d):
    for field, value in (("job_name", 3), ("job_name", ""), ("num_executors", 0),
                         ("num_processes", "2"), ("data_path", ["x"])):
        e = expect_error(seed_submit(d, "alice", job=QUICK_JOB, **{field: value}), 400,
                         "%s = %r" % (field, value))
        check(e["field"] == field, e)


def state_fields(d):
    """running is true until the job ends (queued included), then false."""
    r = seed_submit(d, "bob", job=UNNAMED, job_name="bobs")
    punchtest.require(r.status_code == 201, r.text)
    st = d.req("GET", "/api/state?secret=" + SECRETS["bob"]).json()
    check(st["job_name"] == "bobs" and st["running"] is True and st["state"] == "queued", st)
    d.req("GET", "/api/cancel?secret=" + SECRETS["bob"])
    st = d.req("GET", "/api/state?secret=" + SECRETS["bob"]).json()
    check(st["running"] is False and st["state"] == "cancelled", st)


def status_codes(d):
    """dist-keras's server keeps one job per secret: a second submit is
    403 while the first is unfinished; cancel is 200 whatever the state;
    destroy is 400 until the job has finished, and when there is none."""
    s = SECRETS["root"]
    r = d.req("GET", "/api/cancel?secret=" + s)
    check(r.status_code == 200 and r.json() == {"cancelled": False},
          "cancel with no job: %d %s" % (r.status_code, r.text))
    e = expect_error(d.req("GET", "/api/destroy?secret=" + s), 400, "destroy with no job")
    check("no job" in e["error"], e)
    r = seed_submit(d, "root", job=QUICK_JOB)
    punchtest.require(r.status_code == 201, r.text)
    first = r.json()["id"]
    e = expect_error(seed_submit(d, "root", job=QUICK_JOB), 403, "a second submit")
    check(first in e["error"] and "queued" in e["error"], e)
    e = expect_error(d.req("POST", "/api/destroy?secret=" + s), 400, "destroy a queued job")
    check("queued" in e["error"], e)
    # The v1 API still queues several jobs.
    r = d.req("POST", "/api/v1/jobs", "root", body=QUICK_JOB)
    punchtest.require(r.status_code == 201, r.text)
    other = r.json()["id"]
    d.req("DELETE", "/api/v1/jobs/" + other, "root")
    # The current job is now the cancelled v1 one: cancel answers it, 200.
    r = d.req("GET", "/api/cancel?secret=" + s)
    check(r.status_code == 200 and r.json()["id"] == other and
          r.json()["state"] == "cancelled", "cancel a cancelled job: %s" % r.text)
    r = seed_submit(d, "root", job=QUICK_JOB)
    check(r.status_code == 201, "submit once the current job is cancelled: " + r.text)
    r = d.req("POST", "/api/cancel?secret=" + s)
    check(r.status_code == 200 and r.json()["state"] == "cancelled", r.text)
    r = d.req("GET", "/api/cancel?secret=" + s)
    check(r.status_code == 200 and r.json()["state"] == "cancelled", "cancel twice: " + r.text)
    r = d.req("GET", "/api/destroy?secret=" + s)
    check(r.status_code == 200 and r.json()["model"] is None, "destroy a cancelled job: " +
          r.text)
    check(view(d, "root", first)["state"] == "queued", "the first job is untouched")


def job_client(d):
    """Job.send, then is_finished every so often, then destroy_remote_job:
    the same calls and fields, the spec in place of the pickled trainer."""
    secret = SECRETS["alice"]
    job = job_like(UNNAMED, distributed={"trainer": "allreduce"})
    r = d.req("POST", "/api/submit", body={"secret": secret, "job_name": "seed-client",
                                           "num_executors": 2, "num_processes": 1,
                                           "job": job})
    punchtest.require(r.status_code == 201, r.text)

    def is_finished():
        data = d.req("GET", "/api/state?secret=" + secret).json()
        return None if data["running"] else data
    st = punchtest.wait_for(is_finished, "the job to finish", timeout=120)
    check(st["job_name"] == "seed-client" and st["state"] == "succeeded", st)
    r = d.req("GET", "/api/destroy?secret=" + secret)
    punchtest.require(r.status_code == 200, r.text)
    out = r.json()
    check(out["job_name"] == "seed-client", out.get("job_name"))
    arch = out["architecture"]
    check(arch["input"] == [8] and [l["type"] for l in arch["layers"]] == ["dense"] and
          arch["layers"][0]["units"] == 4, "architecture: %s" % arch)
    w = out["model"]["0.dense.weight"]
    check(w["shape"] == [8, 4] and len(w["data"]) == 32, str(out["model"])[:200])
    check(len(out["history"]["loss"]) == 2, out["history"])
    r = d.req("GET", "/api/state?secret=" + secret)
    check(r.status_code == 404, "the destroyed job is gone: %d %s" % (r.status_code, r.text))


if __name__ == "__main__":
    punchtest.main(cases)
