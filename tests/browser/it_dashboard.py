"""it_dashboard.py — the dashboard (GET /) in headless Chromium against a real
punchcardd and punch-train, one browser session for every case: sign in with
the secret; a running job's progress moves in the list and its loss curve
grows on its page; a finished job's weights download byte for byte as the
API serves them, and so does one of its run files; a bad spec shows the
server's field-named error; a job is cancelled from its page, then resumed
from it with the keyboard; another user sees none of the first user's jobs;
the admin sees everyone's, with owners, the state filter and the cluster; a
finished char language model's page generates the text the API gives; a 2x2 grid
sweep's page lists its trials sorted by the metric with the best marked,
overlays the picked trials' curves and draws one parallel-coordinates line
a trial; a PBT sweep's page shows each member's generation and its exploit's
donor, and the metric at each generation's end; the list overlays the curves
of the jobs ticked in it.
Throughout: no request leaves the origin and the console has no errors
(beyond the API's expected refusals). Screenshots of the list and the job
page go to $PUNCH_SCREENSHOTS.

Needs Debian's chromium, chromium-driver and python3-selenium (skips, 77,
without them)."""
import json
import os
import shutil
import socket
import tempfile
import time

import punchtest
from punchtest import FINAL_STATES, QUICK_JOB, Daemon, check, job_like, synthetic_job

try:
    from selenium import webdriver
    from selenium.common.exceptions import WebDriverException
    from selenium.webdriver.chrome.service import Service
    from selenium.webdriver.common.by import By
    from selenium.webdriver.common.keys import Keys
    from selenium.webdriver.support.ui import Select
except ImportError:
    webdriver = None

CHROMIUM, CHROMEDRIVER = "/usr/bin/chromium", "/usr/bin/chromedriver"
# Short epochs (about 0.15 s each on 2 cores, ten times that under ASan):
# the progress moves and the curve grows while the page watches, then the
# page cancels it.
GROWING_JOB = synthetic_job("growing", 64, [(256, "relu"), (10, "softmax")], 40000, 100, 200)
BAD_JOB = synthetic_job("bad", 8, [(4, "softmax")], 256, 64, 0, num_classes=4)


def browser(downloads):
    opts = webdriver.ChromeOptions()
    opts.binary_location = CHROMIUM
    for a in ("--headless=new", "--no-sandbox", "--disable-dev-shm-usage", "--disable-gpu",
              "--window-size=1280,860", "--disable-extensions", "--no-first-run",
              "--disable-background-networking", "--disable-component-update",
              "--disable-sync", "--disable-default-apps"):
        opts.add_argument(a)
    opts.add_experimental_option("prefs", {"download.default_directory": downloads,
                                           "download.prompt_for_download": False})
    opts.set_capability("goog:loggingPrefs", {"browser": "ALL"})
    drv = webdriver.Chrome(service=Service(CHROMEDRIVER), options=opts)
    drv.execute_cdp_cmd("Page.setDownloadBehavior", {"behavior": "allow",
                                                     "downloadPath": downloads})
    return drv


class Page:
    """The dashboard in one browser, with the checks every case shares."""

    def __init__(self, drv, d):
        self.drv, self.d = drv, d
        self.console = []  # every console entry seen, for the final check

    def find(self, css):
        return self.drv.find_element(By.CSS_SELECTOR, css)

    def finds(self, css):
        return self.drv.find_elements(By.CSS_SELECTOR, css)

    def text(self, css):
        """The element's text now, "" if absent (one script call, so a
        redraw in between cannot leave a stale element)."""
        return self.drv.execute_script(
            "const e = document.querySelector(arguments[0]); return e ? (e.innerText ?? e.textContent) : ''", css)

    def wait(self, get, what, timeout=60):
        return punchtest.wait_for(get, what, timeout=timeout, interval=0.05)

    def sign_in(self, user):
        self.drv.get(self.d.url + "/")
        self.wait(lambda: self.find("#secret").is_displayed(), "the sign-in form")
        self.find("#secret").send_keys(self.d.secrets[user])
        self.find("#secret").submit()
        self.wait(lambda: self.find("#signout").is_displayed(), "signed in as " + user)
        self.wait(lambda: "live" in self.text("#live"), "the live stream")

    def sign_out(self):
        self.find("#signout").click()
        self.wait(lambda: self.find("#secret").is_displayed(), "signed out")
        check(self.drv.execute_script("return sessionStorage.length") == 0,
              "the secret left sessionStorage on sign-out")

    def rows(self):
        """The list's rows: {job id: [cell texts]}, read in one script call."""
        return self.drv.execute_script(
            "const o = {}; for (const r of document.querySelectorAll('#jobs-table tbody tr'))"
            "  o[r.dataset.job] = [...r.cells].map(c => c.innerText); return o")

    def collect_console(self):
        self.console += self.drv.get_log("browser")


