// Drives headless Chromium over the DevTools protocol through mcpw's live
// page: signs in with each token, waits for the servers table and the
// charts, searches, keeps a screenshot of the first token's view, and
// prints what each token saw as JSON.
//
//   node --experimental-websocket page-check.mjs '{"url": ..., "tokens": [..], "search": "..", "screenshot": "..png", "profile": "dir"}'
import { writeFileSync } from "node:fs";
import { browser } from "./devtools.mjs";

const plan = JSON.parse(process.argv[2]);
let send, ev, until;

async function signIn(token) {
  await send("Page.navigate", { url: plan.url });
  await until("the login form", `!!document.querySelector('#login') && !document.querySelector('#login').hidden`);
  await ev(`(() => { const f = document.querySelector('#login'); f.elements.token.value = ${JSON.stringify(token)}; f.requestSubmit(); })()`);
  await until("the servers table", `document.querySelectorAll('#servers tbody tr[data-server]').length > 0`);
  await until("the charts", `document.querySelectorAll('#charts svg.chart').length > 0 || !!document.querySelector('#charts .empty')`);
}

async function search(query) {
  await ev(`(() => { const i = document.querySelector('#search input[name=q]'); i.value = ${JSON.stringify(query)}; i.dispatchEvent(new Event('input')); })()`);
  await until("the hits", `document.querySelectorAll('#hits li.hit, #hits li.empty').length > 0`);
  return ev(`[...document.querySelectorAll('#hits li.hit')].map((h) => ({
    name: h.dataset.name, server: h.querySelector('.server')?.textContent,
    words: !!h.querySelector('.signal-words .fill'), meaning: h.querySelector('.signal-meaning .signal-value')?.textContent }))`);
}

async function seen() {
  return ev(`({
    servers: [...document.querySelectorAll('#servers tbody tr[data-server]')].map((r) => ({ name: r.dataset.server, state: r.querySelector('.pill')?.textContent })),
    charts: [...document.querySelectorAll('#charts [data-tool]')].map((c) => ({ tool: c.dataset.tool, bars: c.querySelectorAll('svg.chart .bars rect').length })),
    slowest: [...document.querySelectorAll('#slowest tbody tr')].map((r) => r.textContent),
    sessions: [...document.querySelectorAll('#sessions tbody tr')].map((r) => r.textContent),
    guests: [...document.querySelectorAll('#guests tbody tr')].map((r) => r.textContent),
    text: document.body.innerText,
  })`);
}

const out = { views: [] };
let chrome;
try {
  chrome = await browser(plan.profile);
  ({ send, ev, until } = chrome);
  await send("Page.enable");
  await send("Runtime.enable");
  for (const [i, token] of plan.tokens.entries()) {
    if (i > 0) await ev(`sessionStorage.clear()`);
    await signIn(token);
    const hits = await search(plan.search);
    const view = { ...(await seen()), hits, stored: await ev(`sessionStorage.getItem('mcpw-token') !== null`) };
    if (i === 0 && plan.screenshot) writeFileSync(plan.screenshot, await chrome.screenshot());
    out.views.push(view);
  }
  out.errors = chrome.errors;
  console.log(JSON.stringify(out));
} catch (e) {
  console.error(String(e?.stack ?? e));
  process.exitCode = 1;
} finally {
  chrome?.close();
}
