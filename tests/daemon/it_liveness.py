"""it_liveness.py — stalls against a real punchcardd (stand-in engines, no
training): with --stall-grace 10, a job whose ranks report nothing is ended
as stalled within seconds, saying so, and its processes are gone; a job
that keeps reporting (a line to progress.jsonl every 0.3 s for about 15 s,
longer than the grace) runs to its end. The grace also covers the start:
mpirun's launch on busy cores took over 2 s before the first line, and over
6 s in a fresh-machine run beside other builds."""
import time

import punchtest
from punchtest import FINAL_STATES, QUICK_JOB, Daemon, check, job_like

# Reports when its job is named "reporter", else hangs (as a rank blocked on
# a lost host does) for at most 60 s.
ENGINE = punchtest.stand_in_engine("""if grep -q '"reporter"' "$out/job.json"; then
  i=0
  while [ $i -lt 50 ]; do
    echo '{"event":"step"}' >> "$out/progress.jsonl"
    sleep 0.3
    i=$((i+1))
  done
  exit 0
fi
sleep 60
""")


def cases():
    d = Daemon(["--slots", "2", "--max-running", "2", "--stall-grace", "10",
                "--stall-factor", "1"])
    d.engine_script("stand-in-engine", ENGINE)
    with d:
        punchtest.case("silent job stalls, reporting job does not", stalls, d)


def stalls(d):
    silent = d.submit_id("alice", job_like(QUICK_JOB, name="silent"))
    busy = d.submit_id("alice", job_like(QUICK_JOB, name="reporter"))
    d.wait_state("alice", silent, ["running"] + list(FINAL_STATES), timeout=30)
    began = time.time()
    end = d.wait_state("alice", silent, FINAL_STATES, timeout=30)
    took = time.time() - began
    check(end["state"] == "failed" and end["error"].startswith(
        "stalled: no progress reported for"), end)
    check(took < 25, "stalled after %.1f s with a 10 s grace" % took)
    sup = d.supervisor(silent)
    punchtest.wait_for(lambda: not punchtest.session_processes(sup["sid"]),
                       "the stalled job's processes to end", timeout=20)
    end = d.wait_state("alice", busy, FINAL_STATES, timeout=60)
    check(end["state"] == "succeeded", end)


if __name__ == "__main__":
    punchtest.main(cases)
