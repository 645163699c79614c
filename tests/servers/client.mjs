// A scripted MCP client on the official TypeScript SDK, for mcpw's tests and benchmarks.
//   node client.mjs '<plan JSON>'
// plan = {"connect": {"command", "args", "env", "cwd"} | {"url", "token"}, "steps": [step, ...],
//         "elicit": [answer, ...] (elicitation answers in order; without it no elicitation),
//         "capabilities": {...} (more the client declares: an extension, say)}
// steps: {"op": "listTools"} | {"op": "serverCapabilities"} | {"op": "callTool", "name", "arguments", "progress": bool, "digest": bool}
//          (in arguments, "$kept:N" stands for the id of the result kept in step N; in a run's
//          args, "$view:N" for the address of the view step N's result opened, `_meta["mcpw/view"]`)
//        {"op": "waitToolListChanged", "timeoutMs", "sinceMark"} | {"op": "markListChanged"}
//        {"op": "listPrompts"} | {"op": "getPrompt", "name", "arguments"} ({"error"} if it fails)
//        {"op": "cancelCall", "name", "arguments", "afterMs"} | {"op": "bench", "name", "arguments", "n"}
//        {"op": "parallel", "steps": [...]} (each result gets "elapsedMs")
//        {"op": "readResource", "uri"} | {"op": "readResource", "linkOf": step, "link": n}
//          (the n-th resource_link in an earlier step's result; {"error"} if the read fails)
//        {"op": "run", "command", "args", "cwd", "env"} (a command run to its end, mid-session)
//        {"op": "writeFile", "path", "text"}
//        {"op": "waitForTool", "name", "present", "timeoutMs"} (re-lists at each tools/list_changed)
//        {"op": "elicitations"} (the elicitation requests since the last such step, with their answers)
//        {"op": "readResource", ..., "digest": true} (each content's sha256 and length instead of its text or blob)
//        {"op": "readRanges", "tool", "idKey", "idOf": step, "limit"} (a kept result named by the first
//          resource_link of an earlier step, read range after range to its end: its sha256, length, and reads)
// Prints {"results": [...]} (one entry per step) or {"error": "..."} on stdout.
import { spawnSync } from "node:child_process";
import { createHash } from "node:crypto";
import { readFileSync, writeFileSync } from "node:fs";
import { Client } from "@modelcontextprotocol/sdk/client/index.js";
import { StdioClientTransport } from "@modelcontextprotocol/sdk/client/stdio.js";
import { StreamableHTTPClientTransport } from "@modelcontextprotocol/sdk/client/streamableHttp.js";
import { ElicitRequestSchema, ProgressNotificationSchema, ToolListChangedNotificationSchema } from "@modelcontextprotocol/sdk/types.js";

const plan = JSON.parse(process.argv[2]);
// With "elicit" (answers given in order), the client takes elicitation requests.
// "capabilities" (an object) adds to what the client declares: an extension, say.
const capabilities = { ...(plan.elicit ? { elicitation: {} } : {}), ...(plan.capabilities ?? {}) };
const client = new Client({ name: "mcpw-test-client", version: "1.0.0" }, { capabilities });
/** Elicitation requests received, with the answer each got. */
const elicited = [];
if (plan.elicit) {
  client.setRequestHandler(ElicitRequestSchema, (request) => {
    const answer = plan.elicit[elicited.length] ?? { action: "decline" };
    elicited.push({ message: request.params.message, schema: request.params.requestedSchema, answer });
    return answer;
  });
}
let listChanged = 0;
let mark = 0;
const waiters = [];
/** The results of the steps so far. */
const results = [];
// Every progress notification, in order. The SDK hands a notification to its
// call's handler a microtask after reading it, but drops the handler as soon as
// it reads the response: steps read together with the response would be lost.
const progressLog = [];
client.setNotificationHandler(ProgressNotificationSchema, (n) => {
  progressLog.push(n.params);
  client._onprogress(n);
});
client.setNotificationHandler(ToolListChangedNotificationSchema, () => {
  listChanged++;
  waiters.splice(0).forEach((w) => w());
});