def cases():
    if webdriver is None:
        punchtest.skip("python3-selenium is missing (apt-get install python3-selenium)")
    for tool in (CHROMIUM, CHROMEDRIVER):
        if not os.access(tool, os.X_OK):
            punchtest.skip("%s is missing (apt-get install chromium chromium-driver)" % tool)
    try:
        socket.getaddrinfo("localhost", None)
    except socket.gaierror:
        # chromedriver reaches the browser's DevTools at "localhost".
        punchtest.skip("localhost does not resolve here (no /etc/hosts?): chromedriver cannot "
                       "reach chromium")
    punchtest.require_engine()
    shots = os.environ.get("PUNCH_SCREENSHOTS") or punchtest.build_path("tests", "browser")
    downloads = tempfile.mkdtemp(prefix="punch-dl-")
    try:
        with Daemon(["--slots", "4", "--max-running", "4"]) as d:
            try:
                drv = browser(downloads)
            except WebDriverException as e:
                punchtest.skip("chromium would not start headless: %s" % str(e).splitlines()[0])
            p = Page(drv, d)
            try:
                punchtest.case("page and headers", page_headers, d)
                quick = d.submit_id("alice", job_like(QUICK_JOB, name="quick"))
                punchtest.case("sign in", p.sign_in, "alice")
                punchtest.case("a bad spec shows the field-named error", bad_spec, p)
                jid = punchtest.case("progress moves in the list", list_progress, p, shots)
                if jid:
                    punchtest.case("the curve grows; cancel from the page", growing, p, jid, shots)
                    punchtest.case("resume from the page", resume, p, jid)
                punchtest.case("a finished job's page", finished, p, quick)
                punchtest.case("weights download as the API serves them", weights, p, quick,
                               downloads)
                punchtest.case("a run file downloads as the API serves it", run_file, p, quick,
                               downloads)
                punchtest.case("a sweep's page: trials, best, curves, axes", sweep_page, p)
                punchtest.case("a PBT sweep's page: generations and lineage", pbt_page, p)
                punchtest.case("the list overlays ticked jobs' curves", list_compare, p, quick)
                punchtest.case("another user sees none of alice's jobs", other_user, p)
                punchtest.case("the admin sees everyone's", admin, p)
                punchtest.case("a language model's page generates text", language_model, p)
                punchtest.case("nothing left the origin", same_origin, p)
                punchtest.case("no console errors", console_clean, p)
            finally:
                drv.quit()
    finally:
        shutil.rmtree(downloads, ignore_errors=True)


def page_headers(d):
    r = d.req("GET", "/")
    check(r.status_code == 200 and r.headers["Content-Type"].startswith("text/html"), r.headers)
    csp = r.headers.get("Content-Security-Policy", "")
    check("default-src 'none'" in csp and "script-src 'self'" in csp and
          "connect-src 'self'" in csp, "CSP: " + csp)
    r2 = d.req("GET", "/ui/app.js", headers={"If-None-Match": r.headers.get("ETag", "")})
    check(r2.status_code == 200, "app.js: %d" % r2.status_code)
    r3 = d.req("GET", "/ui/app.js", headers={"If-None-Match": r2.headers["ETag"]})
    check(r3.status_code == 304, "app.js again with its ETag: %d" % r3.status_code)
    total = sum(len(d.req("GET", u).content) for u in ("/", "/ui/app.js", "/ui/app.css"))
    check(total < 100 * 1024, "the page is %d bytes" % total)
    check(d.req("GET", "/ui/nothing.js").status_code == 404, "unknown asset")


