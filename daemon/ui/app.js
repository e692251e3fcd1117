/* app.js — punchcardd's dashboard. Everything on the page comes from the
 * public REST API (schema/openapi.yaml) with the user's secret as a bearer
 * token; the secret lives in sessionStorage only. Live updates arrive over
 * GET /api/v1/events (read with fetch, since EventSource cannot send an
 * Authorization header), with polling while the stream is down. */
'use strict';

(function () {
  const KEY = 'punchcard.secret';
  const $ = (id) => document.getElementById(id);
  const S = { secret: sessionStorage.getItem(KEY), admin: false, view: null, jobId: null,
              jobs: new Map(), stream: null, lastEventId: null, pollTimer: null,
              logOffset: 0, logTimer: null, logGen: 0, historyEpoch: -1,
              sweepId: null, sweep: null, sweepPick: null, sweepHist: new Map(),
              jobPick: new Map(), jobHist: new Map() };
  const FINAL = ['succeeded', 'failed', 'cancelled', 'timeout'];
  const RESUMABLE = ['failed', 'cancelled', 'timeout'];

  /* ---- helpers ---------------------------------------------------------- */

  function el(tag, attrs, ...kids) {
    const e = document.createElement(tag);
    for (const [k, v] of Object.entries(attrs || {})) {
      if (v === null || v === undefined || v === false) continue;
      if (k === 'text') e.textContent = v;
      else if (k.startsWith('on')) e.addEventListener(k.slice(2), v);
      else e.setAttribute(k, v === true ? '' : v);
    }
    for (const k of kids) e.append(k);
    return e;
  }
  const SVG = 'http://www.w3.org/2000/svg';
  function sv(tag, attrs, text) {
    const e = document.createElementNS(SVG, tag);
    for (const [k, v] of Object.entries(attrs || {})) e.setAttribute(k, v);
    if (text !== undefined) e.textContent = text;
    return e;
  }
  function fmtTime(t) {
    if (t === null || t === undefined) return '';
    const d = new Date(t * 1000);
    return d.toLocaleString(undefined, { month: 'short', day: 'numeric', hour: '2-digit',
                                         minute: '2-digit', second: '2-digit' });
  }
  function fmtNum(x, digits) {
    if (typeof x !== 'number' || !isFinite(x)) return '';
    return Math.abs(x) >= 1000 ? Math.round(x).toLocaleString() : x.toFixed(digits);
  }
  function fmtBytes(n) {
    if (typeof n !== 'number') return '';
    const u = ['B', 'KiB', 'MiB', 'GiB'];
    let i = 0;
    while (n >= 1024 && i < u.length - 1) { n /= 1024; i++; }
    return (i ? n.toFixed(1) : String(n)) + ' ' + u[i];
  }
  function fmtDur(s) {
    if (typeof s !== 'number' || !isFinite(s)) return '';
    s = Math.round(s);
    if (s < 60) return s + ' s';
    if (s < 3600) return Math.floor(s / 60) + ' min ' + (s % 60) + ' s';
    return Math.floor(s / 3600) + ' h ' + Math.floor((s % 3600) / 60) + ' min';
  }

  class ApiError extends Error {
    constructor(status, body) {
      super((body && body.error) || ('HTTP ' + status));
      this.status = status;
      this.field = body && body.field;
    }
  }

  async function api(path, opts) {
    opts = opts || {};
    const headers = Object.assign({ Authorization: 'Bearer ' + S.secret }, opts.headers || {});
    const r = await fetch(path, { method: opts.method || 'GET', headers, body: opts.body,
                                  cache: 'no-store' });
    if (r.status === 401 && !opts.signingIn) { signOut('Your secret was not accepted; sign in again.'); }
    if (opts.raw) {
      if (!r.ok) throw new ApiError(r.status, await r.json().catch(() => null));
      return r;
    }
    const body = await r.json().catch(() => null);
    if (!r.ok) throw new ApiError(r.status, body);
    return body;
  }

  /* ---- sign in / out ---------------------------------------------------- */

  async function signIn(secret) {
    S.secret = secret;
    try {
      await api('/api/v1/jobs?state=running', { signingIn: true });
    } catch (e) {
      S.secret = null;
      throw e;
    }
    sessionStorage.setItem(KEY, secret);
    let me = null;
    try {
      me = await api('/api/v1/whoami', { signingIn: true });
    } catch (e) {
      me = null;
    }
    S.admin = !!me && me.role === 'admin';
    $('nav').hidden = false;
    $('signout').hidden = false;
    $('nav-cluster').hidden = !S.admin;
    $('who').textContent = me ? 'signed in as ' + me.identity + (S.admin ? ' (admin)' : '')
                              : 'signed in';
    startStream();
    route();
  }

  function signOut(message) {
    sessionStorage.removeItem(KEY);
    S.secret = null;
    S.admin = false;
    stopStream();
    stopLog();
    S.jobs.clear();
    $('nav').hidden = true;
    $('signout').hidden = true;
    $('who').textContent = '';
    $('live').textContent = '';
    $('secret').value = '';
    $('signin-error').textContent = message || '';
    location.hash = '#/';
    show('signin');
  }

  /* ---- views ------------------------------------------------------------ */

  function show(name) {
    for (const v of ['signin', 'jobs', 'job', 'sweeps', 'sweep', 'submit', 'cluster'])
      $('view-' + v).hidden = v !== name;
    S.view = name;
  }

  function route() {
    if (!S.secret) { show('signin'); $('secret').focus(); return; }
    stopLog();
    const h = location.hash.replace(/^#/, '') || '/';
    const m = h.match(/^\/job\/([0-9a-f]{12})$/);
    if (m) { S.jobId = m[1]; show('job'); loadJob(true); return; }
    S.jobId = null;
    const w = h.match(/^\/sweep\/([0-9a-f]{12})$/);
    if (w) {
      if (S.sweepId !== w[1]) { S.sweep = null; S.sweepPick = null; S.sweepHist.clear(); }
      S.sweepId = w[1]; show('sweep'); loadSweep(); return;
    }
    S.sweepId = null;
    if (h === '/sweeps') { show('sweeps'); loadSweeps(); return; }
    if (h === '/submit') { show('submit'); return; }
    if (h === '/cluster' && S.admin) { show('cluster'); loadCluster(); return; }
    show('jobs');
    loadJobs();
  }

  /* ---- the jobs list ---------------------------------------------------- */

  function progressCell(j) {
    const p = j.progress || {};
    const td = el('td', { class: 'progress' });
    if (!p.epochs) return td;
    let frac = (p.epoch || 0) / p.epochs;
    let label = 'epoch ' + (p.epoch || 0) + '/' + p.epochs;
    if (p.event === 'step' && p.steps) {
      frac = ((p.epoch - 1) + p.step / p.steps) / p.epochs;
      label = 'epoch ' + p.epoch + '/' + p.epochs + ', step ' + p.step + '/' + p.steps;
    }
    if (j.state === 'succeeded') frac = 1;
    const bar = el('span', { class: 'bar', role: 'progressbar', 'aria-valuemin': '0',
                             'aria-valuemax': '100',
                             'aria-valuenow': String(Math.round(frac * 100)) },
                   el('span'));
    bar.firstChild.style.width = Math.min(100, Math.max(0, frac * 100)) + '%';
    td.append(bar, el('span', { class: 'progress-label', text: label }));
    return td;
  }

  /* The key hyperparameters the server kept at submit ("convnet adam lr
   * 0.001 bs 64 5 epochs"); '' for a job from before it kept them. */
  function hparamsText(h) {
    if (!h) return '';
    const t = [h.model];
    if (h.optimizer) t.push(h.optimizer + ' lr ' + h.lr);
    if (h.batch_size) t.push('bs ' + h.batch_size);
    if (h.epochs) t.push(h.epochs + ' epochs');
    return t.join(' ');
  }

  function jobRow(j) {
    const p = j.progress || {};
    const acc = p.accuracy !== undefined ? p.accuracy : p.val_accuracy;
    const tr = el('tr', { 'data-job': j.id },
      el('td', {}, el('a', { href: '#/job/' + j.id, text: j.name + ' (' + j.id + ')' })),
      el('td', { class: 'owner-col', hidden: !S.admin, text: j.owner }),
      el('td', { class: 'state state-' + j.state, text: j.state +
                 (j.state === 'queued' && j.queue_position ? ' #' + j.queue_position : '') }),
      el('td', { text: j.trainer + (j.workers > 1 ? ' x' + j.workers : '') }),
      el('td', { class: 'hparams', text: hparamsText(j.hparams) }),
      progressCell(j),
      el('td', { class: 'loss', text: fmtNum(p.loss, 4) }),
      el('td', { text: fmtNum(acc, 3) }),
      el('td', { text: fmtNum(p.samples_per_s, 0) }),
      el('td', { text: j.state === 'running' ? fmtDur(p.eta_s) : '' }),
      el('td', { text: fmtTime(j.submitted_at) }),
      el('td', { text: fmtTime(j.started_at) }),
      el('td', { text: fmtTime(j.finished_at) }),
      compareCell(j));
    return tr;
  }

  /* ---- comparing jobs: the ticked jobs' curves overlaid ----------------- */

  /* A ticked job keeps its colour while ticked: the lowest one free. */
  function compareCell(j) {
    const c = S.jobPick.get(j.id);
    const pick = el('input', { type: 'checkbox', 'data-job': j.id, checked: c !== undefined,
                               'aria-label': 'compare the curves of ' + j.name });
    pick.addEventListener('change', () => {
      if (!pick.checked) {
        S.jobPick.delete(j.id);
      } else {
        const used = new Set(S.jobPick.values());
        let k = 0;
        while (used.has(k)) k++;
        S.jobPick.set(j.id, k);
      }
      renderJobs();
    });
    return el('td', { class: 'compare' }, pick,
              c !== undefined ? el('span', { class: 'swatch c' + (c % 8) }) : '');
  }

  /* The ticked jobs' histories, each fetched again only when its epochs or
   * state changed; then one chart a metric (loss, accuracy) overlaying them. */
  let compareGen = 0;
  async function drawJobCompare() {
    const gen = ++compareGen;
    const picked = [...S.jobPick.keys()].map((id) => S.jobs.get(id)).filter(Boolean);
    await Promise.all(picked.map(async (j) => {
      /* A finished job's progress is its last epoch's line. */
      const done = FINAL.includes(j.state) ? (j.progress || {}).epoch || 0 : epochsDone(j);
      const key = done + '/' + j.state;
      const have = S.jobHist.get(j.id);
      if (have && have.key === key) return;
      if (done < 1 && !(have && have.h)) return;  /* no history.json yet */
      let h = null;
      try {
        h = await api('/api/v1/jobs/' + j.id + '/history');
      } catch (e) { /* none: asked again when its epochs or state change */ }
      S.jobHist.set(j.id, { key, h });
    }));
    if (gen !== compareGen) return;
    const charts = ['loss', 'accuracy'].map((m) => {
      const series = picked.map((j) => {
        const h = (S.jobHist.get(j.id) || {}).h;
        return h && Array.isArray(h[m]) && h[m].length
          ? [j.id, h[m], 'c' + (S.jobPick.get(j.id) % 8)] : null;
      }).filter(Boolean);
      return series.length ? chart(m, series, { legend: false }) : null;
    }).filter(Boolean);
    $('jobs-charts').replaceChildren(...(charts.length ? charts
      : [el('p', { class: 'hint', text: picked.length ? 'No ticked job has finished an epoch yet.'
                                                      : 'Tick jobs to compare their curves.' })]));
  }

  function renderJobs() {
    const tbody = $('jobs-table').tBodies[0];
    const rows = [...S.jobs.values()];
    tbody.replaceChildren(...rows.map(jobRow));
    for (const th of document.querySelectorAll('#jobs-table th.owner-col')) th.hidden = !S.admin;
    $('jobs-empty').hidden = rows.length > 0;
    drawJobCompare();
  }

  let jobsPending = null;
  async function loadJobs() {
    if (jobsPending) return jobsPending;
    const state = $('state-filter').value;
    jobsPending = (async () => {
      try {
        const body = await api('/api/v1/jobs' + (state ? '?state=' + encodeURIComponent(state) : ''));
        S.jobs = new Map(body.jobs.map((j) => [j.id, j]));
        if (S.view === 'jobs') renderJobs();
      } catch (e) {
        if (S.secret) $('live').textContent = 'cannot list jobs: ' + e.message;
      } finally {
        jobsPending = null;
      }
    })();
    return jobsPending;
  }

  /* ---- one job ---------------------------------------------------------- */

  function fact(dl, k, v) {
    if (v === null || v === undefined || v === '') return;
    dl.append(el('dt', { text: k }), el('dd', { text: String(v) }));
  }

  function renderJob(j) {
    $('job-title').textContent = j.name + ' (' + j.id + ')';
    const err = $('job-error');
    err.hidden = !j.error;
    err.textContent = j.error ? j.state + ': ' + j.error : '';
    const dl = $('job-facts');
    dl.replaceChildren();
    const stateDd = el('span', { class: 'state state-' + j.state, text: j.state });
    dl.append(el('dt', { text: 'State' }), el('dd', { id: 'job-state' }, stateDd));
    fact(dl, 'Owner', j.owner);
    fact(dl, 'Trainer', j.trainer + ', ' + j.workers + ' worker(s), ' + j.ranks + ' rank(s)');
    if (j.gpus) fact(dl, 'GPUs', j.gpus + (j.gpu_devices ? ' (' + j.gpu_devices + ')' : ''));
    if (j.state === 'queued')
      fact(dl, 'Queue', '#' + j.queue_position + ', waiting for ' + j.waiting_for);
    fact(dl, 'Submitted', fmtTime(j.submitted_at));
    fact(dl, 'Started', fmtTime(j.started_at));
    fact(dl, 'Finished', fmtTime(j.finished_at));
    if (j.result) {
      const r = Object.entries(j.result).filter(([k, v]) => k.startsWith('test_') && typeof v === 'number');
      fact(dl, 'Test', r.map(([k, v]) => k.slice(5) + ' ' + fmtNum(v, 4)).join(', '));
    }
    renderJobProgress(j);
    const done = FINAL.includes(j.state);
    const cancel = $('job-cancel');
    cancel.disabled = done || j.cancel_requested;
    cancel.textContent = j.cancel_requested && !done ? 'Cancel requested' : 'Cancel job';
    $('job-resume').hidden = !RESUMABLE.includes(j.state);
    $('job-delete').hidden = !done;
    /* Weights and the model exist once a job has succeeded; a failed one
     * never gets them (its history and files stay). */
    for (const b of document.querySelectorAll('#job-actions [data-download]')) {
      const what = b.getAttribute('data-download');
      if (what.startsWith('weights') || what.startsWith('export'))
        b.hidden = j.state !== 'succeeded';
    }
    showGenerate(j);
  }

  /* The prompt box: only on a finished language model (data.format text),
   * the jobs POST /generate answers. */
  function showGenerate(j) {
    $('job-generate').hidden = !(S.languageModel && j && j.state === 'succeeded');
  }

  async function generate(e) {
    e.preventDefault();
    const out = $('gen-output'), msg = $('gen-error'), btn = $('gen-btn');
    const num = (name) => Number($(name).value);
    const body = { prompt: $('gen-prompt').value, max_new_tokens: num('gen-tokens'),
                   temperature: num('gen-temperature'), top_k: num('gen-top-k'),
                   seed: num('gen-seed') };
    msg.textContent = '';
    btn.disabled = true;
    try {
      const r = await api('/api/v1/jobs/' + S.jobId + '/generate',
                          { method: 'POST', body: JSON.stringify(body),
                            headers: { 'Content-Type': 'application/json' } });
      out.replaceChildren(el('strong', { text: body.prompt }), document.createTextNode(r.text));
    } catch (err) {
      msg.textContent = (err.field ? err.field + ': ' : '') + err.message;
    } finally {
      btn.disabled = false;
    }
  }

  function renderJobProgress(j) {
    const p = j.progress || {};
    const box = $('job-progress');
    const tr = jobRow(j);
    box.replaceChildren();
    if (!p.epochs) return;
    const dl = el('dl', { class: 'facts' });
    dl.append(el('dt', { text: 'Progress' }), el('dd', {}, ...tr.children[4].childNodes));
    fact(dl, 'Loss', fmtNum(p.loss, 4));
    for (const [k, v] of Object.entries(p))
      if (typeof v === 'number' && /^(val_)?(accuracy|mse|mae)$|^val_loss$/.test(k)) fact(dl, k, fmtNum(v, 4));
    fact(dl, 'Samples/s', fmtNum(p.samples_per_s, 0));
    if (j.state === 'running') fact(dl, 'ETA', fmtDur(p.eta_s));
    box.append(dl);
  }

  /* Empties what a job's page accumulates (log, curves), for a new page or
   * a job that went back in the queue (resumed), whose log continues. */
  function resetJob() {
    stopLog();
    S.historyEpoch = -1;
    S.logOffset = 0;
    $('job-log').textContent = '';
    $('job-charts').replaceChildren(el('p', { class: 'hint', text: 'No epoch finished yet.' }));
  }

  async function loadJob(fresh) {
    const id = S.jobId;
    if (fresh) {
      resetJob();
      $('job-spec').textContent = '';
      S.languageModel = false;
      $('job-generate').hidden = true;
      $('gen-output').textContent = '';
      $('gen-error').textContent = '';
      $('job-events').replaceChildren();
      $('job-files').tBodies[0].replaceChildren();
      $('job-files-note').textContent = '';
      say('');
    }
    const was = S.jobs.get(id);
    let j;
    try {
      j = await api('/api/v1/jobs/' + id);
    } catch (e) {
      $('job-title').textContent = 'Job ' + id;
      $('job-error').hidden = false;
      $('job-error').textContent = e.message;
      return;
    }
    if (S.jobId !== id) return;
    const resumed = !fresh && was && FINAL.includes(was.state) && !FINAL.includes(j.state);
    if (resumed) resetJob();
    S.jobs.set(id, j);
    renderJob(j);
    loadEvents(id);
    loadFiles(id);
    maybeHistory(j);
    if (fresh) {
      api('/api/v1/jobs/' + id + '/spec', { raw: true }).then((r) => r.text()).then((t) => {
        let spec = null;
        try { spec = JSON.parse(t); t = JSON.stringify(spec, null, 2); } catch (e) { /* shown as sent */ }
        if (S.jobId !== id) return;
        $('job-spec').textContent = t;
        S.languageModel = !!(spec && spec.data && spec.data.format === 'text');
        showGenerate(S.jobs.get(id));
      }).catch((e) => { $('job-spec').textContent = e.message; });
    }
    if (fresh || resumed) pollLog(id);
  }

  /* Every file of the run directory, each a button that downloads it (a
   * plain link could not send the Authorization header). Reloaded with the
   * job, so on every state change. */
  async function loadFiles(id) {
    let body;
    try {
      body = await api('/api/v1/jobs/' + id + '/files');
    } catch (e) {
      if (S.jobId === id) $('job-files-note').textContent = e.message;
      return;
    }
    if (S.jobId !== id) return;
    $('job-files').tBodies[0].replaceChildren(...body.files.map((f) => el('tr', {},
      el('td', {}, el('button', { type: 'button', class: 'link', 'data-file': f.path, text: f.path,
                                  onclick: () => download('files/' + f.path.split('/')
                                    .map(encodeURIComponent).join('/')) })),
      el('td', { class: 'num', title: f.bytes + ' bytes', text: fmtBytes(f.bytes) }),
      el('td', { text: fmtTime(f.mtime) }))));
    $('job-files-note').textContent = !body.files.length ? 'No files yet.'
      : body.truncated ? 'Only the first ' + body.files.length + ' files are listed.' : '';
  }

  async function loadEvents(id) {
    try {
      const body = await api('/api/v1/jobs/' + id + '/events');
      if (S.jobId !== id) return;
      $('job-events').replaceChildren(...body.events.map((e) => el('li', {},
        el('time', { text: fmtTime(e.at) }),
        el('span', { class: 'state state-' + e.to, text: (e.from ? e.from + ' → ' : '') + e.to }),
        e.detail ? ' — ' + e.detail : '')));
    } catch (e) { /* the next state change reloads it */ }
  }

  /* The epochs done so far; history.json is rewritten after each. */
  function epochsDone(j) {
    const p = j.progress || {};
    if (p.event === 'epoch' || p.event === 'end') return p.epoch || p.epochs_run || 0;
    return Math.max(0, (p.epoch || 1) - 1);
  }

  async function maybeHistory(j) {
    const done = epochsDone(j);
    const final = FINAL.includes(j.state);
    /* No history.json before the first epoch ends: asking would be a 404. */
    if (done < 1 || S.historyEpoch === Infinity || (done <= S.historyEpoch && !final)) return;
    S.historyEpoch = final ? Infinity : done;
    try {
      const h = await api('/api/v1/jobs/' + j.id + '/history');
      if (S.jobId === j.id) drawCharts(h);
    } catch (e) {
      if (final) S.historyEpoch = -1;
    }
  }

  /* ---- curves ----------------------------------------------------------- */

  function drawCharts(h) {
    const box = $('job-charts');
    const metrics = Object.keys(h).filter((k) => Array.isArray(h[k]) && !k.startsWith('val_') &&
      h[k].length && typeof h[k][0] === 'number' && !['lr', 'epoch_time_s', 'samples_per_s'].includes(k));
    metrics.sort((a, b) => (a === 'loss' ? -1 : b === 'loss' ? 1 : a.localeCompare(b)));
    if (!metrics.length) return;
    box.replaceChildren(...metrics.map((m) => chart(m, [['train', h[m]], ['validation', h['val_' + m]]]
      .filter(([, v]) => Array.isArray(v) && v.length))));
  }

  function ticks(lo, hi, n) {
    const step0 = (hi - lo) / n || 1;
    const mag = Math.pow(10, Math.floor(Math.log10(step0)));
    const step = [1, 2, 5, 10].map((f) => f * mag).find((s) => s >= step0);
    const out = [];
    for (let t = Math.ceil(lo / step) * step; t <= hi + step * 1e-9; t += step) out.push(+t.toPrecision(12));
    return out;
  }

  /* series: [label, values, class?]; opts.legend false leaves the legend
   * to the page (a sweep's trials table carries the colours). */
  function chart(name, series, opts) {
    opts = opts || {};
    const unit = opts.unit || 'epoch';
    const W = 420, H = 240, L = 52, R = 12, T = 26, B = 34;
    const n = Math.max(...series.map(([, v]) => v.length));
    const all = series.flatMap(([, v]) => v).filter((x) => typeof x === 'number' && isFinite(x));
    let lo = Math.min(...all), hi = Math.max(...all);
    if (lo === hi) { lo -= Math.abs(lo) * 0.1 || 1; hi += Math.abs(hi) * 0.1 || 1; }
    const x = (i) => L + (n > 1 ? (i / (n - 1)) * (W - L - R) : (W - L - R) / 2);
    const y = (v) => T + (1 - (v - lo) / (hi - lo)) * (H - T - B);
    const svg = sv('svg', { class: 'chart', viewBox: '0 0 ' + W + ' ' + H, width: W, height: H,
                            role: 'img', 'aria-label': name + ' per ' + unit, 'data-metric': name,
                            'data-points': String(n) });
    svg.append(sv('title', {}, name + ' per ' + unit));
    for (const t of ticks(lo, hi, 4)) {
      svg.append(sv('line', { class: 'grid', x1: L, x2: W - R, y1: y(t), y2: y(t) }));
      svg.append(sv('text', { x: L - 6, y: y(t) + 4, 'text-anchor': 'end' }, fmtNum(t, 3)));
    }
    const xt = ticks(1, n, Math.min(n, 6)).filter((t) => Number.isInteger(t));
    for (const t of xt) svg.append(sv('text', { x: x(t - 1), y: H - B + 16, 'text-anchor': 'middle' }, String(t)));
    svg.append(sv('text', { x: (L + W - R) / 2, y: H - 4, 'text-anchor': 'middle' }, unit));
    svg.append(sv('line', { class: 'axis', x1: L, x2: L, y1: T, y2: H - B }));
    svg.append(sv('line', { class: 'axis', x1: L, x2: W - R, y1: H - B, y2: H - B }));
    series.forEach(([label, v, cls], k) => {
      cls = cls || 's' + k;
      const pts = v.map((val, i) => x(i) + ',' + y(val)).join(' ');
      svg.append(sv('polyline', { class: cls, points: pts, 'data-series': label }));
      v.forEach((val, i) => svg.append(sv('circle', { class: cls, cx: x(i), cy: y(val), r: 2.5 })));
      if (opts.legend === false) return;
      const lx = L + 8 + k * 110;
      svg.append(sv('rect', { class: cls, x: lx, y: 8, width: 12, height: 4 }));
      svg.append(sv('text', { x: lx + 16, y: 14 }, name + ' ' + label));
    });
    const readout = sv('text', { class: 'readout', x: W - R, y: 14, 'text-anchor': 'end' }, '');
    const band = (W - L - R) / Math.max(1, n - 1);
    for (let i = 0; i < n; i++) {
      const text = unit + ' ' + (i + 1) + ': ' + series.map(([label, v]) =>
        label + ' ' + (typeof v[i] === 'number' ? fmtNum(v[i], 4) : '–')).join(', ');
      const x0 = Math.max(L, x(i) - band / 2), x1 = Math.min(W - R, x(i) + band / 2);
      const r = sv('rect', { class: 'hover', x: x0, y: T, width: x1 - x0, height: H - T - B,
                             tabindex: '0', 'aria-label': name + ' ' + text });
      r.append(sv('title', {}, text));
      const on = () => { readout.textContent = text; };
      r.addEventListener('mouseenter', on);
      r.addEventListener('focus', on);
      svg.append(r);
    }
    svg.append(readout);
    return svg;
  }

  /* ---- the log ---------------------------------------------------------- */

  /* Each poll belongs to a generation; stopping starts a new one, so a
   * response still in flight from before a reset is dropped. */
  function stopLog() {
    clearTimeout(S.logTimer);
    S.logTimer = null;
    S.logGen++;
  }

  async function pollLog(id) {
    stopLog();
    const gen = S.logGen;
    if (S.jobId !== id || !S.secret) return;
    let state = 'running';
    try {
      const r = await api('/api/v1/jobs/' + id + '/logs?offset=' + S.logOffset, { raw: true });
      const text = await r.text();
      state = r.headers.get('X-Job-State') || state;
      if (S.jobId !== id || S.logGen !== gen) return;
      S.logOffset = Number(r.headers.get('X-Log-Offset')) || S.logOffset;
      if (text) {
        const pre = $('job-log');
        pre.append(text);
        if ($('log-follow').checked) pre.scrollTop = pre.scrollHeight;
      }
    } catch (e) { /* retried below */ }
    if (!FINAL.includes(state) && S.logGen === gen) S.logTimer = setTimeout(() => pollLog(id), 1000);
  }

  async function download(what) {
    const id = S.jobId;
    try {
      const r = await api('/api/v1/jobs/' + id + '/' + what, { raw: true });
      const blob = await r.blob();
      const cd = r.headers.get('Content-Disposition') || '';
      const m = cd.match(/filename="([^"]+)"/);
      const name = m ? m[1] : id + '-' + what.replace(/\W+/g, '.') + (what === 'history' ? '.json' : '');
      const url = URL.createObjectURL(blob);
      const a = el('a', { href: url, download: name });
      document.body.append(a);
      a.click();
      a.remove();
      setTimeout(() => URL.revokeObjectURL(url), 10000);
      say('downloaded ' + name);
    } catch (e) {
      say(e.message, true);
    }
  }

  /* The outcome of a job page's action, an error in red and as sent. */
  function say(text, error) {
    const msg = $('job-action-msg');
    msg.textContent = text;
    msg.classList.toggle('error', !!error);
  }

  async function cancelJob() {
    const j = S.jobs.get(S.jobId);
    if (!j || !window.confirm('Cancel job ' + j.name + ' (' + j.id + ')?')) return;
    try {
      renderJob(await api('/api/v1/jobs/' + j.id + '/cancel', { method: 'POST' }));
      say('cancel requested');
    } catch (e) {
      say(e.message, true);
    }
  }

  /* A finished job forgotten: its record and run directory (uploads stay). */
  async function deleteJob() {
    const j = S.jobs.get(S.jobId);
    if (!j || !window.confirm('Delete job ' + j.name + ' (' + j.id + ')? Its weights, logs ' +
                              'and checkpoints are removed for good.')) return;
    let r;
    try {
      r = await api('/api/v1/jobs/' + j.id, { method: 'DELETE' });
    } catch (e) {
      say('cannot delete: ' + e.message, true);
      return;
    }
    S.jobs.delete(j.id);
    location.hash = '#/';
    say('deleted ' + j.id + ' (' + (r.bytes_freed / 1e6).toFixed(1) + ' MB freed)');
  }

  /* Back in the queue under the same id, continuing from its checkpoint. */
  async function resumeJob() {
    const j = S.jobs.get(S.jobId);
    if (!j || !window.confirm('Resume job ' + j.name + ' (' + j.id + ')? It goes back in the ' +
                              'queue and continues from its last checkpoint.')) return;
    let r;
    try {
      r = await api('/api/v1/jobs/' + j.id + '/resume', { method: 'POST' });
    } catch (e) {
      say('cannot resume: ' + e.message, true);
      return;
    }
    if (S.jobId !== j.id) return;
    resetJob();
    S.jobs.set(j.id, r);
    renderJob(r);
    loadEvents(j.id);
    loadFiles(j.id);
    pollLog(j.id);
    say('resumed: ' + r.state);
    $('job-cancel').focus();
  }

  /* ---- sweeps ----------------------------------------------------------- */

  /* Trials with a metric first, best first (more epochs first: ASHA's
   * rungs are not comparable across budgets), as `punch sweep status`. */
  function trialOrder(sw) {
    const max = sw.mode === 'max';
    return (a, b) => {
      const ha = typeof a.metric === 'number', hb = typeof b.metric === 'number';
      if (ha !== hb) return ha ? -1 : 1;
      if (a.epochs_run !== b.epochs_run) return b.epochs_run - a.epochs_run;
      if (a.metric === b.metric) return a.index - b.index;
      return (a.metric > b.metric) === max ? -1 : 1;
    };
  }
  const fmtParams = (p) => Object.entries(p || {}).map(([k, v]) => k + '=' + JSON.stringify(v)).join(', ');
  const bestText = (b) => b ? fmtNum(b.metric, 4) + ' (' + b.job + ')' : '';

  /* How the sweep searches, per method: ASHA's rungs, PBT's population
   * and generations; grid and random need no more than their name. */
  function sweepSearchText(w) {
    let s = w.method;
    if (w.rungs) s += ', rungs at ' + w.rungs.join(', ') + ' epochs, η ' + w.reduction_factor;
    if (w.pbt) s += ', population ' + w.pbt.population + ', ' + w.pbt.generations +
                    ' generations of ' + w.pbt.perturb_every_epochs + ' epochs, bottom ' +
                    Math.round(w.pbt.quantile * 100) + '% exploit the top';
    return s + ', ' + w.max_concurrent + ' at once';
  }

  /* A trial's place in the schedule: under ASHA the rung it reached (of
   * the sweep's), under PBT its generation and lineage, each exploit
   * linking the job whose weights it took; null for grid and random. */
  function sweepStageCell(w, t) {
    if (w.rungs) {
      const done = (t.rungs || []).filter((r) => typeof r.metric === 'number').length;
      return el('td', { class: 'stage', 'data-rung': String(done),
                        text: done ? 'rung ' + done + ' of ' + w.rungs.length : '' });
    }
    if (!w.pbt) return null;
    const gens = Array.isArray(t.pbt) ? t.pbt : [];
    const last = gens.length ? gens[gens.length - 1].generation : null;
    const from = gens.filter((g) => g.from_job);
    const td = el('td', { class: 'stage lineage', 'data-generation': last === null ? '' : String(last),
                          'data-from': from.map((g) => g.generation + ':' + g.from_job).join(' ') },
                  last === null ? '' : 'gen ' + last + ' of ' + w.pbt.generations);
    for (const g of from)
      td.append(el('br'), 'gen ' + g.generation + ' from ', el('a', { href: '#/job/' + g.from_job, text: g.from_job }));
    if (last !== null && !from.length) td.append(el('br'), 'own line');
    return td;
  }

  let sweepsPending = null;
  async function loadSweeps() {
    if (sweepsPending) return sweepsPending;
    sweepsPending = (async () => {
      try {
        const body = await api('/api/v1/sweeps');
        if (S.view !== 'sweeps') return;
        $('sweeps-table').tBodies[0].replaceChildren(...body.sweeps.map((w) => el('tr', { 'data-sweep': w.id },
          el('td', {}, el('a', { href: '#/sweep/' + w.id, text: w.name + ' (' + w.id + ')' })),
          el('td', { class: 'owner-col', hidden: !S.admin, text: w.owner }),
          el('td', { class: 'state state-' + w.state, text: w.state }),
          el('td', { text: w.method }), el('td', { text: w.metric + ' (' + w.mode + ')' }),
          el('td', { text: w.trials_done + '/' + w.trials_total + ' done' +
                     (w.trials_running ? ', ' + w.trials_running + ' running' : '') }),
          el('td', { text: bestText(w.best) }),
          el('td', { text: fmtTime(w.created_at) }), el('td', { text: fmtTime(w.finished_at) }))));
        for (const th of document.querySelectorAll('#sweeps-table th.owner-col')) th.hidden = !S.admin;
        $('sweeps-empty').hidden = body.sweeps.length > 0;
      } catch (e) {
        if (S.secret) $('live').textContent = 'cannot list sweeps: ' + e.message;
      } finally {
        sweepsPending = null;
      }
    })();
    return sweepsPending;
  }

  /* One load at a time; a change that arrives meanwhile asks for one more. */
  let sweepPending = null, sweepAgain = false;
  function loadSweep() {
    if (sweepPending) { sweepAgain = true; return; }
    const id = S.sweepId;
    sweepPending = api('/api/v1/sweeps/' + id).then((w) => {
      if (S.sweepId !== id) return;
      S.sweep = w;
      renderSweep(w);
    }).catch((e) => {
      if (S.sweepId !== id) return;
      $('sweep-title').textContent = 'Sweep ' + id;
      $('sweep-error').hidden = false;
      $('sweep-error').textContent = e.message;
    }).finally(() => {
      sweepPending = null;
      if (sweepAgain) { sweepAgain = false; if (S.view === 'sweep') loadSweep(); }
    });
  }

  /* Job events move the page; a slow poll besides, while the sweep runs,
   * catches what no job event announces (the sweep's own end, a trial it
   * could not submit). */
  let sweepTimer = null;
  function renderSweep(w) {
    clearTimeout(sweepTimer);
    sweepTimer = w.state === 'running'
      ? setTimeout(() => { if (S.view === 'sweep' && S.sweepId === w.id) loadSweep(); }, 3000) : null;
    $('sweep-title').textContent = w.name + ' (' + w.id + ')';
    $('sweep-error').hidden = true;
    const dl = $('sweep-facts');
    dl.replaceChildren(el('dt', { text: 'State' }),
                       el('dd', { id: 'sweep-state', class: 'state state-' + w.state, text: w.state }));
    if (S.admin) fact(dl, 'Owner', w.owner);
    fact(dl, 'Search', sweepSearchText(w));
    fact(dl, 'Trials', w.trials_done + '/' + w.trials_total + ' done, ' + w.trials_running + ' running');
    fact(dl, 'Best', w.best ? w.metric + ' ' + fmtNum(w.best.metric, 4) + ' by ' + w.best.job +
         ' (' + fmtParams(w.best.params) + ')' : '');
    fact(dl, 'Created', fmtTime(w.created_at));
    fact(dl, 'Finished', fmtTime(w.finished_at));
    $('sweep-metric-col').textContent = w.metric + ' (' + w.mode + ')';
    $('sweep-stage-col').hidden = !w.rungs && !w.pbt;
    $('sweep-stage-col').textContent = w.pbt ? 'Generation, lineage' : 'Rung';
    const trials = w.trials.slice().sort(trialOrder(w));
    /* Picked at first: the five best that have a job. */
    if (!S.sweepPick) S.sweepPick = new Set(trials.filter((t) => t.job).slice(0, 5).map((t) => t.job));
    const best = w.best && w.best.job;
    $('sweep-trials').tBodies[0].replaceChildren(...trials.map((t) => {
      const pick = el('input', { type: 'checkbox', 'data-job': t.job, disabled: !t.job,
                                 'aria-label': 'show the curves of trial ' + t.index,
                                 checked: !!t.job && S.sweepPick.has(t.job) });
      pick.addEventListener('change', () => {
        if (pick.checked) S.sweepPick.add(t.job); else S.sweepPick.delete(t.job);
        drawSweep(S.sweep);
      });
      return el('tr', { 'data-job': t.job || '', 'data-index': String(t.index),
                        class: t.job && t.job === best ? 'best' : null },
        el('td', {}, pick, el('span', { class: 'swatch c' + (t.index % 8) })),
        el('td', { class: 'best-mark', text: t.job && t.job === best ? '★ best' : '' }),
        el('td', {}, t.job ? el('a', { href: '#/job/' + t.job, text: t.job }) : '#' + t.index),
        el('td', { class: 'state state-' + t.state, text: t.state }),
        el('td', { class: 'num', text: String(t.epochs_run) }),
        el('td', { class: 'num metric', text: fmtNum(t.metric, 5) }),
        ...[sweepStageCell(w, t)].filter(Boolean),
        el('td', { text: fmtParams(t.params) }));
    }));
    drawSweep(w);
  }

  /* The picked trials' histories, each fetched again only when its epochs
   * or state changed; then the overlaid curves. */
  async function drawSweep(w) {
    drawParcoords(w);
    const id = w.id;
    const picked = w.trials.filter((t) => t.job && S.sweepPick.has(t.job));
    await Promise.all(picked.map(async (t) => {
      const key = t.epochs_run + '/' + t.state;
      const have = S.sweepHist.get(t.job);
      if (have && have.key === key) return;
      if (t.epochs_run < 1 && !(have && have.h)) return;  /* no history.json yet */
      try {
        S.sweepHist.set(t.job, { key, h: await api('/api/v1/jobs/' + t.job + '/history') });
      } catch (e) { /* the next change asks again */ }
    }));
    if (S.sweepId !== id || S.sweep !== w) return;
    const metrics = ['loss'].concat(w.metric === 'loss' ? [] : [w.metric]);
    const charts = metrics.map((m) => {
      const series = picked.map((t) => {
        const h = (S.sweepHist.get(t.job) || {}).h;
        return h && Array.isArray(h[m]) && h[m].length ? [t.job, h[m], 'c' + (t.index % 8)] : null;
      }).filter(Boolean);
      return series.length ? chart(m, series, { legend: false }) : null;
    }).filter(Boolean);
    const gens = w.pbt ? sweepGenerationChart(w, picked) : null;
    if (gens) charts.unshift(gens);
    $('sweep-charts').replaceChildren(...(charts.length ? charts
      : [el('p', { class: 'hint', text: picked.length ? 'No picked trial has finished an epoch yet.'
                                                      : 'Tick trials above to see their curves.' })]));
  }

  /* PBT: an exploited member starts a fresh history from its donor's
   * weights, so its own curve covers its last generations only; the
   * metric each member reached at each generation's end (its records)
   * is the member's whole path, exploits included. */
  function sweepGenerationChart(w, picked) {
    const series = picked.map((t) => {
      const v = (t.rungs || []).map((r) => r.metric).filter((m) => typeof m === 'number');
      return v.length ? [t.job, v, 'c' + (t.index % 8)] : null;
    }).filter(Boolean);
    if (!series.length) return null;
    const svg = chart(w.metric, series, { legend: false, unit: 'generation' });
    svg.setAttribute('id', 'sweep-generations');
    return svg;
  }

  /* One axis per parameter, then the metric; a trial is a polyline across
   * them. Numbers sit on a linear axis (log when positive and spanning
   * over 100x, as learning rates do), anything else on evenly spaced
   * categories. */
  function pcAxis(name, vals) {
    const nums = vals.filter((v) => typeof v === 'number' && isFinite(v));
    if (nums.length === vals.length && nums.length) {
      let lo = Math.min(...nums), hi = Math.max(...nums);
      const log = lo > 0 && hi / lo > 100;
      const f = log ? Math.log10 : (v) => v;
      const a = f(lo), b = f(hi);
      const pos = (v) => (a === b ? 0.5 : (f(v) - a) / (b - a));
      return { name, pos, lo: fmtNum(lo, 4), hi: fmtNum(hi, 4) + (log ? ' (log)' : '') };
    }
    const cats = [...new Set(vals.map((v) => JSON.stringify(v)))].sort();
    const pos = (v) => (cats.length < 2 ? 0.5 : cats.indexOf(JSON.stringify(v)) / (cats.length - 1));
    return { name, pos, lo: cats[0] || '', hi: cats.length > 1 ? cats[cats.length - 1] : '' };
  }

  function drawParcoords(w) {
    const box = $('sweep-parcoords');
    const trials = w.trials.filter((t) => typeof t.metric === 'number');
    if (!trials.length) {
      box.replaceChildren(el('p', { class: 'hint', text: 'No trial has a metric yet.' }));
      return;
    }
    const keys = Object.keys(w.trials[0].params || {});
    const axes = keys.map((k) => pcAxis(k, trials.map((t) => t.params[k])))
      .concat([pcAxis(w.metric, trials.map((t) => t.metric))]);
    const W = Math.max(420, 160 * axes.length), H = 260, L = 60, R = 60, T = 30, B = 40;
    const x = (i) => L + (axes.length > 1 ? i * (W - L - R) / (axes.length - 1) : (W - L - R) / 2);
    const y = (p) => T + (1 - p) * (H - T - B);
    const svg = sv('svg', { class: 'chart parcoords', viewBox: '0 0 ' + W + ' ' + H, width: W, height: H,
                            role: 'img', 'data-axes': String(axes.length), 'data-trials': String(trials.length),
                            'aria-label': 'parameters against ' + w.metric + ', one line per trial' });
    svg.append(sv('title', {}, 'parameters against ' + w.metric));
    axes.forEach((a, i) => {
      svg.append(sv('line', { class: 'axis', x1: x(i), x2: x(i), y1: T, y2: H - B }));
      svg.append(sv('text', { x: x(i), y: H - B + 16, 'text-anchor': 'middle', class: 'axis-name' }, a.name));
      svg.append(sv('text', { x: x(i) + 4, y: T - 6 }, a.hi));
      svg.append(sv('text', { x: x(i) + 4, y: H - B - 4 }, a.lo));
    });
    const best = w.best && w.best.job;
    /* The best last, so it is drawn on top. */
    trials.sort((a, b) => (a.job === best) - (b.job === best));
    for (const t of trials) {
      const vals = keys.map((k) => t.params[k]).concat([t.metric]);
      const pts = vals.map((v, i) => x(i) + ',' + y(axes[i].pos(v))).join(' ');
      const line = sv('polyline', { class: 'c' + (t.index % 8) + (t.job === best ? ' best' : ''),
                                    points: pts, 'data-job': t.job || '' });
      line.append(sv('title', {}, (t.job || '#' + t.index) + ': ' + fmtParams(t.params) + ' → ' +
                     w.metric + ' ' + fmtNum(t.metric, 5)));
      svg.append(line);
    }
    box.replaceChildren(svg);
  }

  /* ---- submit ----------------------------------------------------------- */

  const EXAMPLES = {
    'tiny synthetic (seconds)': { name: 'tiny', model: { input: [8], layers: [
      { type: 'dense', units: 4, activation: 'softmax' }] },
      data: { format: 'synthetic', synthetic_train: 256, synthetic_test: 64, num_classes: 4 },
      training: { epochs: 5, batch_size: 32, seed: 1 } },
    'MLP on Fashion-MNIST': { name: 'fmnist-mlp', model: 'mlp',
      data: { format: 'idx', train: 'fashion-mnist/train', test: 'fashion-mnist/t10k',
              validation_split: 0.1, scaling: 'unit' },
      training: { epochs: 5, batch_size: 64, metrics: ['accuracy'],
                  optimizer: { name: 'adam', learning_rate: 0.001 }, seed: 1 } },
    'allreduce, 2 workers': { name: 'fmnist-allreduce', model: 'mlp',
      data: { format: 'idx', train: 'fashion-mnist/train', test: 'fashion-mnist/t10k',
              validation_split: 0.1, scaling: 'unit' },
      training: { epochs: 3, batch_size: 64, metrics: ['accuracy'], seed: 1 },
      distributed: { trainer: 'allreduce', workers: 2 } },
  };

  async function submit() {
    const err = $('submit-error');
    err.textContent = '';
    const text = $('spec-text').value;
    try {
      JSON.parse(text);
    } catch (e) {
      err.textContent = 'not JSON: ' + e.message;
      return;
    }
    try {
      const r = await api('/api/v1/jobs', { method: 'POST', body: text,
                                            headers: { 'Content-Type': 'application/json' } });
      location.hash = '#/job/' + r.id;
    } catch (e) {
      err.textContent = (e.field ? e.field + ': ' : '') + e.message.replace(e.field + ': ', '');
      $('spec-text').setAttribute('aria-invalid', 'true');
    }
  }

  /* ---- cluster ---------------------------------------------------------- */

  async function loadCluster() {
    try {
      const [c, q] = await Promise.all([api('/api/v1/cluster'), api('/api/v1/jobs?state=queued')]);
      $('cluster-summary').replaceChildren(el('p', { text: 'Slots ' + c.slots_used + '/' + c.slots +
        ' used; GPUs ' + c.gpus_used + '/' + c.gpus + ' used.' }));
      const hosts = c.hosts || [];
      const cols = hosts.length ? Object.keys(hosts[0]) : [];
      $('cluster-hosts').tHead.replaceChildren(el('tr', {}, ...cols.map((k) => el('th', { text: k }))));
      $('cluster-hosts').tBodies[0].replaceChildren(...hosts.map((h) =>
        el('tr', {}, ...cols.map((k) => el('td', { text: String(h[k]) })))));
      const queue = q.jobs.slice().sort((a, b) => a.queue_position - b.queue_position);
      $('cluster-queue').tBodies[0].replaceChildren(...queue.map((j) => el('tr', {},
        el('td', { text: String(j.queue_position) }),
        el('td', {}, el('a', { href: '#/job/' + j.id, text: j.name + ' (' + j.id + ')' })),
        el('td', { text: j.owner }), el('td', { text: String(j.ranks) }),
        el('td', { text: String(j.gpus) }), el('td', { text: j.waiting_for || '' }))));
    } catch (e) {
      $('cluster-summary').textContent = e.message;
    }
  }

  /* ---- live updates ----------------------------------------------------- */

  function onState(ev) {
    if (S.view === 'jobs') loadJobs();
    if (S.view === 'sweeps') loadSweeps();
    if (S.view === 'sweep') loadSweep();
    if (S.view === 'cluster') loadCluster();
    if (S.view === 'job' && ev.job === S.jobId) loadJob(false);
  }

  function onProgress(ev) {
    /* A picked trial finished an epoch: its curve grows. */
    if (S.view === 'sweep' && S.sweep && S.sweepPick && S.sweepPick.has(ev.job) &&
        ev.progress && ev.progress.event === 'epoch') {
      const t = S.sweep.trials.find((x) => x.job === ev.job);
      if (t) { S.sweepHist.delete(ev.job); t.epochs_run = Math.max(t.epochs_run, 1); drawSweep(S.sweep); }
    }
    const j = S.jobs.get(ev.job);
    if (!j) { if (S.view === 'jobs') loadJobs(); return; }
    j.progress = ev.progress;
    j.state = ev.state;
    if (S.view === 'jobs') {
      const row = document.querySelector('#jobs-table tr[data-job="' + ev.job + '"]');
      if (row) row.replaceWith(jobRow(j));
    } else if (S.view === 'job' && ev.job === S.jobId) {
      renderJobProgress(j);
      maybeHistory(j);
    }
  }

  function dispatch(name, id, data) {
    if (id) S.lastEventId = id;
    let ev;
    try { ev = JSON.parse(data); } catch (e) { return; }
    if (name === 'state') onState(ev);
    else if (name === 'progress') onProgress(ev);
    else if (name === 'reset' || name === 'hello') onState({});
  }

  function stopStream() {
    if (S.stream) S.stream.abort();
    S.stream = null;
    clearInterval(S.pollTimer);
    S.pollTimer = null;
  }

  /* Poll while the stream is down, so the page never goes stale. */
  function fallBack() {
    if (!S.pollTimer) S.pollTimer = setInterval(() => onState({ job: S.jobId }), 5000);
  }

  async function startStream(delay) {
    stopStream();
    const ctl = new AbortController();
    S.stream = ctl;
    const headers = { Authorization: 'Bearer ' + S.secret, Accept: 'text/event-stream' };
    if (S.lastEventId) headers['Last-Event-ID'] = S.lastEventId;
    try {
      const r = await fetch('/api/v1/events', { headers, signal: ctl.signal, cache: 'no-store' });
      if (!r.ok || !r.body) throw new Error('HTTP ' + r.status);
      clearInterval(S.pollTimer);
      S.pollTimer = null;
      $('live').textContent = '● live';
      const reader = r.body.pipeThrough(new TextDecoderStream()).getReader();
      let buf = '', name = 'message', id = null, data = [];
      for (;;) {
        const { value, done } = await reader.read();
        if (done) break;
        buf += value;
        let nl;
        while ((nl = buf.indexOf('\n')) >= 0) {
          const line = buf.slice(0, nl).replace(/\r$/, '');
          buf = buf.slice(nl + 1);
          if (line === '') {
            if (data.length) dispatch(name, id, data.join('\n'));
            name = 'message'; id = null; data = [];
          } else if (!line.startsWith(':')) {
            const c = line.indexOf(':');
            const k = c < 0 ? line : line.slice(0, c);
            const v = c < 0 ? '' : line.slice(c + 1).replace(/^ /, '');
            if (k === 'event') name = v;
            else if (k === 'data') data.push(v);
            else if (k === 'id') id = v;
          }
        }
      }
    } catch (e) {
      if (ctl.signal.aborted) return;
    }
    if (S.stream !== ctl || !S.secret) return;
    $('live').textContent = '○ reconnecting (polling)';
    fallBack();
    const next = Math.min(30000, (delay || 500) * 2);
    setTimeout(() => { if (S.stream === ctl && S.secret) startStream(next); }, next);
  }

  /* ---- start ------------------------------------------------------------ */

  function init() {
    $('signin-form').addEventListener('submit', (e) => {
      e.preventDefault();
      $('signin-error').textContent = '';
      signIn($('secret').value).catch((err) => {
        $('signin-error').textContent = err.status === 401 ? 'That secret is not valid.' : err.message;
      });
    });
    $('signout').addEventListener('click', () => signOut(''));
    $('state-filter').addEventListener('change', loadJobs);
    $('job-cancel').addEventListener('click', cancelJob);
    $('job-resume').addEventListener('click', resumeJob);
    $('job-delete').addEventListener('click', deleteJob);
    $('generate-form').addEventListener('submit', generate);
    for (const b of document.querySelectorAll('[data-download]'))
      b.addEventListener('click', () => download(b.getAttribute('data-download')));
    $('log-follow').addEventListener('change', () => {
      const pre = $('job-log');
      if ($('log-follow').checked) pre.scrollTop = pre.scrollHeight;
    });
    const ex = $('example');
    for (const k of Object.keys(EXAMPLES)) ex.append(el('option', { text: k }));
    const pick = () => { $('spec-text').value = JSON.stringify(EXAMPLES[ex.value], null, 2); };
    ex.addEventListener('change', pick);
    pick();
    $('spec-file').addEventListener('change', async (e) => {
      const f = e.target.files[0];
      if (f) $('spec-text').value = await f.text();
    });
    $('submit-btn').addEventListener('click', submit);
    window.addEventListener('hashchange', route);
    if (S.secret) signIn(S.secret).catch(() => signOut('Sign in again.'));
    else route();
  }

  document.addEventListener('DOMContentLoaded', init);
})();
