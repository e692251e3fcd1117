"""it_sweeps.py — hyperparameter sweeps through a real punchcardd and
punch-train (issue 33), on a tiny synthetic job (a 4-class softmax on 256
samples, well under a second an epoch): a 2x2 grid runs four trials and
its best is the best of their metrics as their history.json says; a random
search draws the same parameters for the same seed; ASHA over nine
learning rates with rungs of 1, 3 and 9 epochs (eta 3) promotes by the rule
at every promotion (checked from the rung records), resumes a promoted
trial without training an epoch twice, spends well under half the grid's
epochs and its best reached the last rung; PBT's exploit starts the worst
trial from the best one's weights (its lineage, its job's event, and its
first evaluation equal to the donor's last) and is reproducible with its
seed; its warm start takes the donor's optimizer state (by hand: a warm
start with a checkpoint's optimizer trains as resuming it does); trials carry their sweep and params in job lists and punch list;
cancel stops every trial; another user sees nothing; a bad trial is
refused naming its parameters."""
import json
import os
import shutil
import subprocess
import tempfile

import punchtest
from punchtest import Daemon, check, wait_for

JOB = punchtest.synthetic_job("tiny", 8, [(4, "softmax")], 256, 64, 1, num_classes=4)
JOB["training"]["optimizer"] = {"name": "sgd", "learning_rate": 0.1}
LRS = [0.001, 0.003, 0.01, 0.03, 0.1, 0.3, 1.0, 3.0, 10.0]


def cases():
    punchtest.require_engine()
    punchtest.case("pbt's warm start takes the donor's optimizer state", warm_optimizer)
    with Daemon(["--slots", "2", "--max-running", "4"]) as d:
        punchtest.case("2x2 grid: four trials, best is the best", grid, d)
        punchtest.case("random search: same seed, same params", random_seed, d)
        punchtest.case("asha: promotions follow the rule, fewer epochs", asha, d)
        punchtest.case("pbt: exploit from the better trial's weights, seeded", pbt, d)
        punchtest.case("keep best: losers' checkpoints and weights go", keep_best, d)
        punchtest.case("cancel stops every trial", cancel, d)
        punchtest.case("a bad trial is refused naming it", refused, d)


def submit(d, user, body):
    r = d.req("POST", "/api/v1/sweeps", user, body=body)
    punchtest.require(r.status_code == 201, "sweep submit: %d %s" % (r.status_code, r.text))
    return r.json()["id"]


def sweep(d, user, sid):
    r = d.req("GET", "/api/v1/sweeps/" + sid, user)
    punchtest.require(r.status_code == 200, "GET sweep: %d %s" % (r.status_code, r.text))
    return r.json()


def wait_sweep(d, sid, timeout=120):
    def ended():
        s = sweep(d, "alice", sid)
        return s if s["state"] != "running" else None
    return wait_for(ended, lambda _: "sweep %s to end: %s\n%s" % (
        sid, json.dumps(sweep(d, "alice", sid))[:3000], d.read_log()[-3000:]), timeout, 0.2)


def history(d, jid):
    return punchtest.read_json(os.path.join(d.run_dir(jid), "history.json"))


def punch(d, *args):
    env = {k: v for k, v in os.environ.items() if not k.startswith("PUNCH_")}
    env.update(PUNCH_URL=d.url, PUNCH_SECRET=d.secrets["alice"], HOME=d.tmp)
    exe = os.environ.get("PUNCH") or punchtest.build_path("client", "punch")
    return subprocess.run([exe] + list(args), capture_output=True, text=True, env=env,
                          timeout=60)


def run_files(d, jid):
    top = d.run_dir(jid)
    return {os.path.relpath(os.path.join(r, f), top) for r, _, fs in os.walk(top) for f in fs}