def bad_spec(p):
    p.drv.get(p.d.url + "/#/submit")
    area = p.find("#spec-text")
    p.wait(lambda: area.is_displayed(), "the submit page")
    area.clear()
    area.send_keys(json.dumps(BAD_JOB))
    p.find("#submit-btn").click()
    err = p.wait(lambda: p.text("#submit-error"), "the submit error")
    check(err.startswith("training.epochs"), "error shown: %r" % err)
    p.collect_console()


def list_progress(p, shots):
    """Alice's running job in the list: its progress label takes several
    values while it trains, its Setup cell the key hyperparameters.
    Returns its id."""
    p.drv.get(p.d.url + "/#/")
    jid = p.d.submit_id("alice", GROWING_JOB)
    seen = set()

    def moved():
        label = p.text('#jobs-table tr[data-job="%s"] .progress-label' % jid)
        if "/" in label:
            seen.add(label)
        return len(seen) >= 3
    p.wait(moved, lambda _: "the progress label to change (seen %s)" % sorted(seen))
    # Its key hyperparameters, from the list's own rows (the job's hparams).
    h = p.d.job("alice", jid)["hparams"]
    setup = p.text('#jobs-table tr[data-job="%s"] td.hparams' % jid)
    check(setup.startswith(h["model"] + " " + h["optimizer"] + " lr ")
          and ("bs %d" % h["batch_size"]) in setup and ("%d epochs" % h["epochs"]) in setup,
          "the Setup cell: %r for %s" % (setup, h))
    p.drv.save_screenshot(os.path.join(shots, "dashboard-jobs.png"))
    p.collect_console()
    return jid


def loss_points(p):
    try:
        return p.drv.execute_script(
            "const s = document.querySelector('#job-charts svg[data-metric=loss]');"
            "return s ? Number(s.getAttribute('data-points')) : 0")
    except WebDriverException:
        return 0


def growing(p, jid, shots):
    """The loss curve's point count grows while the job's page is open; the
    page's Cancel (confirmed) then ends the job."""
    p.drv.get(p.d.url + "/#/job/" + jid)
    counts = set()

    def grew():
        n = loss_points(p)
        if n:
            counts.add(n)
        return len(counts) >= 2
    p.wait(grew, lambda _: "the loss curve to grow (point counts seen: %s)" % sorted(counts))
    p.drv.save_screenshot(os.path.join(shots, "dashboard-job.png"))
    p.find("#job-cancel").click()
    alert = p.wait(lambda: _alert(p.drv), "the confirmation")
    alert.accept()
    p.wait(lambda: p.text("#job-state") == "cancelled", "the page to show cancelled")
    check(p.d.job("alice", jid)["state"] == "cancelled", "the API agrees")
    p.collect_console()


def resume(p, jid):
    """The cancelled job's page offers Resume (Enter, then confirmed): the
    job is back in the queue under its id, the page follows it, and its
    events say who resumed it. The API then cancels it again, to free the
    slots for the cases after this one."""
    button = p.wait(lambda: p.find("#job-resume").is_displayed() and p.find("#job-resume"),
                    "the Resume button")
    button.send_keys(Keys.ENTER)
    alert = p.wait(lambda: _alert(p.drv), "the confirmation")
    check(jid in alert.text, "the confirmation names the job: %r" % alert.text)
    alert.accept()
    again = ("queued", "starting", "running")
    state = p.wait(lambda: p.text("#job-state") in again and p.text("#job-state"),
                   lambda _: "the page to show the job %s again (shows %r)" % (
                       "/".join(again), p.text("#job-state")))
    check(p.d.job("alice", jid)["state"] in again + ("succeeded",), "the API agrees (%s)" % state)
    p.wait(lambda: "resumed by alice" in p.text("#job-events"), "the resume in the events")
    check(not p.find("#job-resume").is_displayed(), "Resume is offered only for an ended job")
    p.d.req("DELETE", "/api/v1/jobs/" + jid, "alice")
    p.d.wait_state("alice", jid, FINAL_STATES, timeout=120)
    # Issue 31 #14: a job that did not succeed has no weights to offer.
    p.wait(lambda: p.text("#job-state") in FINAL_STATES, "the page to show the end")
    p.wait(lambda: not p.find('[data-download="weights?format=npz"]').is_displayed() and
           not p.find('[data-download="export?format=onnx"]').is_displayed(),
           "no weights or model offered for a cancelled job")
    check(p.find('[data-download="history"]').is_displayed(), "its history is offered")
    p.collect_console()


