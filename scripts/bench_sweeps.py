#!/usr/bin/python3
"""bench_sweeps.py — PBT against a grid and random search on the same
configurations (docs/performance.md, "Sweeps: PBT against grid and random
search"): the worked example's MLP (sweeps.md) with momentum 0.9, so an
exploit carries optimizer state that matters. PBT (population 4, 4
generations of 2 epochs, seed 7) first; then a grid over the four learning
rates PBT started from at its 8 epochs, and random searches of 4 and 8
trials with the same seed and distribution (4 draws the same four rates).
Each through one 2-slot punchcardd (the tests' harness), 4 trials at once.
Prints per search: epochs trained, runs started, wall time (submit to the
sweep's end), the best loss and its params.

Run from a built tree: PUNCH_SOURCE_ROOT=$PWD PYTHONPATH=tests/pylib
scripts/bench_sweeps.py"""
import time

from punchtest import Daemon

JOB = {"name": "lr-sweep",
       "model": {"input": [8], "layers": [{"type": "dense", "units": 16, "activation": "relu"},
                                          {"type": "dense", "units": 4, "activation": "softmax"}]},
       "data": {"format": "synthetic", "synthetic_train": 2048, "synthetic_test": 256,
                "num_classes": 4},
       "training": {"epochs": 8, "batch_size": 32, "seed": 1,
                    "optimizer": {"name": "sgd", "learning_rate": 0.1, "momentum": 0.9}}}
LR = "training.optimizer.learning_rate"
SEARCH = {"metric": "loss", "mode": "min", "max_concurrent": 4}


def run(d, name, search):
    """Submit, poll until the sweep ends; (sweep, epochs, runs, seconds)."""
    t0 = time.monotonic()
    r = d.req("POST", "/api/v1/sweeps", "alice",
              body={"name": name, "job": JOB, "search": dict(SEARCH, **search)})
    if r.status_code != 201:
        raise SystemExit("%s: %d %s" % (name, r.status_code, r.text))
    while True:
        s = d.req("GET", "/api/v1/sweeps/" + r.json()["id"], "alice").json()
        if s["state"] != "running":
            break
        time.sleep(0.1)
    wall = time.monotonic() - t0
    runs = sum(1 for t in s["trials"]
               for e in d.req("GET", "/api/v1/jobs/%s/events" % t["job"], "alice").json()["events"]
               if e["to"] == "running")
    return s, sum(t["epochs_run"] for t in s["trials"]), runs, wall


def report(name, result):
    s, epochs, runs, wall = result
    print("%-28s %-9s epochs %3d  runs %2d  %6.1f s  best loss %.5f  lr %.6g"
          % (name, s["state"], epochs, runs, wall, s["best"]["metric"], s["best"]["params"][LR]))


def main():
    with Daemon(["--slots", "2"]) as d:
        pbt = run(d, "lr-pbt", {"method": "pbt", "parameters": {LR: {"loguniform": [1e-4, 1.0]}},
                                "pbt": {"population": 4, "perturb_every_epochs": 2,
                                        "generations": 4, "seed": 7}})
        report("pbt", pbt)
        for t in pbt[0]["trials"]:
            print("    gen (donor, lr) -> loss:",
                  ["%d (%s, %.4g) -> %.5f" % (g["generation"], g["from_job"], g["params"][LR],
                                              r["metric"]) for g, r in zip(t["pbt"], t["rungs"])])
        start = [t["pbt"][0]["params"][LR] for t in pbt[0]["trials"]]
        report("grid (pbt's 4 start rates)",
               run(d, "lr-grid", {"method": "grid", "parameters": {LR: {"values": start}}}))
        for k in (4, 8):
            report("random %d (seed 7)" % k,
                   run(d, "lr-random", {"method": "random", "trials": k, "seed": 7,
                                        "parameters": {LR: {"loguniform": [1e-4, 1.0]}}}))


if __name__ == "__main__":
    main()
