// Live status page for mcpw. Every piece of server data goes through
// textContent or setAttribute, never through innerHTML.
'use strict';

const TOKEN_KEY = 'mcpw-token';
const REFRESH_MS = 5000;
const MAX_CARDS = 24;
const SVG_NS = 'http://www.w3.org/2000/svg';
const DASH = '\u2014';

const $ = (sel) => document.querySelector(sel);
let refreshTimer = null;
let searchTimer = null;
let searchSeq = 0; // discards search answers that arrive after a newer query
let epoch = 0; // bumped on sign-out so a refresh already in flight is ignored

// ---- token and API ----------------------------------------------------

// sessionStorage keeps the token to this tab and drops it when the tab closes.
// A token in the address (`mcpw serve --page` prints one) is taken, then
// dropped from the address.
{
  const given = new URLSearchParams(location.hash.slice(1)).get('token');
  if (given) {
    sessionStorage.setItem(TOKEN_KEY, given);
    history.replaceState(null, '', location.pathname);
  }
}
const getToken = () => sessionStorage.getItem(TOKEN_KEY) || '';

class Unauthorized extends Error {}

async function api(path) {
  const token = getToken();
  const headers = token ? { Authorization: 'Bearer ' + token } : {};
  const res = await fetch(path, { headers, cache: 'no-store' });
  if (res.status === 401) throw new Unauthorized('HTTP 401');
  if (!res.ok) throw new Error(path + ' answered HTTP ' + res.status);
  return res.json();
}

// ---- DOM helpers --------------------------------------------------------

function el(tag, attrs, ...children) {
  const node = document.createElement(tag);
  setAttrs(node, attrs);
  for (const c of children) if (c != null) node.append(c); // strings become text nodes
  return node;
}

function svg(tag, attrs, ...children) {
  const node = document.createElementNS(SVG_NS, tag);
  setAttrs(node, attrs);
  for (const c of children) if (c != null) node.append(c);
  return node;
}

function setAttrs(node, attrs) {
  for (const [k, v] of Object.entries(attrs || {})) {
    if (v == null || v === false) continue;
    if (k === 'class') node.setAttribute('class', v);
    else if (k === 'text') node.textContent = v;
    else node.setAttribute(k, String(v));
  }
}

// Shortens long text; the full text goes into the title tooltip.
function clipped(tag, text, max, cls) {
  if (text == null || text === '') return el(tag, { class: 'muted' }, DASH);
  const s = String(text);
  const short = s.length > max ? s.slice(0, max - 1).trimEnd() + '\u2026' : s;
  return el(tag, { class: cls, title: s }, short);
}

// Replaces the body rows; the empty-state row sits in <tfoot> so that
// `tbody tr` only ever matches data rows.
function fillTable(table, rows, emptyText) {
  table.tBodies[0].replaceChildren(...rows);
  const cols = table.tHead ? table.tHead.rows[0].cells.length : 1;
  if (rows.length) table.deleteTFoot();
  else if (!table.tFoot) {
    table.createTFoot().append(el('tr', { class: 'empty' }, el('td', { colspan: cols }, emptyText)));
  }
}

const cell = (content, cls) => el('td', { class: cls }, content);
const numCell = (content) => cell(content, 'num');

const toolId = (t) => t.server + '/' + t.tool;
const pad2 = (n) => String(n).padStart(2, '0');
function clock(ms, seconds = true) {
  const d = new Date(ms);
  const hm = pad2(d.getHours()) + ':' + pad2(d.getMinutes());
  return seconds ? hm + ':' + pad2(d.getSeconds()) : hm;
}

const fmtInt = (n) => (n == null ? DASH : Math.round(n).toLocaleString('en-US'));

function fmtMs(ms) {
  if (ms == null || !isFinite(ms)) return DASH;
  if (ms >= 100 || Number.isInteger(ms)) return fmtInt(ms);
  return ms >= 10 ? ms.toFixed(1) : ms.toFixed(2);
}

function fmtMiB(bytes) {
  if (bytes == null) return DASH;
  const mib = bytes / 1048576;
  return Number.isInteger(mib) ? fmtInt(mib) : mib.toFixed(1);
}

// ---- views ----------------------------------------------------------------

