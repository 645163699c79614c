// The benchmark's pi process: pi-rpc.mjs's, with a prompt that returns its run's events.
import { PiRpc } from "../test/pi-rpc.mjs";

export class PiProcess extends PiRpc {
  /** Sends a prompt and resolves with the events of its run once agent_end arrives. */
  async prompt(message, { timeoutMs = 120_000 } = {}) {
    const from = this.events.length;
    this.send({ id: `p${from}`, type: "prompt", message });
    const end = await this.waitFor((e) => e.type === "agent_end", `agent_end of "${message}"`, { from, timeoutMs });
    return this.events.slice(from, this.events.indexOf(end, from) + 1);
  }
}

/** Pairs each tool_execution_start with its end: [{ name, ms, piMs, isError, text }]. */
export function toolCalls(events) {
  const starts = new Map();
  const calls = [];
  for (const e of events) {
    if (e.type === "tool_execution_start") starts.set(e.toolCallId, e);
    else if (e.type === "tool_execution_end") {
      const start = starts.get(e.toolCallId);
      if (!start) continue;
      calls.push({
        name: e.toolName,
        start: start.at,
        end: e.at,
        ms: e.at - start.at,
        piMs: e.durationMs,
        isError: !!e.isError,
        text: (e.result?.content ?? []).map((c) => (c.type === "text" ? c.text : `[${c.type}]`)).join(""),
      });
    }
  }
  return calls;
}