def finished(p, jid):
    """A succeeded job: its curve has every epoch, its events, spec and log."""
    p.d.wait_state("alice", jid, FINAL_STATES, timeout=120)
    p.drv.get(p.d.url + "/#/job/" + jid)
    p.wait(lambda: p.text("#job-state") == "succeeded", "the page to show succeeded")
    p.wait(lambda: loss_points(p) == 2, "both epochs drawn")
    p.wait(lambda: len(p.finds("#job-events li")) == 4, "the four events")
    events = [li.text for li in p.finds("#job-events li")]
    check("succeeded" in events[-1], "events: %s" % events)
    p.wait(lambda: '"name": "quick"' in p.text("#job-spec"), "the spec, pretty-printed")
    p.wait(lambda: p.text("#job-log"), "the log")
    check(not p.find("#job-generate").is_displayed(), "no prompt box on a classifier")
    check(p.find('[data-download="weights?format=npz"]').is_displayed(), "weights offered")
    # Hover over the last epoch: the read-out names it.
    last = p.finds("#job-charts svg[data-metric=loss] rect.hover")[-1]
    webdriver.ActionChains(p.drv).move_to_element(last).perform()
    p.wait(lambda: "epoch 2" in p.text("#job-charts svg[data-metric=loss] .readout"),
           "the hover read-out")
    p.collect_console()


def list_compare(p, quick):
    """Ticking two finished jobs in the list overlays their loss curves in
    one chart (a colour each); unticking one removes its curve."""
    js = p.drv.execute_script
    other = next(j["id"] for j in p.d.req("GET", "/api/v1/jobs?state=succeeded&name=trial",
                                          "alice").json()["jobs"])
    p.drv.get(p.d.url + "/#/")
    curves = lambda: js("return [...document.querySelectorAll("
                        "'#jobs-charts svg[data-metric=loss] polyline')].map(l => l.dataset.series)")
    for jid in (quick, other):
        p.wait(lambda: p.finds('#jobs-table input[data-job="%s"]' % jid), "the row of " + jid)
        js("document.querySelector('#jobs-table input[data-job=\"%s\"]').click()" % jid)
    p.wait(lambda: sorted(curves()) == sorted([quick, other]),
           lambda _: "two loss curves (%s)" % curves())
    colours = js("return [...document.querySelectorAll('#jobs-charts svg[data-metric=loss] "
                 "polyline')].map(l => l.getAttribute('class'))")
    check(len(set(colours)) == 2, "a colour each: %s" % colours)
    js("document.querySelector('#jobs-table input[data-job=\"%s\"]').click()" % quick)
    p.wait(lambda: curves() == [other], lambda _: "one curve once quick is unticked (%s)" % curves())
    p.collect_console()


# Two learning rates by two batch sizes of the quick job: four trials of
# two short epochs each.
SWEEP = {"name": "grid-ui", "job": job_like(QUICK_JOB, name="trial"),
         "search": {"method": "grid", "metric": "loss", "max_concurrent": 4,
                    "parameters": {"training.optimizer.learning_rate": {"values": [0.001, 0.5]},
                                   "training.batch_size": {"values": [16, 64]}}}}