function showLogin(message) {
  epoch++;
  stopRefresh();
  $('#content').hidden = true;
  $('#signout').hidden = true;
  $('#banner').hidden = true;
  $('#refreshed').textContent = '';
  $('#login-message').textContent = message || 'This gateway requires an access token.';
  const form = $('#login');
  form.hidden = false;
  form.elements.token.value = '';
  form.elements.token.focus();
}

function showContent() {
  $('#login').hidden = true;
  $('#content').hidden = false;
  // Signing out only means something when there is a token to forget.
  $('#signout').hidden = !getToken();
}

function showBanner(text) {
  const banner = $('#banner');
  banner.textContent = text;
  banner.hidden = !text;
}

// ---- servers, sessions, guests -------------------------------------------

function renderOverview(o) {
  $('#version').textContent = o.version ? 'v' + o.version : '';

  fillTable($('#servers'), (o.servers || []).map((s) => el('tr', { 'data-server': s.name },
    cell(s.name, 'name'),
    cell(el('span', { class: 'pill state-' + s.state }, s.state)),
    cell(el('span', { class: 'health health-' + s.health }, s.health)),
    cell(s.transport),
    numCell(fmtInt(s.tools)),
    cell(s.backoffSeconds == null ? DASH : Math.ceil(s.backoffSeconds) + ' s', 'nowrap'),
    cell(clipped('span', s.lastError, 90, 'error-text'), 'last-error'),
  )), 'No servers configured');

  fillTable($('#sessions'), (o.sessions || []).map((s) => el('tr', { 'data-client': s.client },
    cell(s.client), numCell(fmtInt(s.sessions)),
  )), 'No open sessions');

  fillTable($('#guests'), (o.guests || []).map((g) => el('tr', null,
    cell(g.role), cell(g.name),
    numCell(fmtMiB(g.memoryBytes)), numCell(fmtMs(g.deadlineMs)),
  )), 'No guests loaded');
}

// ---- calls ----------------------------------------------------------------

function renderCalls(c) {
  const busy = (c.tools || [])
    .filter((t) => t.totalCalls > 0)
    .sort((a, b) => b.totalCalls - a.totalCalls || b.totalErrors - a.totalErrors
      || toolId(a).localeCompare(toolId(b)));
  const charts = $('#charts');
  if (!busy.length) {
    charts.replaceChildren(el('p', { class: 'empty' }, 'No calls in the last hour'));
  } else {
    const cards = busy.slice(0, MAX_CARDS).map((t) => card(t, c.end, c.minutes || 60));
    if (busy.length > MAX_CARDS) {
      cards.push(el('p', { class: 'muted more' }, `Showing the ${MAX_CARDS} busiest of ${busy.length} tools.`));
    }
    charts.replaceChildren(...cards);
  }

  fillTable($('#slowest'), (c.slowest || []).map((s) => el('tr', { class: s.error ? 'failed' : null },
    cell(s.server), cell(s.tool, 'name'), numCell(fmtMs(s.ms)),
    cell(clock(s.at), 'nowrap'), cell(clipped('span', s.error, 60, 'error-text'), 'last-error'),
  )), 'No calls yet');
}

function card(t, end, minutes) {
  const id = toolId(t);
  const totals = [fmtInt(t.totalCalls) + (t.totalCalls === 1 ? ' call' : ' calls')];
  totals.push(el('span', { class: t.totalErrors ? 'err' : null },
    fmtInt(t.totalErrors) + (t.totalErrors === 1 ? ' error' : ' errors')));
  if (t.p50MsHour != null) totals.push('p50 ' + fmtMs(t.p50MsHour) + ' ms');
  const line = el('p', { class: 'totals' });
  totals.forEach((part, i) => line.append(i ? ' \u00b7 ' : '', part));
  return el('article', { class: 'card', 'data-tool': id },
    el('h3', { title: id }, el('span', { class: 'muted' }, t.server + '/'), t.tool),
    line,
    chart(t, end, minutes),
  );
}

