// The idlegrid dashboard: plain JavaScript against the coordinator's JSON API
// (docs/api.md), with the caller's own API token. No framework, no build step,
// nothing from another origin (the page's Content-Security-Policy forbids it).
// Views refresh by polling; the page never reloads. Everything the API returns
// is inserted as text (textContent), never as markup. docs/dashboard.md says
// what each view shows and which routes it polls.
'use strict';

(() => {
  const TOKEN_KEY = 'idlegrid.token';
  const POLL_MS = 2000;
  const LOG_KEEP_CHARS = 200000;  // a log pane keeps its tail only
  const SVG_NS = 'http://www.w3.org/2000/svg';
  const TERMINAL = new Set(['SUCCEEDED', 'FAILED', 'CANCELLED']);
  const TASK_STATES = ['queued', 'assigned', 'running', 'succeeded', 'failed', 'cancelled', 'lost'];
  const TASK_PAGE = 50;          // tasks per page of the job view (the server pages)
  // A job's scheduling explanation covers every waiting task, so it is polled
  // on its own only while few wait; a larger job explains on request.
  const EXPLAIN_AUTO_MAX = 20;
  const EXPLAIN_EVERY_MS = 10000;
  const EXPLAIN_SHOWN = 5;       // explanations drawn at most (waiting tasks mostly share one)
  const FOLLOW_LOG_MAX_TASKS = 100;  // larger jobs start with the job-wide log off
  const HISTORY_PAGE = 50;
  const KEEP_ANSWERS = 64;       // GET answers kept for revalidation

  const $ = (id) => document.getElementById(id);

  // --- small DOM helpers ----------------------------------------------------
  function el(tag, props, ...children) {
    const e = document.createElement(tag);
    for (const [k, v] of Object.entries(props || {})) {
      if (k === 'class') e.className = v;
      else if (k.startsWith('data-')) e.setAttribute(k, v);
      else e[k] = v;
    }
    for (const c of children) {
      if (c === null || c === undefined) continue;
      e.append(c instanceof Node ? c : String(c));
    }
    return e;
  }
  function stateBadge(state) {
    return el('span', {class: 'state state-' + state}, String(state).toLowerCase());
  }
  function replaceRows(tbody, rows) {
    tbody.replaceChildren(...rows);
  }
  // Rows keyed by `key(item)` are rebuilt only when their item's JSON changed
  // since the last render; unchanged rows stay the same elements (a selection
  // or an open <details> in them survives a poll).
  function keyedRows(tbody, cache, items, key, build) {
    const next = new Map();
    const rows = items.map((item) => {
      const k = key(item);
      const json = JSON.stringify(item);
      const old = cache.get(k);
      const row = old && old.json === json ? old.row : build(item, old && old.row);
      next.set(k, {json, row});
      return row;
    });
    cache.clear();
    for (const [k, v] of next) cache.set(k, v);
    const same = rows.length === tbody.children.length && rows.every((r, i) => tbody.children[i] === r);
    if (!same) tbody.replaceChildren(...rows);
  }
  // protobuf's JSON mapping writes 64-bit integers as strings and leaves out
  // fields at their default value.
  const num = (v) => (v === undefined || v === null || v === '' ? 0 : Number(v));
  function bytes(n) {
    n = num(n);
    const units = ['B', 'KiB', 'MiB', 'GiB', 'TiB'];
    let i = 0;
    while (n >= 1024 && i < units.length - 1) { n /= 1024; i++; }
    return (i ? n.toFixed(1) : String(n)) + ' ' + units[i];
  }
  function timeOf(ms) {
    return num(ms) ? new Date(num(ms)).toLocaleString() : '';
  }
  function ago(ms) {
    if (!num(ms)) return 'never';
    const s = Math.max(0, Math.round((Date.now() - num(ms)) / 1000));
    return s + ' s ago';
  }
  function duration(ms) {
    let s = Math.max(0, Math.round(num(ms) / 1000));
    if (s < 60) return s + ' s';
    const h = Math.floor(s / 3600), m = Math.floor((s % 3600) / 60);
    s %= 60;
    return h ? h + ' h ' + m + ' min' : m + ' min ' + s + ' s';
  }
  function money(v) {
    return v === undefined ? '' : num(v).toFixed(4);
  }
  // Ledger amounts are integer micro-credits.
  function credits(micros) {
    return (num(micros) / 1e6).toFixed(6);
  }
  const lower = (s) => String(s || '').toLowerCase().replace(/_/g, ' ');
  const jobPath = (id) => '/v1/jobs/' + encodeURIComponent(id);
  const jobHash = (id) => '#job/' + encodeURIComponent(id);
  const taskHash = (id, index) => jobHash(id) + '/task/' + num(index);
  const nodeHash = (id) => '#node/' + encodeURIComponent(id);
  function nodeLink(id) {
    return id ? el('a', {class: 'node-link mono', href: nodeHash(id)}, id) : '';
  }
  // Runs of task indices ([{first, last}]) as "3, 7-9".
  function rangesText(ranges) {
    return (ranges || []).map((r) => (num(r.first) === num(r.last) ? String(num(r.first))
        : num(r.first) + '-' + num(r.last))).join(', ');
  }
  function factsRows(tbody, facts) {
    replaceRows(tbody, facts.filter(([, v]) => v !== null && v !== undefined && v !== '')
        .map(([label, value]) => el('tr', {'data-fact': label}, el('th', {}, label), el('td', {}, value))));
  }

  // --- errors -----------------------------------------------------------------
  function showError(message) {
    const e = $('error');
    e.textContent = message || '';
    e.hidden = !message;
  }

  class ApiError extends Error {
    constructor(status, code, message) {
      super(message);
      this.status = status;
      this.code = code;
    }
  }

  // --- the API ------------------------------------------------------------------
  const token = () => sessionStorage.getItem(TOKEN_KEY);

  // GET answers kept with their ETag, by path: a poll sends If-None-Match and
  // a 304 reuses the kept answer, so a view that did not change moves a few
  // hundred bytes and is not drawn again. (The browser's own cache would send
  // it too, but it keeps nothing from a site whose certificate it was told to
  // accept, and it would hide whether the answer changed.)
  const kept = new Map();

  function keep(path, etag, body) {
    kept.delete(path);
    kept.set(path, {etag, body});
    if (kept.size > KEEP_ANSWERS) kept.delete(kept.keys().next().value);
  }

  async function failure(res, method, path) {
    const text = await res.text();
    let body = null;
    try { body = text ? JSON.parse(text) : null; } catch (e) { body = null; }
    const reason = body && body.message ? body.message
        : res.status + ' ' + (res.statusText || 'error') + ' (' + method + ' ' + path + ')';
    return new ApiError(res.status, body && body.code ? body.code : String(res.status), reason);
  }

  // {body, changed}: the JSON body (read-only: a kept one is shared), and
  // false when a GET's answer is the one kept from the previous call. Throws
  // an ApiError with the server's reason ({"code", "message"}), or the status
  // line where the server sent no JSON (a route this coordinator lacks).
  async function call(path, method = 'GET', payload = undefined) {
    const headers = {'Authorization': 'Bearer ' + token(), 'Accept': 'application/json'};
    if (payload !== undefined) headers['Content-Type'] = 'application/json';
    const before = method === 'GET' ? kept.get(path) : undefined;
    if (before) headers['If-None-Match'] = before.etag;
    const res = await fetch(path, {
      method,
      headers,
      body: payload === undefined ? undefined : JSON.stringify(payload),
      cache: 'no-store',
    });
    if (res.status === 304 && before) return {body: before.body, changed: false};
    if (!res.ok) throw await failure(res, method, path);
    const text = await res.text();
    let body = {};
    try { body = text ? JSON.parse(text) : {}; } catch (e) { body = {}; }
    const etag = res.headers.get('ETag');
    if (method === 'GET' && etag) keep(path, etag, body);
    return {body, changed: true};
  }

  async function api(path, method = 'GET', payload = undefined) {
    return (await call(path, method, payload)).body;
  }

  // Fetches `path` with the token and saves it through a Blob URL as
  // `filename`; with `digest` ("sha256:HEX") the bytes are checked first and
  // nothing is saved when they differ. Reports progress in `msg`.
  async function download(path, filename, msg, digest) {
    msg.className = '';
    msg.textContent = 'downloading ' + filename + '…';
    try {
      const res = await fetch(path, {headers: {'Authorization': 'Bearer ' + token()}, cache: 'no-store'});
      if (!res.ok) throw await failure(res, 'GET', path);
      const blob = await res.blob();
      let checked = '';
      if (digest && crypto.subtle) {
        const sum = await crypto.subtle.digest('SHA-256', await blob.arrayBuffer());
        const hex = [...new Uint8Array(sum)].map((b) => b.toString(16).padStart(2, '0')).join('');
        if ('sha256:' + hex !== digest) throw new Error('the bytes received hash to sha256:' + hex + ', not ' + digest);
        checked = ', digest checked';
      }
      const url = URL.createObjectURL(blob);
      const link = el('a', {href: url, download: filename, hidden: true});
      document.body.append(link);
      link.click();
      link.remove();
      setTimeout(() => URL.revokeObjectURL(url), 60000);
      msg.textContent = 'saved ' + filename + ' (' + bytes(blob.size) + checked + ')';
    } catch (e) {
      msg.className = 'error';
      msg.textContent = 'download of ' + filename + ' failed: ' + e.message;
    }
  }

  // Asks once more before anything destructive; false leaves `msg` saying so.
  function confirmed(question, msg, nothing) {
    if (window.confirm(question)) return true;
    msg.className = '';
    msg.textContent = 'not confirmed; ' + nothing;
    return false;
  }

  // Runs a POST for a button, saying in `msg` how it went, then polls.
  async function act(msg, label, path, payload) {
    msg.className = '';
    msg.textContent = label + '…';
    try {
      await api(path, 'POST', payload);
      msg.textContent = label + ': done';
    } catch (e) {
      msg.className = 'error';
      msg.textContent = label + ' refused: ' + e.message;
    }
    poll();
  }

  // --- polling ------------------------------------------------------------------
  // Each poll renders only if no newer one (a view change) started since, so a
  // slow answer never paints over the view the user moved to. A refresher
  // returns the function that draws what it fetched.
  let generation = 0;
  let timer = null;

  async function poll() {
    clearTimeout(timer);
    const mine = ++generation;
    if (!token()) return;
    try {
      const render = await viewRefresher()();
      if (mine !== generation) return;
      render();
      showError('');
      $('updated').textContent = 'updated ' + new Date().toLocaleTimeString();
    } catch (e) {
      if (mine !== generation) return;
      if (e instanceof ApiError && e.status === 401) {
        logout('The token was refused: ' + e.message);
        return;
      }
      showError(e.message);
    }
    if (mine === generation) timer = setTimeout(poll, POLL_MS);
  }

  // --- routing ------------------------------------------------------------------
  const VIEWS = ['login', 'fleet', 'jobs', 'job', 'task', 'node', 'workflows', 'workflow', 'market', 'balance',
    'earnings'];
  const NAV_OF = {job: 'jobs', task: 'jobs', node: 'fleet', workflow: 'workflows'};

  function route() {
    let parts;
    try {
      parts = (location.hash.replace(/^#/, '') || 'fleet').split('/').map(decodeURIComponent);
    } catch (e) {
      return {view: 'fleet'};
    }
    const [view, arg, sub, index] = parts;
    if (view === 'job' && arg && sub === 'task' && /^[0-9]+$/.test(index || '')) {
      return {view: 'task', jobId: arg, task: Number(index)};
    }
    if (view === 'job' && arg) return {view: 'job', jobId: arg};
    if (view === 'node' && arg) return {view: 'node', nodeId: arg};
    if (view === 'workflow' && arg) return {view: 'workflow', workflowId: arg};
    if (['jobs', 'workflows', 'market', 'balance', 'earnings'].includes(view)) return {view};
    return {view: 'fleet'};
  }

  function show(view) {
    for (const v of VIEWS) $(v + '-view').hidden = v !== view;
    $('nav').hidden = view === 'login';
    for (const a of $('nav').querySelectorAll('a')) {
      a.classList.toggle('current', a.id === 'nav-' + (NAV_OF[view] || view));
    }
  }

  function viewRefresher() {
    const r = route();
    switch (r.view) {
      case 'jobs': return refreshJobs;
      case 'job': return () => refreshJob(r.jobId);
      case 'task': return () => refreshTask(r.jobId, r.task);
      case 'node': return () => refreshNode(r.nodeId);
      case 'workflows': return refreshWorkflows;
      case 'workflow': return () => refreshWorkflow(r.workflowId);
      case 'market': return refreshMarket;
      case 'balance': return refreshBalance;
      case 'earnings': return refreshEarnings;
      default: return refreshFleet;
    }
  }

  function navigate() {
    if (!token()) {
      show('login');
      return;
    }
    const r = route();
    show(r.view);
    if (r.view === 'job' && r.jobId !== jobView.jobId) resetJobView(r.jobId);
    if (r.view === 'task' && (r.jobId !== taskView.jobId || r.task !== taskView.task)) resetTaskView(r.jobId, r.task);
    if (r.view === 'node' && r.nodeId !== nodeView.nodeId) resetNodeView(r.nodeId);
    if (r.view === 'workflow') $('workflow-message').textContent = '';
    poll();
  }

  // --- login --------------------------------------------------------------------
  // A token is refused only by a 401: a provider's token may not list jobs
  // (403) and is still a good token.
  async function login(event) {
    event.preventDefault();
    const typed = $('token').value.trim();
    if (!typed) return;
    sessionStorage.setItem(TOKEN_KEY, typed);
    try {
      await api('/v1/jobs');
    } catch (e) {
      if (!(e instanceof ApiError) || e.status === 401) {
        sessionStorage.removeItem(TOKEN_KEY);
        $('login-error').textContent = e.message;
        $('login-error').hidden = false;
        return;
      }
    }
    $('token').value = '';
    $('login-error').hidden = true;
    await landingView();
    navigate();
  }

  // Where a login lands when no view was asked for: the fleet for those who
  // see nodes (operators, providers), their jobs for requesters (who see none).
  async function landingView() {
    if (location.hash.replace(/^#/, '')) return;
    try {
      const nodes = await api('/v1/nodes');
      if (!(nodes.nodes || []).length) history.replaceState(null, '', '#jobs');
    } catch (e) {
      history.replaceState(null, '', '#jobs');
    }
  }

  function logout(why) {
    clearTimeout(timer);
    generation++;
    sessionStorage.removeItem(TOKEN_KEY);
    kept.clear();
    jobView.jobId = null;
    taskView.jobId = null;
    nodeView.nodeId = null;
    showError('');
    $('updated').textContent = '';
    $('login-error').textContent = why || '';
    $('login-error').hidden = !why;
    show('login');
  }

  // --- fleet ----------------------------------------------------------------------
  async function refreshFleet() {
    const [nodes, history] = await Promise.all([api('/v1/nodes'), api('/v1/history')]);
    return () => {
      renderNodes(nodes.nodes || []);
      renderChart(history);
    };
  }

  function gpuCell(gpus) {
    if (!gpus.length) return el('span', {class: 'muted'}, 'none');
    const list = el('ul', {class: 'attempt'});
    for (const g of gpus) {
      const kind = g.simulated ? 'simulated' : (g.measured ? 'measured' : 'unmeasured');
      list.append(el('li', {'data-gpu-kind': kind},
          (g.name || 'GPU') + ' · ' + kind + ' · ' + bytes(g.allocatableMemoryBytes) + ' free of ' +
          bytes(num(g.memoryTotalBytes) - num(g.reservedMemoryBytes)) +
          (g.unavailableReason ? ' · not offered: ' + g.unavailableReason : '')));
    }
    return list;
  }

  // The owner's pause under "schedulable": its cause, and when an
  // `idlegrid agent pause --for` ends (the agent's clock).
  function pauseLine(p) {
    if (!p || !p.paused) return null;
    let text = 'owner pause (' + (p.cause || '?') + ')';
    if (num(p.untilMs) > 0) text += ' · ends in ' + Math.max(0, Math.ceil((num(p.untilMs) - Date.now()) / 60000)) + ' min';
    else if (p.cause === 'owner-command') text += ' · until idlegrid agent resume';
    return el('div', {class: 'muted pause'}, text);
  }

  // The physical-work handshake under the score (docs/provider.md): what it is made of.
  function handshakeLine(c) {
    if (!c) return null;
    let text = 'rtt ' + num(c.rttMs).toFixed(0) + ' ms · lost ' + (num(c.heartbeatLoss) * 100).toFixed(0) +
        ' % · jitter ' + num(c.heartbeatJitterMs).toFixed(0) + ' ms';
    if (num(c.stalls) > 0) text += ' · ' + num(c.stalls) + ' stall(s)';
    if (num(c.ownerPauses) > 0) text += ' · owner pauses ' + num(c.ownerPauses);
    return el('div', {class: 'muted handshake'}, text);
  }

  function schedulableText(n) {
    if (n.schedulable) return 'yes';
    return String(n.unschedulableReason || '').startsWith('draining') ? 'draining' : 'no: ' + (n.unschedulableReason || 'unknown');
  }

  function renderNodes(nodes) {
    $('nodes-empty').hidden = nodes.length > 0;
    replaceRows($('nodes').tBodies[0], nodes.map((n) => {
      const info = n.info || {};
      const ad = n.advertisement || {};
      const schedulable = schedulableText(n);
      const reliability = n.reliability === undefined ? '' : (num(n.reliability) * 100).toFixed(0) + ' %';
      return el('tr', {'data-node-id': n.id},
          el('td', {}, el('div', {}, n.name || info.hostname || ''), nodeLink(n.id)),
          el('td', {}, stateBadge(n.state || 'offline')),
          el('td', {class: 'schedulable'}, schedulable, pauseLine(n.pause)),
          el('td', {}, num(n.cpuAllocated) + ' / ' + num(ad.allocatableCpu || info.cpuCores)),
          el('td', {}, bytes(n.memoryAllocated) + ' / ' + bytes(ad.allocatableMemoryBytes || info.memoryBytes)),
          el('td', {}, gpuCell(n.gpus || [])),
          el('td', {title: n.reliabilityDetail || ''}, reliability, handshakeLine(n.reliabilityComponents)),
          el('td', {}, num(n.runningAttempts)),
          el('td', {}, ago(n.lastHeartbeatMs)));
    }));
  }

  function svg(tag, attrs, text) {
    const e = document.createElementNS(SVG_NS, tag);
    for (const [k, v] of Object.entries(attrs)) e.setAttribute(k, String(v));
    if (text !== undefined) e.textContent = text;
    return e;
  }

  // Queue length, running tasks and GPU allocation over the samples the
  // coordinator keeps (GET /v1/history), as polylines on one shared scale.
  function renderChart(history) {
    const samples = history.samples || [];
    const box = $('chart');
    if (samples.length < 2) {
      box.replaceChildren(el('p', {class: 'muted'},
          'Collecting samples (one every ' + num(history.periodMs) / 1000 + ' s).'));
      return;
    }
    const W = 720, H = 220, L = 40, R = 10, T = 10, B = 24;
    const t0 = num(samples[0].atMs), t1 = num(samples[samples.length - 1].atMs);
    const series = [
      ['series-queued', 'queuedTasks'], ['series-running', 'runningTasks'],
      ['series-gpus', 'gpusAllocated'], ['series-gpus-total', 'gpusTotal'],
    ];
    let top = 1;
    for (const s of samples) for (const [, key] of series) top = Math.max(top, num(s[key]));
    const x = (t) => L + (t1 === t0 ? 0 : (num(t) - t0) / (t1 - t0)) * (W - L - R);
    const y = (v) => T + (1 - num(v) / top) * (H - T - B);
    const chart = svg('svg', {viewBox: `0 0 ${W} ${H}`, role: 'img', 'aria-label': 'fleet load over time'});
    chart.append(svg('line', {class: 'axis', x1: L, y1: y(0), x2: W - R, y2: y(0)}));
    chart.append(svg('line', {class: 'axis', x1: L, y1: T, x2: L, y2: y(0)}));
    chart.append(svg('text', {x: L - 6, y: T + 10, 'text-anchor': 'end'}, String(top)));
    chart.append(svg('text', {x: L - 6, y: y(0), 'text-anchor': 'end'}, '0'));
    chart.append(svg('text', {x: L, y: H - 6}, new Date(t0).toLocaleTimeString()));
    chart.append(svg('text', {x: W - R, y: H - 6, 'text-anchor': 'end'}, new Date(t1).toLocaleTimeString()));
    for (const [cls, key] of series) {
      const points = samples.map((s) => x(s.atMs).toFixed(1) + ',' + y(s[key]).toFixed(1)).join(' ');
      chart.append(svg('polyline', {class: cls, points, 'data-series': key}));
    }
    box.replaceChildren(chart);
  }

  // --- jobs -------------------------------------------------------------------------
  let jobsDrawnFor = null;  // the state filter the list was last drawn with

  async function refreshJobs() {
    const {body: list, changed} = await call('/v1/jobs');
    return () => {
      if (!changed && jobsDrawnFor === $('state-filter').value) return;
      jobsDrawnFor = $('state-filter').value;
      renderJobs(list.jobs || []);
    };
  }

  function countsText(counts) {
    return Object.entries(counts || {}).filter(([, n]) => n > 0).map(([s, n]) => n + ' ' + s).join(' · ');
  }

  function renderJobs(jobs) {
    const wanted = $('state-filter').value;
    const shown = jobs.filter((j) => !wanted || (j.state || '') === wanted)
        .sort((a, b) => num(b.createdAtMs) - num(a.createdAtMs));
    $('jobs-empty').hidden = shown.length > 0;
    replaceRows($('jobs').tBodies[0], shown.map((j) => {
      const counts = j.taskCounts || {};
      const total = Object.values(counts).reduce((a, n) => a + n, 0);
      const done = (counts.succeeded || 0) + (counts.failed || 0) + (counts.cancelled || 0);
      return el('tr', {'data-job-id': j.id},
          el('td', {}, el('a', {class: 'job-link mono', href: jobHash(j.id)}, j.id)),
          el('td', {}, (j.spec && j.spec.name) || ''),
          el('td', {}, j.account || ''),
          el('td', {}, stateBadge(j.state || 'QUEUED')),
          el('td', {}, el('progress', {max: Math.max(total, 1), value: done}), ' ', countsText(counts)),
          el('td', {}, timeOf(j.createdAtMs)));
    }));
  }

  // --- one job: summary, failure reasons, a page of tasks, explain, log ------
  // The job is read one page at a time (GET /v1/jobs/ID?offset&limit&state):
  // its summary and the 50 tasks on screen, never every task, so a poll of a
  // 10,000-task job moves what a 50-task one does.
  const jobView = {jobId: null};

  function resetJobView(jobId) {
    Object.assign(jobView, {
      jobId, offset: 0, state: '', rows: new Map(), drawn: false, followDecided: false,
      logAfter: 0, decoders: {}, explainAt: 0, explain: null, explainAsked: false,
    });
    $('logs').textContent = '';
    $('job-message').textContent = '';
    $('job-id').textContent = jobId;
    $('job-state').textContent = '';
    $('job-summary').textContent = '';
    $('job-counts').replaceChildren();
    $('job-progress-text').textContent = '';
    $('task-state-filter').value = '';
    $('tasks-range').textContent = '';
    replaceRows($('tasks').tBodies[0], []);
    replaceRows($('reasons').tBodies[0], []);
    $('reasons-box').hidden = true;
    $('explain').replaceChildren();
    $('explain-box').hidden = true;
    $('explain-ask').hidden = true;
  }

  function jobPageQuery() {
    const q = new URLSearchParams({offset: String(jobView.offset), limit: String(TASK_PAGE)});
    if (jobView.state) q.set('state', jobView.state);
    return q.toString();
  }

  async function refreshJob(jobId) {
    const {body: job, changed} = await call(jobPath(jobId) + '?' + jobPageQuery());
    const total = num((job.summary || {}).tasks) || (job.tasks || []).length;
    if (!jobView.followDecided) {
      jobView.followDecided = true;
      $('job-log-follow').checked = total <= FOLLOW_LOG_MAX_TASKS;
    }
    const waiting = num((job.taskCounts || {}).queued);
    const explainDue = waiting > 0 && (jobView.explainAsked || waiting <= EXPLAIN_AUTO_MAX) &&
        Date.now() - jobView.explainAt >= EXPLAIN_EVERY_MS;
    const [explain, chunks] = await Promise.all([
      explainDue ? api(jobPath(jobId) + '/explain') : Promise.resolve(undefined),
      $('job-log-follow').checked ? api(jobPath(jobId) + '/logs?after=' + jobView.logAfter) : Promise.resolve(null),
    ]);
    return () => {
      if (jobId !== jobView.jobId) return;
      if (changed || !jobView.drawn) renderJob(job);
      if (waiting === 0) jobView.explain = null;
      if (explain !== undefined) {
        jobView.explain = explain;
        jobView.explainAt = Date.now();
      }
      renderExplain(jobView.explain, waiting);
      appendLog($('logs'), jobView, chunks);
    };
  }

  function renderJob(job) {
    jobView.drawn = true;
    const state = job.state || 'QUEUED';
    const summary = job.summary || {};
    const counts = job.taskCounts || {};
    $('job-state').replaceChildren(stateBadge(state));
    const spec = job.spec || {};
    $('job-summary').textContent = [spec.name, spec.image, 'account ' + (job.account || ''),
      'submitted ' + timeOf(job.createdAtMs),
      job.workflowId ? 'step ' + (job.workflowStep || '') + ' of workflow ' + job.workflowId : '',
      job.settled ? 'settled' : ''].filter(Boolean).join(' · ');
    $('job-counts').replaceChildren(...TASK_STATES.filter((s) => num(counts[s]) > 0).map((s) =>
      el('button', {type: 'button', class: 'count', 'data-state': s, title: 'show the ' + s + ' tasks'},
          stateBadge(s.toUpperCase()), ' ' + num(counts[s]))));
    // A coordinator from before summaries: the counts say as much.
    const total = num(summary.tasks) || Object.values(counts).reduce((a, n) => a + num(n), 0);
    const ended = num(summary.ended) || num(counts.succeeded) + num(counts.failed) + num(counts.cancelled);
    $('job-progress').max = Math.max(total, 1);
    $('job-progress').value = ended;
    const pace = [ended + ' of ' + total + ' tasks ended'];
    if (num(summary.tasksPerMinute) > 0) pace.push(num(summary.tasksPerMinute).toFixed(1) + ' tasks/min');
    if (num(summary.etaMs) > 0) pace.push('about ' + duration(summary.etaMs) + ' left');
    $('job-progress-text').textContent = pace.join(' · ');
    $('cancel-job').disabled = TERMINAL.has(state) || job.settled === true;
    $('retry-job').disabled = num(counts.failed) === 0;
    renderReasons(summary.reasons || []);
    renderTaskPage(job);
  }

  // Tasks grouped by state and failure reason, most first, with the lowest
  // runs of their indices; a group's button filters the table to its state.
  function renderReasons(groups) {
    $('reasons-box').hidden = groups.length === 0;
    replaceRows($('reasons').tBodies[0], groups.map((g) => {
      const state = String(g.state || 'QUEUED').toLowerCase();
      return el('tr', {'data-state': state, 'data-reason': g.reason || ''},
          el('td', {}, el('button', {type: 'button', class: 'reason-filter', 'data-state': state,
            title: 'show the ' + state + ' tasks'}, stateBadge(g.state || 'QUEUED'))),
          el('td', {}, lower(g.reason)),
          el('td', {}, num(g.count)),
          el('td', {class: 'mono'}, rangesText(g.ranges)));
    }));
  }

  function renderTaskPage(job) {
    const tasks = job.tasks || [];
    const matched = job.tasksPaged ? num(job.tasksMatched) : tasks.length;
    if (matched > 0 && jobView.offset >= matched) {
      // The selection shrank under this page: show its last page instead.
      jobView.offset = Math.floor((matched - 1) / TASK_PAGE) * TASK_PAGE;
      jobView.drawn = false;
      setTimeout(poll, 0);
      return;
    }
    $('tasks-empty').hidden = tasks.length > 0;
    $('tasks-range').textContent = matched === 0 ? 'none' : (jobView.offset + 1) + '–' +
        (jobView.offset + tasks.length) + ' of ' + matched + (jobView.state ? ' ' + jobView.state : '');
    $('tasks-prev').disabled = jobView.offset === 0;
    $('tasks-next').disabled = jobView.offset + TASK_PAGE >= matched;
    keyedRows($('tasks').tBodies[0], jobView.rows, tasks, (t) => num(t.index), (t) => taskRow(job.id, t));
  }

  function taskRow(jobId, t) {
    const s = t.state || 'QUEUED';
    const attempts = t.attempts || [];
    const last = attempts[attempts.length - 1];
    let lastText = '';
    if (last) {
      lastText = 'last on ' + (last.nodeId || '?') + ' · ' + lower(last.state);
      if (last.finishedAtMs && last.startedAtMs) lastText += ' · exit ' + num(last.exitCode);
    }
    return el('tr', {'data-task-index': num(t.index), 'data-state': s},
        el('td', {}, el('a', {class: 'task-link', href: taskHash(jobId, t.index)}, num(t.index))),
        el('td', {class: 'task-state'}, stateBadge(s)),
        el('td', {}, lower(t.failureReason)),
        el('td', {}, t.message || ''),
        el('td', {}, attempts.length ? el('span', {}, attempts.length + ' · ', el('span', {class: 'muted'}, lastText)) : ''),
        el('td', {}, t.cost ? money(t.cost) : ''));
  }

  function setTaskFilter(state) {
    jobView.state = state;
    jobView.offset = 0;
    jobView.drawn = false;
    $('task-state-filter').value = state;
    poll();
  }

  function turnTaskPage(delta) {
    jobView.offset = Math.max(0, jobView.offset + delta * TASK_PAGE);
    jobView.drawn = false;
    poll();
  }

  // Waiting tasks mostly wait for one reason: the first few explanations,
  // and how many more wait. A job with many waiting tasks explains on request.
  function renderExplain(explain, waiting) {
    const tasks = (explain && explain.tasks) || [];
    $('explain-ask').hidden = !(waiting > EXPLAIN_AUTO_MAX && !jobView.explainAsked);
    $('explain-box').hidden = tasks.length === 0;
    const boxes = tasks.slice(0, EXPLAIN_SHOWN).map((t) => el('div', {class: 'explanation', 'data-task-index': num(t.index)},
        el('strong', {}, 'Task ' + num(t.index) + ': '), t.summary || '',
        el('pre', {class: 'explain-text'}, explanationText(t))));
    if (tasks.length > EXPLAIN_SHOWN) {
      boxes.push(el('p', {class: 'muted'}, (tasks.length - EXPLAIN_SHOWN) + ' more waiting task(s) explained alike or not shown'));
    }
    $('explain').replaceChildren(...boxes);
  }

  // The formatted explanation already carries fair share and the data
  // policy's verdict; add them only where it does not.
  function explanationText(t) {
    const text = t.text || '';
    return [text, ...[t.fairShare, t.dataPolicy].filter((extra) => extra && !text.includes(extra))].join('\n');
  }

  // Appends a logs answer ({chunks, next}) to `pane`, decoding each stream's
  // bytes on its own (a character may span two chunks), and advances the
  // cursor kept in `view.logAfter`.
  function appendLog(pane, view, answer) {
    if (!answer) return;
    const chunks = answer.chunks || [];
    view.logAfter = Math.max(view.logAfter, num(answer.next));
    if (!chunks.length) return;
    if (!view.decoders) view.decoders = {};
    let text = '';
    for (const c of chunks) {
      const stream = c.stream || 'stdout';
      if (!view.decoders[stream]) view.decoders[stream] = new TextDecoder();
      const raw = atob(c.data || '');
      text += view.decoders[stream].decode(Uint8Array.from(raw, (ch) => ch.charCodeAt(0)), {stream: true});
    }
    const atBottom = pane.scrollTop + pane.clientHeight >= pane.scrollHeight - 4;
    pane.textContent = (pane.textContent + text).slice(-LOG_KEEP_CHARS);
    if (atBottom) pane.scrollTop = pane.scrollHeight;
  }

  // Cancel stops running work and retry starts work again: each is asked
  // once more, never done by a stray click.
  function cancelJob() {
    const jobId = jobView.jobId;
    if (!confirmed('Cancel every task of job ' + jobId + ' that has not ended?', $('job-message'), 'nothing was cancelled')) return;
    act($('job-message'), 'Cancel', jobPath(jobId) + '/cancel', undefined);
  }

  function retryJob() {
    const jobId = jobView.jobId;
    if (!confirmed('Run the failed tasks of job ' + jobId + ' again?', $('job-message'), 'nothing was retried')) return;
    act($('job-message'), 'Retry', jobPath(jobId) + '/retry', {failed: true});
  }

  // --- one task: attempts, outputs, receipts, provenance, its own log ---------
  const taskView = {jobId: null};

  function resetTaskView(jobId, task) {
    Object.assign(taskView, {jobId, task, rows: new Map(), details: new Map(), drawn: false, logAfter: 0,
      decoders: {}, stream: ''});
    $('task-job-link').href = jobHash(jobId);
    $('task-job-link').textContent = '← job ' + jobId;
    $('task-job-id').textContent = jobId;
    $('task-index').textContent = String(task);
    $('task-state').textContent = '';
    $('task-summary').replaceChildren();
    $('task-explain-box').hidden = true;
    $('task-explain-text').replaceChildren();
    $('download-message').textContent = '';
    $('task-log-stream').value = '';
    $('task-logs').textContent = '';
    replaceRows($('attempts').tBodies[0], []);
    $('attempt-details').replaceChildren();
  }

  function taskLogQuery() {
    const q = new URLSearchParams({after: String(taskView.logAfter), task: String(taskView.task)});
    if (taskView.stream) q.set('stream', taskView.stream);
    return q.toString();
  }

  async function refreshTask(jobId, index) {
    const [{body: job, changed}, chunks] = await Promise.all([
      call(jobPath(jobId) + '?tasks=' + index + '&limit=1'),
      api(jobPath(jobId) + '/logs?' + taskLogQuery()),
    ]);
    const task = (job.tasks || [])[0];
    if (!task) throw new ApiError(404, 'NotFound', 'job ' + jobId + ' has no task ' + index);
    const stream = taskView.stream;
    return () => {
      if (jobId !== taskView.jobId || index !== taskView.task) return;
      if (changed || !taskView.drawn) renderTask(job, task);
      if (stream === taskView.stream) appendLog($('task-logs'), taskView, chunks);
    };
  }

  function renderTask(job, t) {
    taskView.drawn = true;
    const s = t.state || 'QUEUED';
    $('task-state').replaceChildren(stateBadge(s));
    const facts = [lower(t.failureReason), t.message, t.verification,
      t.cost ? 'cost ' + money(t.cost) : '', num(t.workRedoneMs) ? 'work redone ' + duration(t.workRedoneMs) : '',
      num(t.logsDroppedBytes) ? bytes(t.logsDroppedBytes) + ' of output not kept' : ''].filter(Boolean);
    $('task-summary').replaceChildren(el('span', {}, facts.join(' · ')));
    $('task-explain-box').hidden = s !== 'QUEUED';
    const attempts = t.attempts || [];
    $('attempts-empty').hidden = attempts.length > 0;
    keyedRows($('attempts').tBodies[0], taskView.rows, attempts, (a) => a.id, attemptRow);
    keyedRows($('attempt-details'), taskView.details, attempts, (a) => a.id,
              (a, old) => attemptDetail(job.id, t, a, old));
  }

  function attemptRow(a) {
    const s = a.state || 'ASSIGNED';
    const start = num(a.startedAtMs), end = num(a.finishedAtMs);
    const ran = start ? (end || Date.now()) - start : 0;
    const exit = end && start && !['CANCELLED', 'LOST'].includes(s) ? ' exit ' + num(a.exitCode) : '';
    const placement = a.placement || {};
    return el('tr', {'data-attempt-id': a.id || '', 'data-state': s},
        el('td', {class: 'mono'}, a.id || ''),
        el('td', {}, nodeLink(a.nodeId)),
        el('td', {}, timeOf(start || a.assignedAtMs)),
        el('td', {}, timeOf(end)),
        el('td', {}, start ? duration(ran) + (end ? '' : ' (running)') : ''),
        el('td', {class: 'attempt-exit'}, stateBadge(s), exit),
        el('td', {}, lower(a.failureReason)),
        el('td', {}, a.message || ''),
        el('td', {}, a.cost ? money(a.cost) : ''),
        el('td', {}, placement.pricePerHour ? money(placement.pricePerHour) : ''));
  }

  // An attempt's outputs (each a download of its blob, checked against its
  // digest), its receipt and, folded, its provenance. A re-drawn block keeps
  // its <details> open if they were.
  function attemptDetail(jobId, t, a, old) {
    const box = el('div', {class: 'attempt-detail', 'data-attempt-id': a.id || ''},
        el('h4', {}, 'Attempt ', el('span', {class: 'mono'}, a.id || '')));
    const outputs = a.outputs || [];
    if (outputs.length) {
      const list = el('ul', {class: 'outputs'});
      for (const o of outputs) {
        const filename = String(o.path || 'output').replace(/\//g, '_');
        const msg = $('download-message');
        const button = el('button', {type: 'button', class: 'download-output', 'data-digest': o.digest || '',
          'data-path': o.path || ''}, 'Download');
        button.addEventListener('click', () =>
          download('/v1/artifacts/' + encodeURIComponent(o.digest), filename, msg, o.digest));
        list.append(el('li', {}, button, ' ', el('span', {class: 'mono'}, o.path || ''), ' · ' + bytes(o.size) + ' · ',
            el('span', {class: 'mono muted'}, o.digest || '')));
      }
      box.append(el('div', {}, el('strong', {}, 'Outputs')), list);
    }
    if (a.receipt) {
      const receipt = el('button', {type: 'button', class: 'download-receipt'}, 'Download receipt');
      const q = new URLSearchParams({task: String(num(t.index)), attempt: a.id || ''});
      receipt.addEventListener('click', () => download(jobPath(jobId) + '/receipt?' + q,
          'receipt-' + jobId + '-' + num(t.index) + '-' + (a.id || '') + '.json', $('download-message')));
      box.append(el('p', {}, receipt, ' ', el('span', {class: 'muted'},
          'signed by the node, countersigned by the coordinator (idlegrid receipt verify)')));
    }
    const m = a.metering;
    if (m) {
      box.append(el('p', {class: 'muted'}, 'metered: cpu ' + duration(m.cpuMillis) + (m.gpuMillis ? ' · gpu ' +
          duration(m.gpuMillis) : '') + ' · in ' + bytes(m.bytesIn) + ' · out ' + bytes(m.bytesOut)));
    }
    if (a.provenance) {
      const table = el('table', {class: 'facts'}, el('tbody'));
      factsRows(table.tBodies[0], Object.entries(a.provenance).map(([k, v]) =>
        [k, Array.isArray(v) ? v.join(', ') : String(v)]));
      const details = el('details', {class: 'provenance'}, el('summary', {}, 'Provenance'), table);
      const was = old && old.querySelector('details.provenance');
      if (was && was.open) details.open = true;
      box.append(details);
    }
    return box;
  }

  async function explainTask() {
    const r = route();
    const out = $('task-explain-text');
    out.replaceChildren(el('span', {class: 'muted'}, 'asking the scheduler…'));
    try {
      const explain = await api(jobPath(r.jobId) + '/explain');
      const t = (explain.tasks || []).find((x) => num(x.index) === r.task);
      out.replaceChildren(t ? el('pre', {class: 'explain-text'}, (t.summary ? t.summary + '\n' : '') + explanationText(t))
          : el('span', {class: 'muted'}, 'it no longer waits'));
    } catch (e) {
      out.replaceChildren(el('span', {class: 'error'}, e.message));
    }
  }

  function changeTaskStream() {
    taskView.stream = $('task-log-stream').value;
    taskView.logAfter = 0;
    taskView.decoders = {};
    $('task-logs').textContent = '';
    poll();
  }

  // --- one node: what it offers, how reliable, drain / undrain ---------------
  const nodeView = {nodeId: null};

  function resetNodeView(nodeId) {
    // pages: the page tokens of the newer pages passed on the way to this one.
    Object.assign(nodeView, {nodeId, drawn: false, page: '', pages: [], attemptsDrawn: false, rows: new Map()});
    replaceRows($('node-attempts').tBodies[0], []);
    $('node-attempts-empty').hidden = true;
    $('node-attempts-older').disabled = true;
    $('node-attempts-newer').disabled = true;
    $('node-name').textContent = '';
    $('node-id').textContent = nodeId;
    $('node-state').textContent = '';
    $('node-message').textContent = '';
    $('node-missing').hidden = true;
    replaceRows($('node-facts').tBodies[0], []);
    $('node-gpus').replaceChildren();
  }

  async function refreshNode(nodeId) {
    const page = nodeView.page;
    const [{body, changed}, attempts] = await Promise.all([call('/v1/nodes'), nodeAttempts(nodeId, page)]);
    const node = (body.nodes || []).find((n) => n.id === nodeId);
    return () => {
      if (nodeId !== nodeView.nodeId) return;
      if (changed || !nodeView.drawn) {
        nodeView.drawn = true;
        renderNode(node);
      }
      if (page === nodeView.page && (attempts.changed || !nodeView.attemptsDrawn)) renderNodeAttempts(attempts.body);
    };
  }

  // A page of what ran on the node, newest first (ListNodeAttempts: the
  // node's provider and operators; anyone else is refused, shown as empty).
  async function nodeAttempts(nodeId, page) {
    const path = '/v1/nodes/' + encodeURIComponent(nodeId) + '/attempts?limit=50' +
        (page ? '&page_token=' + encodeURIComponent(page) : '');
    try {
      return await call(path);
    } catch (e) {
      return {body: {refused: e.message}, changed: true};
    }
  }

  function renderNodeAttempts(body) {
    nodeView.attemptsDrawn = true;
    const list = body.attempts || [];
    $('node-attempts-empty').hidden = list.length > 0;
    $('node-attempts-empty').textContent = body.refused ? 'Not shown: ' + body.refused
        : nodeView.page ? 'No older attempt.' : 'No attempt has run here yet.';
    keyedRows($('node-attempts').tBodies[0], nodeView.rows, list, (r) => (r.attempt || {}).id, nodeAttemptRow);
    nodeView.next = body.nextPageToken || '';
    $('node-attempts-older').disabled = !nodeView.next;
    $('node-attempts-newer').disabled = !nodeView.page;
  }

  function nodeAttemptRow(r) {
    const a = r.attempt || {};
    const s = a.state || 'ASSIGNED';
    const start = num(a.startedAtMs), end = num(a.finishedAtMs);
    const exit = end && start && !['CANCELLED', 'LOST'].includes(s) ? ' exit ' + num(a.exitCode) : '';
    return el('tr', {'data-attempt-id': a.id || '', 'data-state': s},
        el('td', {}, el('a', {class: 'task-link mono', href: taskHash(r.jobId, r.taskIndex)},
            (r.jobId || '') + ' / ' + num(r.taskIndex))),
        el('td', {class: 'mono'}, a.id || ''),
        el('td', {}, timeOf(start || a.assignedAtMs)),
        el('td', {}, start ? duration((end || Date.now()) - start) + (end ? '' : ' (running)') : ''),
        el('td', {class: 'attempt-exit'}, stateBadge(s), exit),
        el('td', {}, lower(a.failureReason)),
        el('td', {}, a.cost ? money(a.cost) : ''));
  }

  // Older follows the page's next token; Newer goes back one page.
  function pageNodeAttempts(older) {
    if (older && !nodeView.next) return;
    if (older) {
      nodeView.pages.push(nodeView.page);
      nodeView.page = nodeView.next;
    } else {
      nodeView.page = nodeView.pages.pop() || '';
    }
    nodeView.attemptsDrawn = false;
    poll();
  }

  function renderNode(n) {
    $('node-missing').hidden = !!n;
    $('drain-node').disabled = !n || String(n.unschedulableReason || '').startsWith('draining');
    $('undrain-node').disabled = !n || !String(n.unschedulableReason || '').startsWith('draining');
    if (!n) {
      $('node-state').textContent = '';
      replaceRows($('node-facts').tBodies[0], []);
      $('node-gpus').replaceChildren();
      return;
    }
    const info = n.info || {};
    const ad = n.advertisement || {};
    const measured = n.measurement || {};
    $('node-name').textContent = n.name || info.hostname || '';
    $('node-state').replaceChildren(stateBadge(n.state || 'offline'));
    const reliability = n.reliability === undefined ? '' : (num(n.reliability) * 100).toFixed(0) + ' %';
    factsRows($('node-facts').tBodies[0], [
      ['Schedulable', el('span', {class: 'schedulable'}, schedulableText(n), pauseLine(n.pause))],
      ['Provider', n.provider || ''],
      ['CPU', num(n.cpuAllocated) + ' of ' + num(ad.allocatableCpu || info.cpuCores) + ' cores held'],
      ['Memory', bytes(n.memoryAllocated) + ' of ' + bytes(ad.allocatableMemoryBytes || info.memoryBytes) + ' held'],
      ['Running attempts', String(num(n.runningAttempts))],
      ['Reliability', el('span', {}, reliability, n.reliabilityDetail ? ' · ' + n.reliabilityDetail : '',
        handshakeLine(n.reliabilityComponents))],
      ['Trust tier', String(num(n.trustTier))],
      ['Readiness benchmark', !num(measured.measuredAtMs) ? 'not yet measured'
        : (measured.passed ? 'passed' : 'failed: ' + (measured.reason || '?')) + ' · CPU score ' +
          num(measured.cpuScore).toFixed(0) + ' · ' + timeOf(measured.measuredAtMs)],
      ['Heartbeat', ago(n.lastHeartbeatMs)],
      ['Host', [info.hostname, info.region, info.agentVersion && 'agent ' + info.agentVersion].filter(Boolean).join(' · ')],
      ['Runtimes', (info.runtimes || []).join(', ')],
      ['Connected from', n.peer || ''],
    ]);
    $('node-gpus').replaceChildren(gpuCell(n.gpus || []));
  }

  // Draining stops new work (running work may finish); undraining takes work
  // again. DrainNode's rule: the node's provider or an operator; another
  // token's 403 shows as the refusal.
  function drainNode(undo) {
    const id = nodeView.nodeId;
    const question = undo ? 'Undrain node ' + id + '? It takes new work again.'
        : 'Drain node ' + id + '? It takes no new work; what runs may finish.';
    if (!confirmed(question, $('node-message'), 'nothing changed')) return;
    act($('node-message'), undo ? 'Undrain' : 'Drain', '/v1/nodes/' + encodeURIComponent(id) + '/drain',
        undo ? {undo: true} : {});
  }

  // --- workflows --------------------------------------------------------------
  const workflowHash = (id) => '#workflow/' + encodeURIComponent(id);

  async function refreshWorkflows() {
    const {body, changed} = await call('/v1/workflows');
    return () => {
      if (!changed && $('workflows').tBodies[0].children.length) return;
      const list = [...(body.workflows || [])].sort((a, b) => num(b.createdAtMs) - num(a.createdAtMs));
      $('workflows-empty').hidden = list.length > 0;
      replaceRows($('workflows').tBodies[0], list.map((w) => {
        const steps = w.steps || [];
        const done = steps.filter((s) => ['succeeded', 'skipped'].includes(s.state)).length;
        return el('tr', {'data-workflow-id': w.id},
            el('td', {}, el('a', {class: 'workflow-link mono', href: workflowHash(w.id)}, w.id)),
            el('td', {}, (w.spec && w.spec.name) || ''),
            el('td', {}, w.account || ''),
            el('td', {}, stateBadge(w.state || 'running')),
            el('td', {}, el('progress', {max: Math.max(steps.length, 1), value: done}), ' ' + done + ' of ' + steps.length),
            el('td', {}, timeOf(w.createdAtMs)));
      }));
    };
  }

  async function refreshWorkflow(workflowId) {
    const w = await api('/v1/workflows/' + encodeURIComponent(workflowId));
    return () => {
      if (route().workflowId !== workflowId) return;
      const spec = w.spec || {};
      const dependsOn = new Map((spec.steps || []).map((s) => [s.name, (s.dependsOn || []).join(', ')]));
      $('workflow-id').textContent = w.id || workflowId;
      $('workflow-state').replaceChildren(stateBadge(w.state || 'running'));
      $('workflow-summary').textContent = [spec.name, 'account ' + (w.account || ''), 'submitted ' + timeOf(w.createdAtMs),
        'on failure: ' + (spec.onFailure || 'stop')].filter(Boolean).join(' · ');
      $('cancel-workflow').disabled = ['succeeded', 'failed', 'cancelled'].includes(w.state);
      replaceRows($('steps').tBodies[0], (w.steps || []).map((s) => el('tr', {'data-step': s.name || ''},
          el('td', {}, s.name || ''),
          el('td', {}, stateBadge(s.state || 'waiting')),
          el('td', {}, dependsOn.get(s.name) || ''),
          el('td', {}, s.jobId ? el('a', {class: 'job-link mono', href: jobHash(s.jobId)}, s.jobId) : ''),
          el('td', {}, s.cached ? 'yes' : ''),
          el('td', {}, s.message || ''))));
    };
  }

  function cancelWorkflow() {
    const id = route().workflowId;
    if (!confirmed('Cancel workflow ' + id + ' and every step still to run?', $('workflow-message'),
        'nothing was cancelled')) return;
    act($('workflow-message'), 'Cancel', '/v1/workflows/' + encodeURIComponent(id) + '/cancel', undefined);
  }

  // --- money: the ledger balance and history, a provider's earnings ----------
  // A coordinator without --ledger, or a token without the right, answers
  // with a reason: it shows in the view, not as a failed poll.
  const historyView = {after: 0};

  async function orNote(promise) {
    try {
      return {answer: await promise};
    } catch (e) {
      if (e instanceof ApiError && e.status !== 401) return {note: e.message};
      throw e;
    }
  }

  async function refreshBalance() {
    const after = historyView.after;
    const [balance, history] = await Promise.all([
      orNote(api('/v1/ledger/balance')),
      orNote(api('/v1/ledger/history?after=' + after + '&limit=' + HISTORY_PAGE)),
    ]);
    return () => {
      const note = balance.note || history.note;
      $('balance-note').hidden = !note;
      $('balance-note').textContent = note || '';
      const b = balance.answer || {};
      $('balance-account').textContent = b.account || '';
      factsRows($('balance').tBodies[0], balance.answer ? [
        ['Available', credits(b.availableMicros)], ['In escrow', credits(b.escrowMicros)],
        ['Pending', credits(b.pendingMicros)], ['Staked', credits(b.stakeMicros)]] : []);
      replaceRows($('balance-accounts').tBodies[0], (b.accounts || []).map((a) => el('tr', {'data-kind': a.kind || ''},
          el('td', {}, a.kind || ''), el('td', {class: 'mono'}, a.scope || ''), el('td', {}, credits(a.micros)))));
      const postings = (history.answer && history.answer.postings) || [];
      $('history-empty').hidden = postings.length > 0;
      $('history-first').disabled = after === 0;
      $('history-next').disabled = postings.length < HISTORY_PAGE;
      $('history-range').textContent = postings.length ? 'postings ' + num(postings[0].seq) + '–' +
          num(postings[postings.length - 1].seq) : '';
      historyView.last = postings.length ? num(postings[postings.length - 1].seq) : after;
      replaceRows($('history').tBodies[0], postings.map((p) => el('tr', {'data-seq': num(p.seq)},
          el('td', {}, num(p.seq)), el('td', {}, timeOf(p.appliedAtMs)), el('td', {}, p.reason || ''),
          el('td', {}, p.jobId ? el('a', {class: 'job-link mono', href: jobHash(p.jobId)}, p.jobId) : ''),
          el('td', {}, p.memo || ''),
          el('td', {class: 'mono'}, (p.entries || []).map((e) => e.owner + ' ' + e.kind + (e.scope ? ':' + e.scope : '') +
              ' ' + (num(e.micros) >= 0 ? '+' : '') + credits(e.micros)).join('\n')))));
    };
  }

  async function refreshEarnings() {
    const earned = await orNote(api('/v1/earnings'));
    return () => {
      $('earnings-note').hidden = !earned.note;
      $('earnings-note').textContent = earned.note || '';
      const e = earned.answer || {};
      const nodes = e.nodes || [];
      $('earnings-provider').textContent = e.provider || '';
      const line = earned.answer ? ['metered ' + money(e.meteredCredits) + ' credits',
        'about ' + money(e.estimatePerHour) + ' an hour if fully used'] : [];
      if (e.ledger) {
        line.push('pending ' + credits(e.pendingMicros), 'available ' + credits(e.availableMicros),
            'staked ' + credits(e.stakeMicros));
      }
      $('earnings-summary').textContent = line.join(' · ');
      $('earnings-empty').hidden = nodes.length > 0 || !earned.answer;
      replaceRows($('earnings').tBodies[0], nodes.map((n) => el('tr', {'data-node-id': n.nodeId || ''},
          el('td', {}, el('div', {}, n.name || ''), nodeLink(n.nodeId)),
          el('td', {}, num(n.attempts)),
          el('td', {}, duration(n.cpuMillis)),
          el('td', {}, duration(n.gpuMillis)),
          el('td', {}, money(n.meteredCredits)),
          el('td', {}, money(n.estimatePerHour)),
          el('td', {class: 'muted'}, n.estimateBasis || ''))));
    };
  }

  // --- market -----------------------------------------------------------------------
  async function refreshMarket() {
    const [market, history] = await Promise.all([api('/v1/market'), api('/v1/history')]);
    return () => {
      renderPrices(history.samples || []);
      const rows = market.rows || [];
      $('market-empty').hidden = rows.length > 0;
      $('pricing-rule').textContent = market.pricingRule ? 'Pricing rule: ' + market.pricingRule : '';
      replaceRows($('market').tBodies[0], rows.map((r) => el('tr', {'data-device-class': r.deviceClass || ''},
          el('td', {}, r.deviceClass || ''), el('td', {}, num(r.providers)), el('td', {}, num(r.freeUnits)),
          el('td', {}, money(r.minAsk)), el('td', {}, money(r.medianAsk)), el('td', {}, money(r.maxAsk)))));
      $('market-text').textContent = market.text || '';
    };
  }

  // The lowest ask per device class over the coordinator's samples: what a
  // placement would have paid, per hour, as it changed.
  function renderPrices(samples) {
    const byClass = new Map();
    for (const s of samples) {
      for (const [cls, micros] of Object.entries(s.lowestAskMicros || {})) {
        if (!byClass.has(cls)) byClass.set(cls, []);
        byClass.get(cls).push([num(s.atMs), num(micros) / 1e6]);
      }
    }
    $('prices-empty').hidden = byClass.size > 0;
    replaceRows($('prices').tBodies[0], [...byClass.entries()].map(([cls, points]) => {
      const values = points.map(([, v]) => v);
      return el('tr', {'data-device-class': cls},
          el('td', {}, cls), el('td', {}, money(values[values.length - 1])),
          el('td', {}, money(Math.min(...values))), el('td', {}, money(Math.max(...values))),
          el('td', {}, sparkline(points)));
    }));
  }

  function sparkline(points) {
    const W = 160, H = 28;
    const t0 = points[0][0], t1 = points[points.length - 1][0];
    const lo = Math.min(...points.map(([, v]) => v)), hi = Math.max(...points.map(([, v]) => v));
    const x = (t) => (t1 === t0 ? W : (t - t0) / (t1 - t0) * W);
    const y = (v) => (hi === lo ? H / 2 : 2 + (1 - (v - lo) / (hi - lo)) * (H - 4));
    const line = svg('svg', {viewBox: `0 0 ${W} ${H}`, class: 'sparkline', role: 'img', 'aria-label': 'lowest ask'});
    line.append(svg('polyline', {class: 'series-running',
      points: points.map(([t, v]) => x(t).toFixed(1) + ',' + y(v).toFixed(1)).join(' ')}));
    return line;
  }

  // --- wiring -------------------------------------------------------------------------
  document.addEventListener('DOMContentLoaded', () => {
    $('login-form').addEventListener('submit', login);
    $('logout').addEventListener('click', () => logout(''));
    $('state-filter').addEventListener('change', () => poll());
    $('cancel-job').addEventListener('click', cancelJob);
    $('retry-job').addEventListener('click', retryJob);
    $('task-state-filter').addEventListener('change', () => setTaskFilter($('task-state-filter').value));
    // A state's count, or a failure reason's group: the table shows that state.
    for (const box of ['job-counts', 'reasons']) {
      $(box).addEventListener('click', (event) => {
        const button = event.target.closest('button[data-state]');
        if (button) setTaskFilter(button.getAttribute('data-state'));
      });
    }
    $('tasks-prev').addEventListener('click', () => turnTaskPage(-1));
    $('tasks-next').addEventListener('click', () => turnTaskPage(1));
    $('explain-job').addEventListener('click', () => {
      jobView.explainAsked = true;
      jobView.explainAt = 0;
      poll();
    });
    $('job-log-follow').addEventListener('change', () => poll());
    $('task-explain').addEventListener('click', explainTask);
    $('task-log-stream').addEventListener('change', changeTaskStream);
    $('drain-node').addEventListener('click', () => drainNode(false));
    $('undrain-node').addEventListener('click', () => drainNode(true));
    $('node-attempts-older').addEventListener('click', () => pageNodeAttempts(true));
    $('node-attempts-newer').addEventListener('click', () => pageNodeAttempts(false));
    $('cancel-workflow').addEventListener('click', cancelWorkflow);
    $('history-first').addEventListener('click', () => { historyView.after = 0; poll(); });
    $('history-next').addEventListener('click', () => { historyView.after = historyView.last || 0; poll(); });
    window.addEventListener('hashchange', navigate);
    navigate();
  });
})();
