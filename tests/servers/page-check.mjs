// Drives headless Chromium over the DevTools protocol through mcpw's live
// page: signs in with each token, waits for the servers table and the
// charts, searches, keeps a screenshot of the first token's view, and
// prints what each token saw as JSON.
//
//   node --experimental-websocket page-check.mjs '{"url": ..., "tokens": [..], "search": "..", "screenshot": "..png", "profile": "dir"}'
import { spawn } from "node:child_process";
import { readFileSync, writeFileSync, existsSync } from "node:fs";
import { join } from "node:path";

const plan = JSON.parse(process.argv[2]);
const chrome = spawn("chromium", ["--headless", "--no-sandbox", "--disable-gpu", "--remote-debugging-port=0",
  `--user-data-dir=${plan.profile}`, "--window-size=1280,1400", "about:blank"], { stdio: "ignore" });
const pause = (ms) => new Promise((r) => setTimeout(r, ms));

async function devtools() {
  const file = join(plan.profile, "DevToolsActivePort");
  for (let i = 0; i < 300 && !existsSync(file); i++) await pause(100);
  const port = readFileSync(file, "utf8").split("\n")[0];
  const targets = await (await fetch(`http://127.0.0.1:${port}/json`)).json();
  return targets.find((t) => t.type === "page").webSocketDebuggerUrl;
}

let ws, nextId = 1;
const pending = new Map();
const errors = [];
function send(method, params = {}) {
  const id = nextId++;
  ws.send(JSON.stringify({ id, method, params }));
  return new Promise((res, rej) => pending.set(id, { res, rej }));
}
async function ev(expression) {
  const r = await send("Runtime.evaluate", { expression, awaitPromise: true, returnByValue: true });
  if (r.exceptionDetails) throw new Error(JSON.stringify(r.exceptionDetails));
  return r.result.value;
}
/** Waits (up to 20 s) until `expression` is true in the page. */
async function until(what, expression) {
  for (let i = 0; i < 200; i++) {
    if (await ev(expression)) return;
    await pause(100);
  }
  throw new Error(`timed out waiting for ${what}`);
}

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
try {
  ws = new WebSocket(await devtools());
  await new Promise((r) => ws.addEventListener("open", r));
  ws.addEventListener("message", (m) => {
    const msg = JSON.parse(m.data);
    if (msg.id && pending.has(msg.id)) {
      const p = pending.get(msg.id);
      pending.delete(msg.id);
      msg.error ? p.rej(new Error(msg.error.message)) : p.res(msg.result);
    }
    if (msg.method === "Runtime.exceptionThrown") errors.push(JSON.stringify(msg.params.exceptionDetails));
  });
  await send("Page.enable");
  await send("Runtime.enable");
  for (const [i, token] of plan.tokens.entries()) {
    if (i > 0) await ev(`sessionStorage.clear()`);
    await signIn(token);
    const hits = await search(plan.search);
    const view = { ...(await seen()), hits, stored: await ev(`sessionStorage.getItem('mcpw-token') !== null`) };
    if (i === 0 && plan.screenshot) {
      const shot = await send("Page.captureScreenshot", { format: "png", captureBeyondViewport: true });
      writeFileSync(plan.screenshot, Buffer.from(shot.data, "base64"));
    }
    out.views.push(view);
  }
  out.errors = errors;
  console.log(JSON.stringify(out));
} catch (e) {
  console.error(String(e?.stack ?? e));
  process.exitCode = 1;
} finally {
  chrome.kill();
  ws?.close();
}