// 60 one-minute buckets: call bars, error bars on top of them on the same
// scale, and the p50 latency as a line with its own scale.
function chart(t, end, minutes) {
  const W = 240, H = 64, TOP = 4, n = minutes;
  const step = W / n, barW = Math.max(1, step - 1);
  const calls = t.calls || [], errors = t.errors || [], p50 = t.p50Ms || [];
  const maxCalls = Math.max(1, ...calls);
  const p50s = p50.filter((v) => v != null && isFinite(v));
  const maxP50 = p50s.length ? Math.max(...p50s) : 0;
  const y = (v, max) => H - (v / max) * (H - TOP);

  const bars = svg('g', { class: 'bars' });
  const errs = svg('g', { class: 'errors' });
  const hits = svg('g', { class: 'hover' });
  for (let i = 0; i < n; i++) {
    const x = (i * step).toFixed(2);
    const nCalls = calls[i] || 0, nErr = errors[i] || 0;
    if (nCalls) bars.append(svg('rect', { x, y: y(nCalls, maxCalls).toFixed(2), width: barW, height: ((nCalls / maxCalls) * (H - TOP)).toFixed(2) }));
    if (nErr) errs.append(svg('rect', { x, y: y(nErr, maxCalls).toFixed(2), width: barW, height: ((nErr / maxCalls) * (H - TOP)).toFixed(2) }));
    // A transparent full-height column carries the tooltip for the minute.
    const at = end - (n - 1 - i) * 60000;
    let tip = `${clock(at, false)}  ${nCalls} calls, ${nErr} errors`;
    if (p50[i] != null) tip += `, p50 ${fmtMs(p50[i])} ms`;
    hits.append(svg('rect', { x, y: 0, width: step, height: H }, svg('title', null, tip)));
  }

  // The line breaks where a minute has no latency; lone points become dots.
  const line = svg('g', { class: 'p50' });
  if (maxP50 > 0) {
    let seg = [];
    const flush = () => {
      if (seg.length === 1) line.append(svg('circle', { cx: seg[0][0], cy: seg[0][1], r: 1.6 }));
      else if (seg.length > 1) line.append(svg('polyline', { points: seg.map((p) => p.join(',')).join(' ') }));
      seg = [];
    };
    for (let i = 0; i < n; i++) {
      const v = p50[i];
      if (v == null || !isFinite(v)) { flush(); continue; }
      seg.push([(i * step + step / 2).toFixed(2), y(v, maxP50 * 1.1).toFixed(2)]);
    }
    flush();
  }

  const label = `${toolId(t)}: ${t.totalCalls} calls, ${t.totalErrors} errors in the last ${n} minutes`;
  const graphic = svg('svg', { class: 'chart', viewBox: `0 0 ${W} ${H}`, role: 'img', 'aria-label': label },
    svg('line', { class: 'base', x1: 0, y1: H - 0.5, x2: W, y2: H - 0.5 }),
    bars, errs, line, hits);

  const legend = el('div', { class: 'legend' },
    el('span', null, '\u2212' + n + ' min'),
    el('span', { class: 'scale' }, 'max ' + fmtInt(Math.max(0, ...calls)) + '/min',
      maxP50 > 0 ? el('span', { class: 'p50-key' }, ' \u00b7 p50 max ' + fmtMs(maxP50) + ' ms') : null),
    el('span', null, clock(end, false)),
  );
  return el('div', { class: 'chart-wrap' }, graphic, legend);
}

// ---- refresh loop ---------------------------------------------------------

function stopRefresh() {
  clearTimeout(refreshTimer);
  refreshTimer = null;
}

function scheduleRefresh() {
  stopRefresh();
  refreshTimer = setTimeout(refresh, REFRESH_MS);
}

// Resolves true when the page rendered, false when the server wants a token.
async function refresh() {
  const mine = epoch;
  try {
    const [overview, calls] = await Promise.all([api('/api/overview'), api('/api/calls')]);
    if (mine !== epoch) return false;
    renderOverview(overview);
    renderCalls(calls);
    showContent();
    showBanner('');
    $('#refreshed').textContent = 'updated ' + clock(Date.now());
    scheduleRefresh();
    return true;
  } catch (err) {
    if (mine !== epoch) return false;
    if (err instanceof Unauthorized) {
      handleUnauthorized();
      return false;
    }
    showBanner('Refresh failed: ' + (err && err.message ? err.message : String(err)) + '. Retrying\u2026');
    scheduleRefresh();
    return true;
  }
}

