// Benchmark-only pi extension: a scripted model ("faux" provider, inside the pi process) that
// makes the tool calls each prompt asks for. A prompt's text is JSON:
//   {"tool": "s__echo", "args": {"message": "hi"}, "calls": 40}
// and the model answers it with `calls` turns of one tool call each (all in the one run), then
// a text answer: "done: " and JSON {calls, errors, last (text of the last result), timings}. A
// prompt that is not such JSON gets a text answer at once. Runtime imports use the @mariozechner
// names, which pi 1.x maps to its own copies.
//
// timings: {toolCallId: ms} from this extension's handlers of pi's tool_execution_start and
// tool_execution_end events. pi's agent loop awaits those handlers before it runs the tool and
// before it goes on after it, so the span is the call as pi's loop sees it: argument checks,
// `tool_call` hooks, execute(), `tool_result` hooks. (The same events on the RPC stream are
// written through a chain of awaited stdout writes, which can hold a start line back until
// after the end: useless for calls of a few milliseconds.) This extension is loaded first, so
// its handlers run before any other extension's.
import { fauxAssistantMessage, fauxToolCall } from "@mariozechner/pi-ai";
import type { ExtensionAPI } from "@mariozechner/pi-coding-agent";
import { registerFaux } from "../test/faux-provider.ts";

let callId = 0;
const started = new Map<string, number>();
const timings: Record<string, number> = {};

const text = (content: any) =>
  typeof content === "string" ? content : (content ?? []).map((c: any) => (c.type === "text" ? c.text : `[${c.type}]`)).join("");

/** One step for every turn: looks at the transcript since the last user message and decides. */
function step(context: any) {
  const messages: any[] = context.messages ?? [];
  let userAt = -1;
  for (let i = messages.length - 1; i >= 0; i--) {
    if (messages[i].role === "user") {
      userAt = i;
      break;
    }
  }
  let ask: { tool?: string; args?: Record<string, unknown>; calls?: number } = {};
  try {
    ask = JSON.parse(text(messages[userAt]?.content));
  } catch {
    // Not a benchmark prompt: answer at once.
  }
  const results = messages.slice(userAt + 1).filter((m) => m.role === "toolResult");
  if (ask.tool && results.length < (ask.calls ?? 1)) {
    return fauxAssistantMessage([fauxToolCall(ask.tool, ask.args ?? {}, { id: `bench_${++callId}` })], { stopReason: "toolUse" });
  }
  const mine: Record<string, number> = {};
  for (const m of results) {
    if (m.toolCallId in timings) mine[m.toolCallId] = timings[m.toolCallId];
    delete timings[m.toolCallId];
  }
  const errors = results.filter((m) => m.isError).length;
  return fauxAssistantMessage(`done: ${JSON.stringify({ calls: results.length, errors, last: text(results.at(-1)?.content), timings: mine })}`);
}

export default function (pi: ExtensionAPI) {
  pi.on("tool_execution_start", (event: any) => {
    started.set(event.toolCallId, performance.now());
  });
  pi.on("tool_execution_end", (event: any) => {
    const at = started.get(event.toolCallId);
    started.delete(event.toolCallId);
    if (at !== undefined) timings[event.toolCallId] = performance.now() - at;
  });
  const faux = registerFaux(pi, 1_000_000);
  // Each step is consumed once: keep one queued for ever.
  const again = (context: any) => {
    faux.appendResponses([again as any]);
    return step(context);
  };
  faux.setResponses([again as any]);
}
