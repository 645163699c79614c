//! How to write a script, as the code tool's description tells an agent. The
//! host appends the limits and the servers; this part is the language's.

/// The description's text (about 400 tokens).
pub const TEXT: &str = r#"Run JavaScript that calls tools, and get back only what it returns: filter, join and summarise results in the script instead of reading them whole.

The code is the body of an async function: use `await` and `return` at the top level. A single expression is returned as it is. The returned value comes back as JSON, followed by what the script logged.

In scope:
- `await tools.<name>(args)`: calls a tool by its name (args: an object). Resolves to the tool's structured result when it sends one, else to its text (parse JSON text yourself). A tool error throws an Error carrying the tool's message.
- `await mcp.call(name, args)`: the same, with the name in a string.
- `await mcp.search(query, {limit})`: finds tools by what they do; each hit is `{name, server, declaration}`, the declaration a TypeScript signature of the call.
- `mcp.describe(name)`: one tool's TypeScript signature.
- Search finds skills too (`{name, server, skill: true, description}`): instructions to follow, not calls. `await mcp.readSkill(name, file)` reads one's `SKILL.md` (or `file` in its folder) as `{uri, text}`.
- `console.log(...)`: kept and shown after the value.
Images, audio and other binary content come back as blocks `{type, mimeType, bytes, uri}`, never as bytes: return the `uri` and it is linked in the result, where the client reads it.
Calls that do not depend on each other run at the same time with `await Promise.all([...])`.

Find tools first when you do not know their names. ES2020+ with JSON, no modules; no files, network, timers or clock beyond the tools (`Date.now()` is 0).

Example:
const [hit] = await mcp.search("list a directory", {limit: 1});
const listing = await tools[hit.name]({path: "/srv/logs"});
// Text, or an object when the tool sends structured content.
const text = typeof listing === "string" ? listing : JSON.stringify(listing);
const logs = text.split("\n").filter((l) => l.includes(".log"));
console.log(`${logs.length} log lines`);
return logs.slice(0, 5);"#;
