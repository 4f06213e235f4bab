// The idlegrid dashboard: plain JavaScript against the coordinator's JSON API
// (docs/api.md), with the caller's own API token. No framework, no build step,
// nothing from another origin (the page's Content-Security-Policy forbids it).
// Views refresh by polling; the page never reloads. Everything the API returns
// is inserted as text (textContent), never as markup.
'use strict';

(() => {
  const TOKEN_KEY = 'idlegrid.token';
  const POLL_MS = 2000;
  const LOG_KEEP_CHARS = 200000;  // the live log pane keeps its tail only
  const SVG_NS = 'http://www.w3.org/2000/svg';
  const TERMINAL = new Set(['SUCCEEDED', 'FAILED', 'CANCELLED']);

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
    return el('span', {class: 'state state-' + state}, state.toLowerCase());
  }
  function replaceRows(tbody, rows) {
    tbody.replaceChildren(...rows);
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
    return ms ? new Date(num(ms)).toLocaleString() : '';
  }
  function ago(ms) {
    if (!num(ms)) return 'never';
    const s = Math.max(0, Math.round((Date.now() - num(ms)) / 1000));
    return s + ' s ago';
  }
  function money(v) {
    return v === undefined ? '' : num(v).toFixed(4);
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

  // The JSON body, or an ApiError carrying the server's reason ({"code",
  // "message"}), or the status line where the server sent no JSON (a route
  // this coordinator does not have).
  async function api(path, method = 'GET', payload = undefined) {
    const headers = {'Authorization': 'Bearer ' + token(), 'Accept': 'application/json'};
    if (payload !== undefined) headers['Content-Type'] = 'application/json';
    const res = await fetch(path, {
      method,
      headers,
      body: payload === undefined ? undefined : JSON.stringify(payload),
      cache: 'no-store',
    });
    const text = await res.text();
    let body = null;
    try { body = text ? JSON.parse(text) : null; } catch (e) { body = null; }
    if (!res.ok) {
      const reason = body && body.message ? body.message
          : res.status + ' ' + (res.statusText || 'error') + ' (' + method + ' ' + path + ')';
      throw new ApiError(res.status, body && body.code ? body.code : String(res.status), reason);
    }
    return body || {};
  }

  // --- polling ------------------------------------------------------------------
  // Each poll renders only if no newer one (a view change) started since, so a
  // slow answer never paints over the view the user moved to.
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
  const VIEWS = ['login', 'fleet', 'jobs', 'job', 'market'];

  function route() {
    const [view, arg] = (location.hash.replace(/^#/, '') || 'fleet').split('/');
    if (view === 'job' && arg) return {view: 'job', jobId: decodeURIComponent(arg)};
    if (view === 'jobs' || view === 'market') return {view};
    return {view: 'fleet'};
  }

  function show(view) {
    for (const v of VIEWS) $(v + '-view').hidden = v !== view;
    $('nav').hidden = view === 'login';
    for (const v of ['fleet', 'jobs', 'market']) {
      $('nav-' + v).classList.toggle('current', v === view || (v === 'jobs' && view === 'job'));
    }
  }

  function viewRefresher() {
    const r = route();
    if (r.view === 'jobs') return refreshJobs;
    if (r.view === 'market') return refreshMarket;
    if (r.view === 'job') return () => refreshJob(r.jobId);
    return refreshFleet;
  }

  function navigate() {
    if (!token()) {
      show('login');
      return;
    }
    const r = route();
    show(r.view);
    if (r.view === 'job' && r.jobId !== logs.jobId) resetJobView(r.jobId);
    poll();
  }

  // --- login --------------------------------------------------------------------
  async function login(event) {
    event.preventDefault();
    const typed = $('token').value.trim();
    if (!typed) return;
    sessionStorage.setItem(TOKEN_KEY, typed);
    try {
      await api('/v1/jobs');
    } catch (e) {
      sessionStorage.removeItem(TOKEN_KEY);
      $('login-error').textContent = e.message;
      $('login-error').hidden = false;
      return;
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

  function renderNodes(nodes) {
    $('nodes-empty').hidden = nodes.length > 0;
    replaceRows($('nodes').tBodies[0], nodes.map((n) => {
      const info = n.info || {};
      const ad = n.advertisement || {};
      const schedulable = n.schedulable ? 'yes'
          : (n.unschedulableReason === 'draining' ? 'draining' : 'no: ' + (n.unschedulableReason || 'unknown'));
      const reliability = n.reliability === undefined ? '' : (num(n.reliability) * 100).toFixed(0) + ' %';
      return el('tr', {'data-node-id': n.id},
          el('td', {}, el('div', {}, n.name || info.hostname || ''), el('div', {class: 'mono muted'}, n.id)),
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
  async function refreshJobs() {
    const list = await api('/v1/jobs');
    return () => renderJobs(list.jobs || []);
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
          el('td', {}, el('a', {class: 'job-link mono', href: '#job/' + encodeURIComponent(j.id)}, j.id)),
          el('td', {}, (j.spec && j.spec.name) || ''),
          el('td', {}, j.account || ''),
          el('td', {}, stateBadge(j.state || 'QUEUED')),
          el('td', {}, el('progress', {max: Math.max(total, 1), value: done}), ' ', countsText(counts)),
          el('td', {}, timeOf(j.createdAtMs)));
    }));
  }

  // --- one job: tasks, attempts, explain, logs, actions --------------------------
  const logs = {jobId: null, after: 0, decoder: null};

  function resetJobView(jobId) {
    logs.jobId = jobId;
    logs.after = 0;
    logs.decoder = new TextDecoder();
    $('logs').textContent = '';
    $('job-message').textContent = '';
    $('job-id').textContent = jobId;
    $('job-state').textContent = '';
    replaceRows($('tasks').tBodies[0], []);
    $('explain').replaceChildren();
    $('explain-box').hidden = true;
  }

  async function refreshJob(jobId) {
    const job = await api('/v1/jobs/' + encodeURIComponent(jobId));
    const tasks = job.tasks || [];
    const waiting = tasks.some((t) => (t.state || '') === 'QUEUED');
    const [explain, chunks] = await Promise.all([
      waiting ? api('/v1/jobs/' + encodeURIComponent(jobId) + '/explain') : Promise.resolve(null),
      api('/v1/jobs/' + encodeURIComponent(jobId) + '/logs?after=' + logs.after),
    ]);
    return () => {
      renderJob(job);
      renderExplain(explain);
      appendLogs(jobId, chunks);
    };
  }

  function attemptList(attempts) {
    const list = el('ul', {class: 'attempt'});
    for (const a of attempts) {
      const parts = [a.id, 'on ' + (a.nodeId || '?'), (a.state || '').toLowerCase()];
      if (a.failureReason) parts.push(a.failureReason.toLowerCase());
      if (a.exitCode) parts.push('exit ' + a.exitCode);
      if (a.message) parts.push(a.message);
      list.append(el('li', {class: 'mono', 'data-attempt-id': a.id || ''}, parts.join(' · ')));
    }
    return list;
  }

  function renderJob(job) {
    const state = job.state || 'QUEUED';
    $('job-state').replaceChildren(stateBadge(state));
    const spec = job.spec || {};
    $('job-summary').textContent = [spec.name, spec.image, 'account ' + (job.account || ''),
      'submitted ' + timeOf(job.createdAtMs), countsText(job.taskCounts)].filter(Boolean).join(' · ');
    $('cancel-job').disabled = TERMINAL.has(state);
    replaceRows($('tasks').tBodies[0], (job.tasks || []).map((t) => {
      const s = t.state || 'QUEUED';
      return el('tr', {'data-task-index': num(t.index), 'data-state': s},
          el('td', {}, num(t.index)),
          el('td', {class: 'task-state'}, stateBadge(s)),
          el('td', {}, t.failureReason ? t.failureReason.toLowerCase() : ''),
          el('td', {}, t.message || ''),
          el('td', {}, attemptList(t.attempts || [])));
    }));
  }

  function renderExplain(explain) {
    const tasks = (explain && explain.tasks) || [];
    $('explain-box').hidden = tasks.length === 0;
    $('explain').replaceChildren(...tasks.map((t) => el('div', {class: 'explanation', 'data-task-index': num(t.index)},
        el('strong', {}, 'Task ' + num(t.index) + ': '), t.summary || '',
        el('pre', {class: 'explain-text'}, explanationText(t)))));
  }

  // The formatted explanation already carries fair share and the data
  // policy's verdict; add them only where it does not.
  function explanationText(t) {
    const text = t.text || '';
    return [text, ...[t.fairShare, t.dataPolicy].filter((extra) => extra && !text.includes(extra))].join('\n');
  }

  function appendLogs(jobId, answer) {
    if (jobId !== logs.jobId || !answer) return;
    const chunks = answer.chunks || [];
    if (!chunks.length) return;
    let text = '';
    for (const c of chunks) {
      const raw = atob(c.data || '');
      const data = Uint8Array.from(raw, (ch) => ch.charCodeAt(0));
      text += logs.decoder.decode(data, {stream: true});
    }
    logs.after = num(answer.next);
    const pane = $('logs');
    const atBottom = pane.scrollTop + pane.clientHeight >= pane.scrollHeight - 4;
    pane.textContent = (pane.textContent + text).slice(-LOG_KEEP_CHARS);
    if (atBottom) pane.scrollTop = pane.scrollHeight;
  }

  // Retry takes the job's failed tasks back to the queue (RetryJobRequest).
  async function jobAction(action, label) {
    const jobId = route().jobId;
    const msg = $('job-message');
    msg.className = '';
    // Cancelling stops running work: asked once more, never by a stray click.
    if (action === 'cancel' && !window.confirm('Cancel every task of job ' + jobId + ' that has not ended?')) {
      msg.textContent = label + ': not confirmed; nothing was cancelled';
      return;
    }
    msg.textContent = label + '…';
    try {
      await api('/v1/jobs/' + encodeURIComponent(jobId) + '/' + action, 'POST',
                action === 'retry' ? {failed: true} : undefined);
      msg.textContent = label + ': done';
    } catch (e) {
      msg.className = 'error';
      msg.textContent = label + ' refused: ' + e.message;
    }
    poll();
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
    $('cancel-job').addEventListener('click', () => jobAction('cancel', 'Cancel'));
    $('retry-job').addEventListener('click', () => jobAction('retry', 'Retry'));
    window.addEventListener('hashchange', navigate);
    navigate();
  });
})();