def sweep_page(p):
    """The sweeps list links the sweep; its page shows the four trials in
    the API's metric order, best first and marked; the five best (all four)
    are picked, so each chart overlays four curves; unticking one removes
    its curve; the parallel coordinates have an axis per parameter plus the
    metric and a line per trial, the best's marked."""
    js = p.drv.execute_script
    r = p.d.req("POST", "/api/v1/sweeps", "alice", body=SWEEP)
    check(r.status_code == 201, "sweep submit: %d %s" % (r.status_code, r.text))
    sid = r.json()["id"]
    p.drv.get(p.d.url + "/#/sweeps")
    p.wait(lambda: p.finds('#sweeps-table tr[data-sweep="%s"] a' % sid), "the sweep in the list")
    # One script call: the list redraws at every trial's state change.
    js("document.querySelector('#sweeps-table tr[data-sweep=\"%s\"] a')"
                         ".click()" % sid)
    p.wait(lambda: p.text("#sweep-state") == "succeeded",
           lambda _: "the page to show the sweep succeeded (shows %r)" % p.text("#sweep-state"))
    w = p.d.req("GET", "/api/v1/sweeps/" + sid, "alice").json()
    check(w["state"] == "succeeded" and len(w["trials"]) == 4, "the API: %s" % w)
    want = [t["job"] for t in sorted(w["trials"], key=lambda t: t["metric"])]
    check(want[0] == w["best"]["job"], "the API's best %s is the lowest loss %s" % (w["best"], want))
    shown = lambda: p.drv.execute_script(
        "return [...document.querySelectorAll('#sweep-trials tbody tr')].map(r => r.dataset.job)")
    p.wait(lambda: shown() == want, lambda _: "trials %s, want %s" % (shown(), want))
    marked = js("return [...document.querySelectorAll('#sweep-trials tbody tr.best')]"
                ".map(r => [r.dataset.job, r.querySelector('.best-mark').textContent])")
    check(marked == [[want[0], "\u2605 best"]], "the best row is marked: %s" % marked)
    metric = p.text('#sweep-trials tr[data-job="%s"] .metric' % want[0])
    check(abs(float(metric) - w["best"]["metric"]) < 1e-4, "best metric shown %r" % metric)
    curves = lambda: len(p.finds("#sweep-charts svg[data-metric=loss] polyline"))
    p.wait(lambda: curves() == 4, lambda _: "four loss curves (%d)" % curves())
    points = js("return document.querySelector('#sweep-charts svg[data-metric=loss]')"
                ".getAttribute('data-points')")
    check(points == "2", "two epochs a curve: %s" % points)
    js("document.querySelector('#sweep-trials input[data-job=\"%s\"]').click()" % want[-1])
    p.wait(lambda: curves() == 3, lambda _: "three curves once one is unticked (%d)" % curves())
    check(not p.finds('#sweep-charts polyline[data-series="%s"]' % want[-1]), "the unticked one went")
    axes = js("return document.querySelector('#sweep-parcoords svg').getAttribute('data-axes')")
    check(axes == "3", "axes: %s" % axes)
    lines = js("return [...document.querySelectorAll('#sweep-parcoords polyline')]"
               ".map(l => [l.dataset.job, l.classList.contains('best')])")
    check(sorted(j for j, _ in lines) == sorted(want), "one line a trial: %s" % lines)
    check([j for j, b in lines if b] == [want[0]], "the best's line is marked: %s" % lines)
    check(js("return document.getElementById('sweep-stage-col').hidden") and
          not p.finds("#sweep-trials td.stage"), "a grid has no rung or lineage column")
    p.drv.save_screenshot(os.path.join(os.environ.get("PUNCH_SCREENSHOTS") or
                                       punchtest.build_path("tests", "browser"), "dashboard-sweep.png"))
    p.collect_console()


# Two members of one-epoch generations, twice: the worse of the two
# exploits the better at the boundary (quantile 0.5 of 2).
PBT_SWEEP = {"name": "pbt-ui", "job": job_like(QUICK_JOB, name="member"),
             "search": {"method": "pbt", "metric": "loss", "max_concurrent": 2,
                        "pbt": {"population": 2, "perturb_every_epochs": 1, "generations": 2,
                                "quantile": 0.5, "seed": 3},
                        "parameters": {"training.optimizer.learning_rate":
                                       {"loguniform": [0.001, 0.5]}}}}