// A 401 means no token, a wrong one, or one revoked since it was entered.
function handleUnauthorized() {
  const had = getToken();
  sessionStorage.removeItem(TOKEN_KEY);
  const wasShowing = !$('#content').hidden;
  showLogin(had
    ? (wasShowing ? 'The server no longer accepts this token. Sign in again.' : 'That token was not accepted.')
    : null);
}

// ---- search ---------------------------------------------------------------

async function runSearch(query) {
  const seq = ++searchSeq;
  const note = $('#search-note');
  const list = $('#hits');
  const q = query.trim();
  if (!q) {
    note.hidden = true;
    list.replaceChildren();
    return;
  }
  try {
    const res = await api('/api/search?q=' + encodeURIComponent(q) + '&limit=10');
    if (seq !== searchSeq) return;
    note.className = 'note';
    note.textContent = res.note || '';
    note.hidden = !res.note;
    renderHits(res.hits || [], q);
  } catch (err) {
    if (seq !== searchSeq) return;
    if (err instanceof Unauthorized) { handleUnauthorized(); return; }
    note.className = 'note error-text';
    note.textContent = 'Search failed: ' + err.message;
    note.hidden = false;
  }
}

function renderHits(hits, q) {
  const list = $('#hits');
  if (!hits.length) {
    list.replaceChildren(el('li', { class: 'empty' }, `No tools match \u201c${q}\u201d`));
    return;
  }
  // Both signals share one scale so their bars compare with each other.
  const maxAbs = Math.max(1e-9, ...hits.flatMap((h) => [h.words, h.meaning])
    .filter((v) => v != null && isFinite(v)).map(Math.abs));
  list.replaceChildren(...hits.map((h, i) => el('li', { class: 'hit', 'data-name': h.name },
    el('div', { class: 'hit-head' },
      el('span', { class: 'rank' }, String(i + 1)),
      el('code', { class: 'name' }, h.name),
      el('span', { class: 'server muted' }, h.server),
      el('span', { class: 'score', title: 'total score' }, fmtScore(h.score)),
    ),
    clipped('p', h.description, 160, 'desc'),
    el('div', { class: 'signals' }, signal('words', h.words, maxAbs), signal('meaning', h.meaning, maxAbs)),
  )));
}

function signal(name, value, maxAbs) {
  const has = value != null && isFinite(value);
  const track = el('span', { class: 'track' });
  if (has) {
    const pct = Math.min(100, (Math.abs(value) / maxAbs) * 100);
    track.append(el('span', { class: 'fill' + (value < 0 ? ' neg' : ''), style: `width:${pct.toFixed(1)}%` }));
  }
  return el('div', { class: 'signal signal-' + name },
    el('span', { class: 'signal-name' }, name), track,
    el('span', { class: 'signal-value' }, has ? fmtScore(value) : DASH));
}

const fmtScore = (v) => (v == null || !isFinite(v) ? DASH : v.toFixed(2));

// ---- wiring ---------------------------------------------------------------

function init() {
  $('#login').addEventListener('submit', async (e) => {
    e.preventDefault();
    const form = e.currentTarget;
    const token = form.elements.token.value.trim();
    if (!token) return;
    sessionStorage.setItem(TOKEN_KEY, token);
    form.querySelector('button').disabled = true;
    try {
      if (await refresh()) {
        const q = $('#search').elements.q.value;
        if (q.trim()) runSearch(q);
      }
    } finally {
      form.querySelector('button').disabled = false;
    }
  });

  $('#signout').addEventListener('click', (e) => {
    e.preventDefault();
    sessionStorage.removeItem(TOKEN_KEY);
    showLogin('Signed out.');
  });

  const search = $('#search');
  search.addEventListener('submit', (e) => {
    e.preventDefault();
    clearTimeout(searchTimer);
    runSearch(search.elements.q.value);
  });
  search.elements.q.addEventListener('input', () => {
    clearTimeout(searchTimer);
    searchTimer = setTimeout(() => runSearch(search.elements.q.value), 250);
  });

  // A hidden tab keeps its timer; refresh at once when it comes back.
  document.addEventListener('visibilitychange', () => {
    if (!document.hidden && refreshTimer) { stopRefresh(); refresh(); }
  });

  // Try without asking first: a gateway without tokens answers right away.
  refresh();
}

init();
