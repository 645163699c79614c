// Opens an MCP App's view on mcpw's view page in headless Chromium: waits for
// the view to initialize and get its tool result through the bridge, reads
// what the app shows inside its sandboxed frame, clicks one of its buttons
// (the app then calls its server's tool through mcpw), keeps a screenshot,
// and prints what it saw as JSON.
//
//   node --experimental-websocket app-check.mjs '{"url": ..., "profile": "dir", "screenshot": "..png",
//     "read": "#server-time", "click": "#get-time-btn"}'
import { writeFileSync } from "node:fs";
import { browser } from "./devtools.mjs";

const plan = JSON.parse(process.argv[2]);
const out = {};
let chrome;

/** Where the view's frame can be evaluated: its own session (a frame in a
 *  process of its own) or its default context in the page's session. */
async function frameOf(contexts, sessions) {
  await chrome.until("the view's frame", "!!document.querySelector('#frame')");
  for (let i = 0; i < 200; i++) {
    if (sessions.length) return { sessionId: sessions[0] };
    const tree = await chrome.send("Page.getFrameTree");
    const child = tree.frameTree.childFrames?.[0]?.frame.id;
    const context = contexts.find((c) => c.auxData?.frameId === child && c.auxData?.isDefault);
    if (context) return { contextId: context.id };
    await new Promise((r) => setTimeout(r, 100));
  }
  throw new Error("the view's frame never had a context");
}

try {
  chrome = await browser(plan.profile, "1100,900");
  const contexts = [];
  const sessions = [];
  chrome.on((msg) => {
    if (msg.method === "Runtime.executionContextCreated" && !msg.sessionId) contexts.push(msg.params.context);
    if (msg.method === "Target.attachedToTarget" && msg.params.targetInfo.type === "iframe") {
      sessions.push(msg.params.sessionId);
      chrome.send("Runtime.enable", {}, msg.params.sessionId).catch(() => {});
    }
  });
  await chrome.send("Page.enable");
  await chrome.send("Runtime.enable");
  await chrome.send("Target.setAutoAttach", { autoAttach: true, waitForDebuggerOnStart: false, flatten: true });
  await chrome.send("Page.navigate", { url: plan.url });
  await chrome.until("the view's result", "document.body.dataset.bridge === 'result-sent'");
  const frame = await frameOf(contexts, sessions);
  const read = `document.querySelector(${JSON.stringify(plan.read)})?.textContent?.trim() ?? ''`;
  await chrome.until("the app to show the result", `(${read}).length > 0 && !/loading/i.test(${read})`, frame);
  out.shown = await chrome.ev(read, frame);
  out.frameOrigin = await chrome.ev("String(self.origin)", frame);
  out.frameReachesToken = await chrome.ev("(() => { try { return sessionStorage.length >= 0; } catch { return false; } })()", frame);
  if (plan.click) {
    await chrome.ev(`document.querySelector(${JSON.stringify(plan.click)}).click()`, frame);
    await chrome.until("the app's call through mcpw", "Number(document.body.dataset.calls) >= 1");
    await chrome.until("the app to show the call's result", `(${read}) !== ${JSON.stringify(out.shown)}`, frame);
    out.afterClick = await chrome.ev(read, frame);
  }
  out.csp = await chrome.ev("fetch('/views/' + new URLSearchParams(location.hash.slice(1)).get('view')).then((r) => r.headers.get('content-security-policy'))");
  out.sandbox = await chrome.ev("document.querySelector('#frame').getAttribute('sandbox')");
  out.events = await chrome.ev("[...document.querySelectorAll('#events li')].map((l) => l.textContent)");
  out.state = await chrome.ev("document.body.dataset.bridge");
  out.address = await chrome.ev("location.href");
  if (plan.screenshot) writeFileSync(plan.screenshot, await chrome.screenshot());
  out.errors = chrome.errors;
  console.log(JSON.stringify(out));
} catch (e) {
  console.error(String(e?.stack ?? e));
  if (chrome) console.error(JSON.stringify({ errors: chrome.errors, ...out }));
  process.exitCode = 1;
} finally {
  chrome?.close();
}
