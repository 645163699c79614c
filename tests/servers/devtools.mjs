// Headless Chromium driven over the DevTools protocol, for the browser checks
// (page-check.mjs, app-check.mjs): one page, commands to it or to a frame's
// session, expressions evaluated and waited for.
import { spawn } from "node:child_process";
import { readFileSync, existsSync } from "node:fs";
import { join } from "node:path";

export const pause = (ms) => new Promise((r) => setTimeout(r, ms));

/** Starts Chromium with its profile in `profile` and connects to its page. */
export async function browser(profile, size = "1280,1400") {
  const chrome = spawn("chromium", ["--headless", "--no-sandbox", "--disable-gpu", "--remote-debugging-port=0",
    `--user-data-dir=${profile}`, `--window-size=${size}`, "about:blank"], { stdio: "ignore" });
  const file = join(profile, "DevToolsActivePort");
  for (let i = 0; i < 300 && !existsSync(file); i++) await pause(100);
  const port = readFileSync(file, "utf8").split("\n")[0];
  const targets = await (await fetch(`http://127.0.0.1:${port}/json`)).json();
  const ws = new WebSocket(targets.find((t) => t.type === "page").webSocketDebuggerUrl);
  await new Promise((r) => ws.addEventListener("open", r));
  let nextId = 1;
  const pending = new Map();
  const listeners = [];
  const errors = [];
  ws.addEventListener("message", (m) => {
    const msg = JSON.parse(m.data);
    if (msg.id && pending.has(msg.id)) {
      const p = pending.get(msg.id);
      pending.delete(msg.id);
      msg.error ? p.rej(new Error(msg.error.message)) : p.res(msg.result);
      return;
    }
    if (msg.method === "Runtime.exceptionThrown") errors.push(JSON.stringify(msg.params.exceptionDetails));
    for (const l of listeners) l(msg);
  });
  /** A command, to the page or to the session `sessionId` (a frame's). */
  function send(method, params = {}, sessionId) {
    const id = nextId++;
    ws.send(JSON.stringify({ id, method, params, ...(sessionId ? { sessionId } : {}) }));
    return new Promise((res, rej) => pending.set(id, { res, rej }));
  }
  /** The value of `expression`, in the page or in `where` ({sessionId} or {contextId}). */
  async function ev(expression, where = {}) {
    const params = { expression, awaitPromise: true, returnByValue: true };
    if (where.contextId) params.contextId = where.contextId;
    const r = await send("Runtime.evaluate", params, where.sessionId);
    if (r.exceptionDetails) throw new Error(JSON.stringify(r.exceptionDetails));
    return r.result.value;
  }
  /** Waits (up to 20 s) until `expression` is true. */
  async function until(what, expression, where = {}) {
    for (let i = 0; i < 200; i++) {
      if (await ev(expression, where).catch(() => false)) return;
      await pause(100);
    }
    throw new Error(`timed out waiting for ${what}`);
  }
  async function screenshot() {
    const shot = await send("Page.captureScreenshot", { format: "png", captureBeyondViewport: true });
    return Buffer.from(shot.data, "base64");
  }
  const close = () => { chrome.kill(); ws.close(); };
  return { send, ev, until, screenshot, errors, on: (l) => listeners.push(l), close };
}
