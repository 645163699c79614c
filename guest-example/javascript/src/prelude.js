// The globals a script sees. Native functions (`__call`, `__search`,
// `__describeTool`, `__log`) are the host's; everything else is here.
"use strict";
(() => {
  const g = globalThis;

  // A call's value: its structured content when it sent one, else its text;
  // content that is not all text (images, resources) comes back as blocks,
  // binary data replaced by its size and the `uri` the host kept it at. A
  // tool error throws.
  const settle = (name, text) => {
    const r = JSON.parse(text);
    if (r.failure !== undefined) {
      const e = new Error(`${name}: ${r.failure}`);
      e.tool = name;
      throw e;
    }
    const blocks = Array.isArray(r.content) ? r.content : [];
    const allText = blocks.every((b) => b && b.type === "text");
    const joined = blocks.map((b) => (b && b.type === "text" ? b.text : "")).join("\n");
    if (r.isError) {
      const e = new Error(`${name}: ${joined || "the tool reported an error"}`);
      e.tool = name;
      e.content = blocks;
      throw e;
    }
    if (r.structuredContent !== undefined && r.structuredContent !== null) {
      return r.structuredContent;
    }
    return allText ? joined : blocks;
  };

  const call = async (name, args) => {
    if (typeof name !== "string" || name === "") {
      throw new TypeError("mcp.call needs a tool name");
    }
    if (args !== undefined && (args === null || typeof args !== "object" || Array.isArray(args))) {
      throw new TypeError(`${name}: arguments must be an object`);
    }
    return settle(name, await __call(name, JSON.stringify(args === undefined ? {} : args)));
  };

  g.mcp = Object.freeze({
    call,
    search: async (query, options) => {
      const limit = options && options.limit !== undefined ? Number(options.limit) : 10;
      return JSON.parse(__search(String(query), limit));
    },
    describe: (name) => __describeTool(String(name)),
    readSkill: async (name, file) =>
      JSON.parse(__readSkill(String(name), file === undefined || file === null ? null : String(file))),
  });

  // `tools.<name>(args)` for any tool name; `then` is left out so that the
  // object is not taken for a promise.
  g.tools = new Proxy(
    {},
    {
      get: (_, name) =>
        typeof name === "string" && name !== "then" ? (args) => call(name, args) : undefined,
    },
  );

  const show = (v) => {
    if (typeof v === "string") return v;
    if (v instanceof Error) return g.__describe(v);
    try {
      const j = JSON.stringify(v);
      return j === undefined ? String(v) : j;
    } catch (_) {
      return String(v);
    }
  };
  const logger = (prefix) => (...items) => __log(prefix + items.map(show).join(" "));
  g.console = Object.freeze({
    log: logger(""),
    info: logger(""),
    debug: logger(""),
    warn: logger("warn: "),
    error: logger("error: "),
  });

  g.__describe = (e) => {
    if (e instanceof Error) {
      const head = `${e.name}: ${e.message}`;
      if (typeof e.stack !== "string" || e.stack.length === 0) return head;
      return e.stack.startsWith(head) ? e.stack : `${head}\n${e.stack}`;
    }
    return `thrown value: ${show(e)}`;
  };

  g.__toJson = (v) => {
    const text = JSON.stringify(v);
    return text === undefined ? "null" : text;
  };
})();
