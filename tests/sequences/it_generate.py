"""it_generate.py — text generation from a trained language model through
a real punchcardd and punch-train (issue 29): a small char LSTM
(embedding -> lstm return_sequences -> dense softmax) trains for a second on the first 6 KB of Debian's fortunes, then POST
/api/v1/jobs/ID/generate gives the same text for the same seed, greedy
decoding ignores the seed and reads the context's last step, `punch generate` prints the prompt and the same
text, each bad field is a 400 naming it, a character outside the
vocabulary is a 400, another user's job a 404 and a job that is not a
language model a 409.

Skips (77) without the fortunes package."""
import os

import punchtest
from punchtest import Daemon, check, expect_error, require

FORTUNES = "/usr/share/games/fortunes/fortunes"
MAX_TOKENS = 100


def corpus():
    if not os.path.exists(FORTUNES):
        punchtest.skip("%s missing: apt-get install fortunes" % FORTUNES)
    with open(FORTUNES, "rb") as f:
        text = f.read(6000).decode("utf-8", "ignore")
    return text


def lm_job(vocab):
    return punchtest.char_lm_job(
        "charlm", vocab, "@fortunes.txt", 16, 64, 32,
        {"epochs": 10, "batch_size": 16, "optimizer": {"name": "adam", "learning_rate": 0.01},
         "seed": 1})


def punch(d, user, *args):
    import subprocess
    env = {k: v for k, v in os.environ.items() if not k.startswith("PUNCH_")}
    env.update(PUNCH_URL=d.url, PUNCH_SECRET=d.secrets[user], HOME=d.tmp)
    exe = os.environ.get("PUNCH") or punchtest.build_path("client", "punch")
    return subprocess.run([exe] + list(args), capture_output=True, text=True, env=env,
                          timeout=120)


def generate(d, jid, user="alice", **fields):
    return d.req("POST", "/api/v1/jobs/%s/generate" % jid, user, body=fields)


def train(d, text):
    r = d.req("PUT", "/api/v1/datasets/fortunes.txt", "alice", body=text.encode(),
              headers={"Content-Type": "application/octet-stream"})
    require(r.status_code == 201, "upload: %d %s" % (r.status_code, r.text[:300]))
    jid = d.submit_id("alice", lm_job(len(set(text))))
    end = d.wait_state("alice", jid, punchtest.FINAL_STATES, timeout=240)
    require(end["state"] == "succeeded", "%s\n%s" % (end, d.train_log(jid)))
    return jid


def same_seed_same_text(d, jid, vocab):
    a = generate(d, jid, prompt="The ", max_new_tokens=40, temperature=0.8, seed=7)
    require(a.status_code == 200, "generate: %d %s" % (a.status_code, a.text[:300]))
    b = generate(d, jid, prompt="The ", max_new_tokens=40, temperature=0.8, seed=7)
    ra, rb = a.json(), b.json()
    check(ra == rb, "the same seed gives the same text: %r vs %r" % (ra, rb))
    check(len(ra["tokens"]) == 40 and len(ra["text"]) == 40,
          "40 characters, 40 ids: %r" % ra)
    check(set(ra["text"]) <= vocab, "every character from the training text: %r" % ra["text"])
    check(all(0 <= t < len(vocab) for t in ra["tokens"]), ra["tokens"])
    print("generated (t=0.8, seed 7): %r" % ra["text"])
    g1 = generate(d, jid, prompt="The ", max_new_tokens=20, temperature=0, seed=1).json()
    g2 = generate(d, jid, prompt="The ", max_new_tokens=20, temperature=0, seed=2).json()
    check(g1 == g2, "greedy decoding does not depend on the seed: %r %r" % (g1, g2))
    # Each token comes from the context's last real step: greedy from "Th"
    # then its first new character is the same text one step on, and a
    # prompt with the same first character but another end gives another.
    a = generate(d, jid, prompt="Th", max_new_tokens=12, temperature=0).json()["text"]
    b = generate(d, jid, prompt="Th" + a[0], max_new_tokens=11, temperature=0).json()["text"]
    check(b == a[1:], "greedy from 'Th' %r, from 'Th%s' %r" % (a, a[0], b))
    c = generate(d, jid, prompt="The man", max_new_tokens=12, temperature=0).json()["text"]
    check(c != a, "'The man' and 'Th' continue differently: %r %r" % (c, a))
    # A prompt longer than the model's 32 steps: the context is its tail.
    r = generate(d, jid, prompt="A" * 50 + "The ", max_new_tokens=5, top_k=3, seed=3)
    check(r.status_code == 200 and len(r.json()["tokens"]) == 5, r.text[:300])
    return ra