def pbt_page(p):
    """A PBT sweep's page says its population and generations, shows each
    member's generation and, for the one that exploited, a link to its
    donor's job as the API's lineage says; the metric-per-generation chart
    has a point a generation and a line a member."""
    js = p.drv.execute_script
    r = p.d.req("POST", "/api/v1/sweeps", "alice", body=PBT_SWEEP)
    check(r.status_code == 201, "sweep submit: %d %s" % (r.status_code, r.text))
    sid = r.json()["id"]
    p.drv.get(p.d.url + "/#/sweep/" + sid)
    # The hash moves from the grid's page: its facts stay until this loads.
    shown = lambda: js("return [document.getElementById('sweep-title').textContent, "
                       "document.getElementById('sweep-state').textContent]")
    p.wait(lambda: sid in shown()[0] and shown()[1] == "succeeded",
           lambda _: "the page to show the sweep succeeded (shows %r)" % shown())
    w = p.d.req("GET", "/api/v1/sweeps/" + sid, "alice").json()
    want = {t["job"]: " ".join("%d:%s" % (g["generation"], g["from_job"])
                               for g in t["pbt"] if g["from_job"]) for t in w["trials"]}
    check(sum(1 for v in want.values() if v) == 1, "one member exploited: %s" % w["trials"])
    rows = lambda: js("return [...document.querySelectorAll('#sweep-trials tbody tr')].map(r => "
                      "[r.dataset.job, r.querySelector('td.lineage').dataset.generation, "
                      "r.querySelector('td.lineage').dataset.from, "
                      "[...r.querySelectorAll('td.lineage a')].map(a => a.textContent).join(' ')])")
    expect = sorted([j, "1", v, " ".join(x.split(":")[1] for x in v.split())]
                    for j, v in want.items())
    p.wait(lambda: sorted(rows()) == expect, lambda _: "lineage %s, want %s" % (rows(), expect))
    check(p.text("#sweep-stage-col") == "Generation, lineage", "the column's header")
    check("population 2, 2 generations of 1 epochs" in p.text("#sweep-facts"),
          "the search facts: %r" % p.text("#sweep-facts"))
    gens = lambda: js("const s = document.getElementById('sweep-generations'); return s ? "
                      "[s.getAttribute('data-points'), s.querySelectorAll('polyline').length] "
                      ": null")
    p.wait(lambda: gens() == ["2", 2], lambda _: "the generations chart: %s" % gens())
    p.collect_console()


def language_model(p):
    """A finished char language model's page has a prompt box; Generate shows
    the prompt and the text the API gives for the same request. A classifier's
    page has none (checked on the way back)."""
    text = ("the cat sat on the mat.\nthe dog sat on the log!\n" * 12).encode()
    r = p.d.req("PUT", "/api/v1/datasets/tiny.txt", "alice", body=text,
                headers={"Content-Type": "application/octet-stream"})
    check(r.status_code == 201, "upload: %d %s" % (r.status_code, r.text[:200]))
    vocab = len(set(text.decode()))
    lm = p.d.submit_id("alice", punchtest.char_lm_job(
        "tiny-lm", vocab, "@tiny.txt", 8, 16, 16, {"epochs": 2, "batch_size": 8, "seed": 1}))
    end = p.d.wait_state("alice", lm, FINAL_STATES, timeout=120)
    check(end["state"] == "succeeded", "the language model: %s" % end)
    p.drv.get(p.d.url + "/#/job/" + lm)
    p.wait(lambda: p.find("#job-generate").is_displayed(), "the prompt box")
    p.find("#gen-prompt").send_keys("the ")
    tokens = p.find("#gen-tokens")
    tokens.clear()
    tokens.send_keys("12")
    temp = p.find("#gen-temperature")
    temp.clear()
    temp.send_keys("0")
    p.find("#gen-btn").click()
    want = p.d.req("POST", "/api/v1/jobs/%s/generate" % lm, "alice",
                   body={"prompt": "the ", "max_new_tokens": 12, "temperature": 0,
                         "top_k": 0, "seed": 0}).json()["text"]
    p.wait(lambda: p.text("#gen-output") == "the " + want,
           "the generated text %r" % ("the " + want))
    p.collect_console()


def weights(p, jid, downloads):
    p.find('[data-download="weights?format=safetensors"]').click()
    path = os.path.join(downloads, "%s-weights.safetensors" % jid)
    p.wait(lambda: os.path.exists(path) and not os.path.exists(path + ".crdownload") and
           os.path.getsize(path) > 0, "the downloaded " + path)
    api = p.d.req("GET", "/api/v1/jobs/%s/weights" % jid, "alice").content
    with open(path, "rb") as f:
        got = f.read()
    check(got == api, "downloaded %d bytes, the API serves %d" % (len(got), len(api)))
    p.collect_console()