def keep_best(d):
    """keep "best": once the sweep ends, the losing trial has no checkpoints
    or weights left but keeps its history and log; the best keeps all of
    its files, the model_checkpoint saves of both epochs included."""
    job = json.loads(json.dumps(JOB))
    job["training"].update(epochs=2, checkpoint_keep=0,
                           lr_schedulers=[{"name": "model_checkpoint", "every_epochs": 1}])
    sid = submit(d, "alice", {"name": "keep", "job": job, "search": {
        "method": "grid", "metric": "loss", "keep": "best", "max_concurrent": 2,
        "parameters": {"training.optimizer.learning_rate": {"values": [0.001, 0.5]}}}})
    s = wait_sweep(d, sid)
    check(s["state"] == "succeeded" and s["search"]["keep"] == "best", "sweep: %s" % s)
    best = s["best"]["job"]
    loser = next(t["job"] for t in s["trials"] if t["job"] != best)
    kept, left = run_files(d, best), run_files(d, loser)
    check("checkpoints/ckpt.bin" in kept and any(f.startswith("weights.") for f in kept) and
          len([f for f in kept if f.startswith("checkpoints/weights-epoch-")]) >= 2,
          "the best keeps its files: %s" % sorted(kept))
    check(not any(f.startswith(("checkpoints/", "weights.")) for f in left),
          "the loser's checkpoints and weights are gone: %s" % sorted(left))
    check("history.json" in left and len(history(d, loser)["loss"]) == 2,
          "the loser keeps its history: %s" % sorted(left))
    bad = d.req("POST", "/api/v1/sweeps", "alice", body={"job": JOB, "search": {
        "method": "grid", "metric": "loss", "keep": "some",
        "parameters": {"training.batch_size": {"values": [16]}}}})
    check(bad.status_code == 400 and bad.json().get("field") == "search.keep",
          "a bad keep: %d %s" % (bad.status_code, bad.text))


def grid(d):
    path = os.path.join(d.tmp, "grid.json")
    punchtest.write_json(path, {"name": "grid", "job": JOB, "search": {
        "method": "grid", "metric": "loss", "mode": "min", "max_concurrent": 2,
        "parameters": {"training.optimizer.learning_rate": {"values": [0.01, 0.5]},
                       "training.batch_size": {"values": [16, 64]}}}})
    p = punch(d, "sweep", "submit", path)
    check(p.returncode == 0 and "submitted" in p.stdout, "punch sweep submit: %s %s"
          % (p.stdout, p.stderr))
    sid = p.stdout.split()[1]
    s = wait_sweep(d, sid)
    check(s["state"] == "succeeded", "grid ended %s" % s["state"])
    trials = s["trials"]
    check(len(trials) == 4 and all(t["state"] == "succeeded" for t in trials),
          "four succeeded trials: %s" % trials)
    check(len({json.dumps(t["params"], sort_keys=True) for t in trials}) == 4, "distinct params")
    for t in trials:
        h = history(d, t["job"])
        check(abs(h["loss"][-1] - t["metric"]) < 1e-9, "trial metric = history: %s %s"
              % (t, h["loss"]))
        check(t["epochs_run"] == 1 and len(t["rungs"]) == 1, "one rung of 1 epoch: %s" % t)
        j = d.job("alice", t["job"])
        check(j.get("sweep") == sid and j.get("params") == t["params"], "the job names its "
              "sweep and params: %s" % j)
        spec = d.req("GET", "/api/v1/jobs/%s/spec" % t["job"], "alice").json()
        check(spec["training"]["batch_size"] == t["params"]["training.batch_size"] and
              spec["training"]["optimizer"]["learning_rate"] ==
              t["params"]["training.optimizer.learning_rate"], "the job runs its params: %s"
              % spec)
    best = min(trials, key=lambda t: t["metric"])
    check(s["best"]["job"] == best["job"] and s["best"]["metric"] == best["metric"],
          "best %s, expected %s" % (s["best"], best))
    p = punch(d, "sweep", "best", sid)
    check(p.returncode == 0 and best["job"] in p.stdout, "punch sweep best: %s" % p.stdout)
    p = punch(d, "sweep", "status", sid)
    check(p.returncode == 0 and p.stdout.splitlines()[3].startswith(best["job"]),
          "status sorted best first: %s" % p.stdout)
    # Private: bob gets the 404 of a sweep that does not exist; root sees it.
    check(d.req("GET", "/api/v1/sweeps/" + sid, "bob").status_code == 404, "bob GET")
    check(d.req("DELETE", "/api/v1/sweeps/" + sid, "bob").status_code == 404, "bob DELETE")
    check(d.req("GET", "/api/v1/sweeps", "bob").json()["sweeps"] == [], "bob's list")
    check(d.req("GET", "/api/v1/jobs/" + best["job"], "bob").status_code == 404, "bob's trial")
    check(sid in [x["id"] for x in d.req("GET", "/api/v1/sweeps", "root").json()["sweeps"]],
          "the admin sees it")
    check(d.req("GET", "/api/v1/sweeps/" + sid, "root").status_code == 200, "admin GET")