def client_prints(d, jid, want):
    proc = punch(d, "alice", "generate", jid, "The ", "--max-new-tokens", "40",
                 "--temperature", "0.8", "--seed", "7")
    check(proc.returncode == 0, "punch generate: %s %s" % (proc.stdout, proc.stderr))
    check(proc.stdout == "The " + want["text"] + ("" if want["text"].endswith("\n") else "\n"),
          "punch generate prints the prompt and the text: %r" % proc.stdout)
    proc = punch(d, "alice", "generate", jid, "The ", "--max-new-tokens", "0")
    check(proc.returncode == 2 and "max_new_tokens" in proc.stderr,
          "a bad field: %d %s" % (proc.returncode, proc.stderr))


def bad_requests(d, jid):
    for fields, field in ((dict(prompt=""), "prompt"), (dict(max_new_tokens=3), "prompt"),
                          (dict(prompt="a" * 5000), "prompt"),
                          (dict(prompt="a", max_new_tokens=0), "max_new_tokens"),
                          (dict(prompt="a", max_new_tokens=MAX_TOKENS + 1), "max_new_tokens"),
                          (dict(prompt="a", temperature="hot"), "temperature"),
                          (dict(prompt="a", temperature=-1), "temperature"),
                          (dict(prompt="a", top_k=-1), "top_k"),
                          (dict(prompt="a", seed=1.5), "seed"),
                          (dict(prompt="a", length=3), "length")):
        e = expect_error(generate(d, jid, **fields), 400, "%r" % fields)
        check(e["field"] == field, "%r: field %r, want %r" % (fields, e["field"], field))
    e = expect_error(generate(d, jid, prompt="\u2603 snow"), 400, "a character not in the text")
    check("U+2603" in e["error"] and "vocabulary" in e["error"] and e["field"] == "prompt", e)
    expect_error(generate(d, jid, "bob", prompt="The "), 404, "bob generates with alice's job")


def not_a_language_model(d):
    jid = d.submit_id("alice", punchtest.QUICK_JOB)
    end = d.wait_state("alice", jid, punchtest.FINAL_STATES, timeout=120)
    require(end["state"] == "succeeded", end)
    e = expect_error(generate(d, jid, prompt="The "), 409, "a classifier")
    check("not a language model" in e["error"], e)


def cases():
    punchtest.require_engine()
    text = corpus()
    with Daemon(["--generate-max-tokens", str(MAX_TOKENS)]) as d:
        jid = train(d, text)
        want = punchtest.case("the same seed gives the same text", same_seed_same_text, d,
                              jid, set(text))
        if want:
            punchtest.case("punch generate prints it", client_prints, d, jid, want)
        punchtest.case("bad requests: 400 naming the field, 404 for bob", bad_requests, d, jid)
        punchtest.case("a job that is not a language model: 409", not_a_language_model, d)
        punchtest.case("a byte-level gpt trains and generates reproducibly", byte_gpt, d)


def byte_gpt(d):
    """Issue 29: the gpt preset (a small one) on the same upload's bytes,
    with adamw, a cosine schedule and clip_norm, through punchcardd; its
    validation loss falls, and /generate gives the same text for a seed."""
    job = {"name": "bytegpt",
           "model": {"preset": "gpt", "input": {"tokens": 256}, "n_layer": 1, "n_head": 2,
                     "n_embd": 32, "block_size": 32, "dropout": 0},
           "data": {"format": "text", "train": "@fortunes.txt", "tokenizer": "byte",
                    "num_classes": 256, "max_length": 32, "validation_split": 0.1},
           "training": {"epochs": 4, "batch_size": 32, "seed": 1,
                        "optimizer": {"name": "adamw", "learning_rate": 0.003},
                        "clip_norm": 1.0,
                        "lr_schedulers": [{"name": "cosine", "warmup_steps": 5}]}}
    jid = d.submit_id("alice", job)
    end = d.wait_state("alice", jid, punchtest.FINAL_STATES, timeout=240)
    require(end["state"] == "succeeded", "%s\n%s" % (end, d.train_log(jid)))
    hist = d.req("GET", "/api/v1/jobs/%s/history" % jid, "alice").json()
    # A uniform guess over 256 bytes costs ln 256 = 5.55 nats.
    check(hist["val_loss"][-1] < 4.0, "validation loss %s" % hist["val_loss"])
    a = generate(d, jid, prompt="The ", max_new_tokens=24, temperature=0.9, top_k=40, seed=5)
    b = generate(d, jid, prompt="The ", max_new_tokens=24, temperature=0.9, top_k=40, seed=5)
    require(a.status_code == 200, "generate: %d %s" % (a.status_code, a.text[:300]))
    check(a.json() == b.json() and len(a.json()["tokens"]) == 24, "%r vs %r" % (a.json(), b.json()))


if __name__ == "__main__":
    punchtest.main(cases)
