"""it_retention.py — checkpoint retention: a job whose model_checkpoint saves
after each of 4 epochs keeps only the newest save by default
(training.checkpoint_keep 1), the two newest with checkpoint_keep 2, and all
four with checkpoint_keep 0; the resume checkpoint stays either way."""
import copy
import os

import punchtest
from punchtest import FINAL_STATES, QUICK_JOB, Daemon, check


def job(keep=None):
    j = copy.deepcopy(QUICK_JOB)
    j["training"]["epochs"] = 4
    j["training"]["lr_schedulers"] = [{"name": "model_checkpoint", "every_epochs": 1}]
    if keep is not None:
        j["training"]["checkpoint_keep"] = keep
    return j


def cases():
    punchtest.require_engine()
    with Daemon(["--max-running", "0"]) as d:
        punchtest.case("old model_checkpoint saves are pruned", pruned, d)


def saves(d, jid):
    names = os.listdir(os.path.join(d.run_dir(jid), "checkpoints"))
    return sorted(n for n in names if n.startswith("weights-epoch-")), names


def pruned(d):
    want = {None: ["004"], 2: ["003", "004"], 0: ["001", "002", "003", "004"]}
    ids = {keep: d.submit_id("alice", job(keep)) for keep in want}
    for keep, jid in ids.items():
        j = d.wait_state("alice", jid, FINAL_STATES, timeout=60)
        check(j["state"] == "succeeded", "keep %s: %s\n%s" % (keep, j, d.train_log(jid)))
        kept, names = saves(d, jid)
        epochs = sorted({n[len("weights-epoch-"):][:3] for n in kept})
        check(epochs == want[keep], "checkpoint_keep %s kept epochs %s: %s" % (keep, epochs, kept))
        check(len(kept) == 2 * len(want[keep]), "safetensors and npz of each: %s" % kept)
        check("ckpt.bin" in names, "the resume checkpoint is gone: %s" % names)


if __name__ == "__main__":
    punchtest.main(cases)