def random_body(seed):
    return {"name": "rnd", "job": JOB, "search": {
        "method": "random", "trials": 3, "seed": seed, "metric": "loss", "max_concurrent": 1,
        "parameters": {"training.optimizer.learning_rate": {"loguniform": [1e-4, 1.0]},
                       "training.batch_size": {"int": [8, 64]}}}}


def random_seed(d):
    params = []
    for seed in (11, 11, 12):
        sid = submit(d, "alice", random_body(seed))
        params.append([t["params"] for t in sweep(d, "alice", sid)["trials"]])
        check(d.req("DELETE", "/api/v1/sweeps/" + sid, "alice").status_code == 200, "cancel")
    check(params[0] == params[1], "same seed, same params: %s %s" % (params[0], params[1]))
    check(params[0] != params[2], "another seed draws others: %s" % params[2])
    for p in params[0]:
        check(1e-4 <= p["training.optimizer.learning_rate"] < 1.0 and
              8 <= p["training.batch_size"] <= 64, "within bounds: %s" % p)


def asha(d):
    sid = submit(d, "alice", {"name": "asha", "job": JOB, "search": {
        "method": "asha", "metric": "loss", "mode": "min", "max_concurrent": 3,
        "asha": {"min_epochs": 1, "max_epochs": 9, "reduction_factor": 3},
        "parameters": {"training.optimizer.learning_rate": {"values": LRS}}}})
    s = wait_sweep(d, sid, timeout=170)
    check(s["state"] == "succeeded" and s["rungs"] == [1, 3, 9], "asha ended: %s" % s)
    trials = s["trials"]
    check(len(trials) == 9 and all(t["rungs"] for t in trials), "nine rates ran: %s" % trials)
    promotions = [(t, r) for t in trials for r in t["rungs"] if r["promoted_at"] is not None]
    check(any(r["epochs"] == 3 for _, r in promotions), "a promotion to 9: %s" % trials)
    for t, r in promotions:
        # The rule, from the records: among the trials that had completed
        # this rung when it was promoted, it was in the top floor(n / eta).
        done = [x for u in trials for x in u["rungs"]
                if x["epochs"] == r["epochs"] and x["completed_at"] <= r["promoted_at"]]
        ranked = sorted(done, key=lambda x: x["metric"])
        top = ranked[:len(done) // 3]
        check(any(x is r or x == r for x in top), "promoted %s outside the top of %s"
              % (r, ranked))
        budgets = [x["epochs"] for x in t["rungs"]]
        check(budgets == [1, 3, 9][:len(budgets)] and t["epochs_run"] == budgets[-1],
              "the promoted trial went up rung by rung: %s" % t)
        h = history(d, t["job"])
        check(len(h["loss"]) == t["epochs_run"], "%d epochs, none twice: %s"
              % (t["epochs_run"], h["loss"]))
        for x in t["rungs"]:
            check(abs(h["loss"][x["epochs"] - 1] - x["metric"]) < 1e-9,
                  "rung %d kept in history" % x["epochs"])
        events = d.req("GET", "/api/v1/jobs/%s/events" % t["job"], "alice").json()["events"]
        check(any(e["from"] == "succeeded" and e["to"] == "queued" and
                  "promoted by sweep" in (e["detail"] or "") for e in events),
              "promotion event: %s" % events)
    others = [t for t in trials if t not in [p[0] for p in promotions]]
    check(all(t["state"] == "stopped" and t["epochs_run"] == 1 for t in others),
          "the others stopped at rung 1: %s" % others)
    check(all(t["state"] in ("stopped", "succeeded") and
              (t["state"] == "succeeded") == (t["epochs_run"] == 9) for t in trials),
          "a trial below the last rung is stopped: %s" % trials)
    spent = sum(t["epochs_run"] for t in trials)
    check(spent < 9 * len(LRS) / 2, "asha spent %d epochs, the grid %d" % (spent, 9 * len(LRS)))
    check(s["best"]["epochs_run"] == 9, "best reached the last rung: %s" % s["best"])


def warm_optimizer():
    """What a PBT exploit runs (training.init_from with "path" and
    "optimizer", as sweep_pbt_run.c writes them), by hand: with momentum
    and the batches in the same order each epoch, a one-epoch warm start
    from a checkpoint's weights and optimizer state ends with the weights
    of that run resumed for one more epoch; without the optimizer state it
    does not (so the check can fail)."""
    engine = punchtest.engine_path()
    job = json.loads(json.dumps(JOB))
    job["data"]["shuffle"] = False
    job["training"]["optimizer"] = {"name": "sgd", "learning_rate": 0.1, "momentum": 0.9}
    with tempfile.TemporaryDirectory() as tmp:
        def run(name, epochs, init=None, resume_from=None):
            out = os.path.join(tmp, name)
            if resume_from:
                shutil.copytree(os.path.join(tmp, resume_from), out)
            spec = json.loads(json.dumps(job))
            spec["training"]["epochs"] = epochs
            if init:
                spec["training"]["init_from"] = dict({"job": "0123456789ab"}, **init)
            path = os.path.join(tmp, name + ".json")
            punchtest.write_json(path, spec)
            punchtest.train(engine, path, out, resume=bool(resume_from))
            return punchtest.load_safetensors(os.path.join(out, "weights.safetensors"))
        run("donor", 1)
        resumed = run("resumed", 2, resume_from="donor")
        donor = os.path.join(tmp, "donor")
        weights = "@" + os.path.join(donor, "weights.safetensors")
        carried = run("carried", 1, {"path": weights, "optimizer": "@" + os.path.join(
            donor, "checkpoints", "ckpt.bin")})
        fresh = run("fresh", 1, {"path": weights})
    check(sorted(carried) == sorted(resumed),
          "tensors: %s vs %s" % (sorted(carried), sorted(resumed)))
    for name in resumed:
        a, b = carried[name], resumed[name]
        check(a.shape == b.shape and abs(a - b).max() <= 1e-6 * max(1.0, abs(b).max()),
              "%s: warm start with the optimizer state %s, resumed %s" % (name, a, b))
    moved = max(abs(fresh[n] - resumed[n]).max() for n in resumed)
    check(moved > 1e-4, "without the optimizer state the weights differ (by %g)" % moved)


def pbt_body(seed):
    job = json.loads(json.dumps(JOB))
    job["training"]["evaluate"] = True
    return {"name": "pbt", "job": job, "search": {
        "method": "pbt", "metric": "loss", "mode": "min", "max_concurrent": 4,
        "pbt": {"population": 4, "perturb_every_epochs": 1, "generations": 2, "seed": seed},
        "parameters": {"training.optimizer.learning_rate": {"loguniform": [1e-4, 1.0]}}}}


def progress(d, jid):
    with open(os.path.join(d.run_dir(jid), "progress.jsonl")) as f:
        return [json.loads(line) for line in f if line.strip()]


def lineage_by_index(s):
    """Each trial's lineage with jobs named by trial index, and its metrics."""
    index = {t["job"]: t["index"] for t in s["trials"]}
    return [[(x["generation"], index.get(x["from_job"]), x["params"]) for x in t["pbt"]] +
            [round(r["metric"], 6) for r in t["rungs"]] for t in s["trials"]]


def pbt(d):
    sid = submit(d, "alice", pbt_body(5))
    s = wait_sweep(d, sid)
    check(s["state"] == "succeeded" and s["pbt"]["generations"] == 2, "pbt ended: %s" % s)
    trials = s["trials"]
    for t in trials:
        check([x["generation"] for x in t["pbt"]] == [0, 1] and t["pbt"][0]["from_job"] is None
              and t["epochs_run"] == 2 and t["state"] == "succeeded",
              "two generations each: %s" % t)
    # Quantile 0.25 of 4: the worst after generation 0 exploits the best.
    gen0 = sorted(trials, key=lambda t: t["rungs"][0]["metric"])
    best, worst = gen0[0], gen0[-1]
    moved = [t for t in trials if t["pbt"][1]["from_job"] is not None]
    check([t["job"] for t in moved] == [worst["job"]] and
          worst["pbt"][1]["from_job"] == best["job"], "the worst exploits the best: %s" % trials)
    lr0 = best["pbt"][0]["params"]["training.optimizer.learning_rate"]
    lr1 = worst["pbt"][1]["params"]["training.optimizer.learning_rate"]
    check(any(abs(lr1 - min(lr0 * f, 1.0)) < 1e-12 for f in (0.8, 1.2)),
          "explore: the donor's %g times 0.8 or 1.2, got %g" % (lr0, lr1))
    check(worst["params"] == worst["pbt"][1]["params"], "params are the current ones")
    # Its job's run started from the donor's weights: its evaluation before
    # training equals the donor's test loss after generation 0, and no
    # other trial's.
    before = [e for e in progress(d, worst["job"]) if e.get("event") == "evaluate"]
    check(len(before) == 1, "one fresh run with an evaluation first: %s" % before)
    ends = {t["job"]: [e for e in progress(d, t["job"]) if e.get("event") == "end"][0]
            for t in trials if t is not worst}
    same = [j for j, e in ends.items()
            if abs(e["test_loss"] - before[0]["test_loss"]) <= 1e-6 * abs(e["test_loss"])]
    check(same == [best["job"]], "warm start from the donor's weights: %s vs %s"
          % (before[0], ends))
    # ... and its optimizer state: the run's spec names the copy of the
    # donor's checkpoint (warm_optimizer checks what the engine does with it).
    ran = punchtest.read_json(os.path.join(d.run_dir(worst["job"]), "job.json"))
    optim = ran["training"]["init_from"].get("optimizer", "")
    check(optim == "@" + os.path.join(d.run_dir(worst["job"]), "pbt-init.ckpt") and
          os.path.getsize(optim[1:]) > 0, "the exploit's optimizer state: %s" % ran)
    events = d.req("GET", "/api/v1/jobs/%s/events" % worst["job"], "alice").json()["events"]
    check(any("exploited by sweep %s" % sid in (e["detail"] or "") and best["job"] in e["detail"]
              for e in events), "exploit event: %s" % events)
    check(len(history(d, worst["job"])["loss"]) == 1, "the exploit's run is a generation")
    # Trials in job lists: their sweep and params, and punch list's columns.
    rows = {j["id"]: j for j in d.req("GET", "/api/v1/jobs?limit=50", "alice").json()["jobs"]}
    for t in trials:
        check(rows[t["job"]].get("sweep") == sid and rows[t["job"]].get("params") == t["params"],
              "job row of a trial: %s" % rows.get(t["job"]))
    p = punch(d, "list", "--wide")
    row = next((line for line in p.stdout.splitlines() if line.startswith(worst["job"])), "")
    check(p.returncode == 0 and "SWEEP" in p.stdout.splitlines()[0] and sid in row and
          "learning_rate" in row, "punch list --wide: %s %s" % (p.stdout, p.stderr))
    p = punch(d, "sweep", "status", sid)
    row = next((line for line in p.stdout.splitlines() if line.startswith(worst["job"])), "")
    check(p.returncode == 0 and "FROM" in p.stdout and "1:" + best["job"] in row,
          "punch sweep status names the exploit: %s" % p.stdout)
    # The same seed decides the same: lineage (by trial index) and metrics.
    again = wait_sweep(d, submit(d, "alice", pbt_body(5)))
    check(lineage_by_index(again) == lineage_by_index(s), "reproducible: %s\n%s"
          % (lineage_by_index(again), lineage_by_index(s)))


def cancel(d):
    long_job = punchtest.job_like(JOB)
    long_job["data"] = dict(JOB["data"], synthetic_train=60000)
    long_job["training"] = dict(JOB["training"], epochs=100000)
    sid = submit(d, "alice", {"name": "long", "job": long_job, "search": {
        "method": "grid", "metric": "loss", "max_concurrent": 2,
        "parameters": {"training.optimizer.learning_rate": {"values": [0.1, 0.2, 0.3]}}}})
    s = sweep(d, "alice", sid)
    jobs = [t["job"] for t in s["trials"] if t["job"]]
    check(len(jobs) == 2 and s["trials"][2]["state"] == "pending",
          "max_concurrent 2: %s" % s["trials"])
    d.wait_state("alice", jobs[0], ("running",), timeout=60)
    r = d.req("DELETE", "/api/v1/sweeps/" + sid, "alice")
    check(r.status_code == 200 and r.json()["state"] == "cancelled", "cancel: %s" % r.text)
    for jid in jobs:
        end = d.wait_state("alice", jid, punchtest.FINAL_STATES, timeout=60)
        check(end["state"] == "cancelled", "trial %s ended %s" % (jid, end["state"]))
    s = sweep(d, "alice", sid)
    check(s["state"] == "cancelled" and s["trials"][2]["job"] is None,
          "nothing more submitted: %s" % s["trials"])
    check(d.req("DELETE", "/api/v1/sweeps/" + sid, "alice").status_code == 409, "twice: 409")


def refused(d):
    r = d.req("POST", "/api/v1/sweeps", "alice", body={"job": JOB, "search": {
        "method": "grid", "metric": "loss",
        "parameters": {"training.batch_size": {"values": [16, -3]}}}})
    check(r.status_code == 400 and "trial 1" in r.json()["error"] and
          "-3" in r.json()["error"] and r.json()["field"] == "job.training.batch_size",
          "bad trial: %d %s" % (r.status_code, r.text))
    r = d.req("POST", "/api/v1/sweeps", "alice", body={"job": JOB, "search": {
        "method": "grid", "metric": "loss",
        "parameters": {"model.layers[4].units": {"values": [16]}}}})
    check(r.status_code == 400 and "no element [4]" in r.json()["error"],
          "bad path: %d %s" % (r.status_code, r.text))
    r = d.req("POST", "/api/v1/sweeps", "alice", body={"job": JOB, "search": {
        "method": "asha", "metric": "loss", "asha": {"min_epochs": 3, "max_epochs": 1},
        "parameters": {"training.batch_size": {"values": [16]}}}})
    check(r.status_code == 400 and r.json()["field"] == "search.asha.max_epochs",
          "bad asha: %s" % r.text)


punchtest.main(cases)