/** `value` with each "$kept:N" in its strings replaced by the id of the result kept in step N (its first resource_link). */
function keptIds(value) {
  if (typeof value === "string") {
    return value.replace(/\$kept:(\d+)/g, (_, n) => {
      const link = (results[Number(n)]?.content ?? []).find((c) => c.type === "resource_link");
      if (!link) throw new Error(`no resource link in step ${n}`);
      return link.name;
    }).replace(/\$view:(\d+)/g, (_, n) => {
      const url = results[Number(n)]?._meta?.["mcpw/view"]?.url;
      if (!url) throw new Error(`no view opened in step ${n}`);
      return url;
    });
  }
  if (Array.isArray(value)) return value.map(keptIds);
  if (value && typeof value === "object") return Object.fromEntries(Object.entries(value).map(([k, v]) => [k, keptIds(v)]));
  return value;
}

/** The sha256 (hex) and length of text (characters) or bytes. */
function digest(data) {
  return { sha256: createHash("sha256").update(data).digest("hex"), length: data.length };
}

function transport(c) {
  if (c.url) {
    const headers = { ...(c.headers ?? {}), ...(c.token ? { Authorization: `Bearer ${c.token}` } : {}) };
    return new StreamableHTTPClientTransport(new URL(c.url), { requestInit: { headers } });
  }
  return new StdioClientTransport({ command: c.command, args: c.args ?? [], cwd: c.cwd, env: { ...process.env, ...(c.env ?? {}) }, stderr: "ignore" });
}