def run_file(p, jid, downloads):
    """The page lists the run directory as the API does; one file, fetched
    with the keyboard, arrives byte for byte as the API serves it."""
    files = p.d.req("GET", "/api/v1/jobs/%s/files" % jid, "alice").json()["files"]
    shown = lambda: [b.get_attribute("data-file") for b in p.finds("#job-files button")]
    p.wait(lambda: shown() == [f["path"] for f in files],
           lambda _: "the run files %s (shown: %s)" % ([f["path"] for f in files], shown()))
    taken = set(os.listdir(downloads))
    pick = next(f["path"] for f in files
                if f["bytes"] > 0 and os.path.basename(f["path"]) not in taken)
    p.find('#job-files button[data-file="%s"]' % pick).send_keys(Keys.ENTER)
    path = os.path.join(downloads, os.path.basename(pick))
    p.wait(lambda: os.path.exists(path) and not os.path.exists(path + ".crdownload") and
           os.path.getsize(path) > 0, "the downloaded " + path)
    api = p.d.req("GET", "/api/v1/jobs/%s/files/%s" % (jid, pick), "alice").content
    with open(path, "rb") as f:
        got = f.read()
    check(got == api, "%s: downloaded %d bytes, the API serves %d" % (pick, len(got), len(api)))
    p.collect_console()


def _alert(drv):
    try:
        a = drv.switch_to.alert
        a.text  # raises while none is open
        return a
    except WebDriverException:
        return None


def other_user(p):
    bid = p.d.submit_id("bob", job_like(QUICK_JOB, name="bobs"))
    p.sign_out()
    p.sign_in("bob")
    p.wait(lambda: bid in p.rows(), "bob's job in his list")
    rows = p.rows()
    check(set(rows) == {bid}, "bob sees %s" % sorted(rows))
    check(not any(th.is_displayed() for th in p.finds("#jobs-table th.owner-col")),
          "no owner column for a user")
    check(not p.find("#nav-cluster").is_displayed(), "no cluster link for a user")
    check(p.text("#who") == "signed in as bob", "the header: %r" % p.text("#who"))
    p.collect_console()


def admin(p):
    p.sign_out()
    p.sign_in("root")
    check(p.text("#who") == "signed in as root (admin)", "the header: %r" % p.text("#who"))
    want = {j["id"]: j["owner"] for j in p.d.req("GET", "/api/v1/jobs", "root").json()["jobs"]}
    p.wait(lambda: set(p.rows()) == set(want), lambda _: "every job: %s, want %s" % (
        sorted(p.rows()), sorted(want)))
    owners = {jid: cells[1] for jid, cells in p.rows().items()}
    check(owners == want and {"alice", "bob"} <= set(owners.values()), "owners: %s" % owners)
    Select(p.find("#state-filter")).select_by_visible_text("succeeded")
    p.wait(lambda: set(p.rows()) == {j for j in want if p.d.job("root", j)["state"] == "succeeded"},
           "the succeeded filter")
    p.find("#nav-cluster").click()
    p.wait(lambda: "Slots" in p.text("#cluster-summary"), "the cluster view")
    check(len(p.finds("#cluster-hosts tbody tr")) >= 1, "hosts listed")
    p.collect_console()


def same_origin(p):
    names = p.drv.execute_script(
        "return performance.getEntriesByType('resource').map(e => e.name)"
        ".concat(performance.getEntriesByType('navigation').map(e => e.name))")
    check(names, "the browser recorded no requests at all")
    away = [n for n in names if not n.startswith(p.d.url + "/")]
    check(not away, "requests left the origin: %s" % away)


# The API's refusals this script provokes, which Chromium logs as failed loads.
# A user's page no longer asks /api/v1/cluster (issue 31 #14: its 403 was a
# console error): /api/v1/whoami says who is signed in.
EXPECTED = ("/api/v1/jobs - Failed to load resource: the server responded with a status of 400",)


def console_clean(p):
    p.collect_console()
    bad = [e for e in p.console if e["level"] in ("SEVERE", "WARNING") and
           not any(x in e["message"] for x in EXPECTED)]
    check(not bad, "console: %s" % bad)


if __name__ == "__main__":
    punchtest.main(cases)