async function step(s) {
  switch (s.op) {
    case "serverCapabilities":
      return client.getServerCapabilities() ?? {};
    case "listTools":
      return (await client.listTools()).tools.map((t) => ({ name: t.name, description: t.description, inputSchema: t.inputSchema, outputSchema: t.outputSchema, _meta: t._meta }));
    case "callTool": {
      const from = progressLog.length;
      const options = s.progress ? { onprogress: () => {}, resetTimeoutOnProgress: true } : {};
      const r = await client.callTool({ name: s.name, arguments: keptIds(s.arguments ?? {}), ...(s.meta ? { _meta: s.meta } : {}) }, undefined, options);
      const progress = s.progress ? progressLog.slice(from).map(({ progressToken, ...p }) => p) : [];
      if (s.digest) {
        // Each block's text, data or resource as its sha256 and length.
        r.content = r.content.map((c) => {
          const data = c.text ?? (c.data !== undefined ? Buffer.from(c.data, "base64") : undefined)
            ?? c.resource?.text ?? (c.resource?.blob !== undefined ? Buffer.from(c.resource.blob, "base64") : undefined);
          return data === undefined ? c : { type: c.type, ...digest(data) };
        });
        delete r.structuredContent;
      }
      return { ...r, progress };
    }
    case "callToolUntil": {
      // Calls a tool again until its result's text contains `contains`: for
      // a state nothing announces (background work).
      const deadline = Date.now() + (s.timeoutMs ?? 60_000);
      for (;;) {
        const r = await client.callTool({ name: s.name, arguments: s.arguments ?? {} });
        if (r.content.some((c) => c.text?.includes(s.contains))) return r;
        if (Date.now() > deadline) throw new Error(`${s.name} never said ${JSON.stringify(s.contains)}: ${JSON.stringify(r.content)}`);
        await new Promise((resolve) => setTimeout(resolve, 100));
      }
    }
    case "waitForTool": {
      // Lists the tools at each tools/list_changed until `name` is listed
      // (or, with "present": false, no longer is).
      const want = s.present ?? true;
      const deadline = Date.now() + (s.timeoutMs ?? 20_000);
      for (;;) {
        const seen = listChanged;
        const names = (await client.listTools()).tools.map((t) => t.name);
        if (names.includes(s.name) === want) return { names };
        if (Date.now() > deadline) throw new Error(`${s.name} ${want ? "never listed" : "still listed"}: ${names}`);
        if (listChanged === seen) {
          await new Promise((resolve) => {
            waiters.push(resolve);
            setTimeout(resolve, Math.max(0, deadline - Date.now()));
          });
        }
      }
    }
    case "elicitations":
      return elicited.splice(0);
    case "markListChanged":
      mark = listChanged;
      return { count: listChanged };
    case "waitToolListChanged": {
      const floor = s.sinceMark ? mark : 0;
      while (listChanged <= floor) {
        await new Promise((resolve, reject) => {
          waiters.push(resolve);
          setTimeout(() => reject(new Error("no tools/list_changed")), s.timeoutMs ?? 10000);
        });
      }
      return { changed: listChanged };
    }
    case "listPrompts":
      return (await client.listPrompts()).prompts;
    case "getPrompt":
      try {
        return await client.getPrompt({ name: s.name, arguments: s.arguments ?? {} });
      } catch (e) {
        return { error: String(e) };
      }
    case "cancelCall": {
      const controller = new AbortController();
      if (s.whenFile) {
        // Cancels once the server has the call: when `whenFile` (a log the
        // server appends to) holds `contains`.
        const timer = setInterval(() => {
          let text = "";
          try { text = readFileSync(s.whenFile, "utf8"); } catch {}
          if (text.includes(s.contains)) { clearInterval(timer); controller.abort(); }
        }, 20);
      } else {
        setTimeout(() => controller.abort(), s.afterMs ?? 300);
      }
      try {
        await client.callTool({ name: s.name, arguments: s.arguments ?? {} }, undefined, { signal: controller.signal });
        return { aborted: false };
      } catch (e) {
        return { aborted: true, error: String(e) };
      }
    }
    case "bench": {
      const times = [];
      for (let i = 0; i < (s.n ?? 1000); i++) {
        const t = process.hrtime.bigint();
        const r = await client.callTool({ name: s.name, arguments: s.arguments ?? {} });
        times.push(Number(process.hrtime.bigint() - t) / 1e6);
        if (r.isError) throw new Error(JSON.stringify(r));
      }
      times.sort((a, b) => a - b);
      const at = (p) => times[Math.round((times.length - 1) * p)];
      return { n: times.length, p50: at(0.5), p99: at(0.99), mean: times.reduce((a, b) => a + b, 0) / times.length };
    }
    case "readResource": {
      const uri = s.uri ?? (results[s.linkOf]?.content ?? []).filter((c) => c.type === "resource_link")[s.link ?? 0]?.uri;
      if (!uri) throw new Error(`no resource link ${s.link ?? 0} in step ${s.linkOf}`);
      try {
        const read = await client.readResource({ uri });
        if (s.digest) {
          read.contents = read.contents.map(({ text, blob, ...c }) => ({ ...c, ...digest(text ?? Buffer.from(blob, "base64")) }));
        }
        return { uri, ...read };
      } catch (e) {
        return { uri, error: String(e) };
      }
    }
    case "readRanges": {
      const link = (results[s.idOf]?.content ?? []).find((c) => c.type === "resource_link");
      if (!link) throw new Error(`no resource link in step ${s.idOf}`);
      let offset = 0, text = "", reads = 0;
      for (;;) {
        const r = await client.callTool({ name: s.tool, arguments: { [s.idKey]: link.name, offset, limit: s.limit } });
        reads++;
        if (r.isError) return { error: r.content?.[0]?.text, reads };
        text += r.content[0].text;
        if (!r.structuredContent?.more) break;
        offset = r.structuredContent.end;
      }
      return { ...digest(text), reads };
    }
    case "run": {
      const r = spawnSync(s.command, keptIds(s.args ?? []), { cwd: s.cwd, env: { ...process.env, ...(s.env ?? {}) }, encoding: "utf8" });
      return { status: r.status, stdout: r.stdout, stderr: r.stderr };
    }
    case "writeFile":
      writeFileSync(s.path, s.text);
      return { written: s.path };
    case "waitForFile": {
      // Waits (up to timeoutMs) until `file` holds `contains`: the session stays
      // open meanwhile, so its servers keep running.
      const deadline = Date.now() + (s.timeoutMs ?? 10_000);
      for (;;) {
        let text = "";
        try { text = readFileSync(s.file, "utf8"); } catch {}
        if (text.includes(s.contains)) return { found: true };
        if (Date.now() > deadline) return { found: false, text };
        await new Promise((r) => setTimeout(r, 20));
      }
    }
    case "sequence": {
      // Inner steps one after another, timed together (ms).
      const start = process.hrtime.bigint();
      const results = [];
      for (const inner of s.steps) results.push(await step(inner));
      return { results, ms: Number(process.hrtime.bigint() - start) / 1e6 };
    }
    case "parallel": {
      const start = Date.now();
      return await Promise.all(s.steps.map(async (inner) => {
        const r = await step(inner);
        return { result: r, elapsedMs: Date.now() - start };
      }));
    }
    default:
      throw new Error(`unknown op ${s.op}`);
  }
}

// Written whole before the exit: to a pipe, stdout is written asynchronously,
// and an exit right after console.log cuts a long output short.
const print = (value) => new Promise((done) => process.stdout.write(`${JSON.stringify(value)}\n`, done));

try {
  await client.connect(transport(plan.connect));
  for (const s of plan.steps) results.push(await step(s));
  await print({ results });
  await client.close();
  process.exit(0);
} catch (e) {
  await print({ error: String(e?.message ?? e) });
  process.exit(1);
}
