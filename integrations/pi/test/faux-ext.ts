// Test-only pi extension: a scripted model ("faux" provider, inside the pi process) whose turns
// are chosen by $MCPW_PI_TEST_SCENARIO. Each step is one assistant message; steps are consumed in
// order across the prompts of a run. Runtime imports use the @mariozechner names, which both pi
// lines resolve to their own copies.
import { fauxAssistantMessage, fauxToolCall } from "@mariozechner/pi-ai";
import type { ExtensionAPI } from "@mariozechner/pi-coding-agent";
import { registerFaux } from "./faux-provider.ts";

type Step = ReturnType<typeof fauxAssistantMessage> | ((context: any) => ReturnType<typeof fauxAssistantMessage>);

let callId = 0;
const call = (name: string, args: Record<string, unknown>): Step =>
  fauxAssistantMessage([fauxToolCall(name, args, { id: `call_${++callId}` })], { stopReason: "toolUse" });

/** The model's answer quotes the last tool result, so the test can see what reached the model. */
const answer: Step = (context: any) => {
  const result = [...context.messages].reverse().find((m: any) => m.role === "toolResult");
  const text = (result?.content ?? []).map((c: any) => (c.type === "text" ? c.text : `[${c.type}]`)).join("");
  return fauxAssistantMessage(`model saw (isError=${!!result?.isError}): ${text}`);
};

/** The model's answer quotes the last user message (what a prompt command sent). */
const answerUser: Step = (context: any) => {
  const user = [...context.messages].reverse().find((m: any) => m.role === "user");
  const text = typeof user?.content === "string" ? user.content : (user?.content ?? []).map((c: any) => c.text ?? "").join("");
  return fauxAssistantMessage(`model got: ${text}`);
};

/** Reads the SKILL.md of the skill `name` at the location pi's system prompt lists for it. */
const readSkill = (name: string): Step => (context: any) => {
  const listed = new RegExp(`<name>${name}</name>\\s*<description>[^<]*</description>\\s*<location>([^<]+)</location>`);
  const path = listed.exec(JSON.stringify(context).replace(/\\n/g, "\n"))?.[1];
  if (!path) return fauxAssistantMessage(`no skill ${name} in the system prompt`);
  return fauxAssistantMessage([fauxToolCall("read", { path }, { id: `call_${++callId}` })], { stopReason: "toolUse" });
};

const scenarios: Record<string, Step[]> = {
  proxy: [
    call("mcp", { search: "echo" }),
    call("mcp", { tool: "s__echo", args: { message: "hello proxy" } }),
    answer,
  ],
  "tool-search": [
    call("ToolSearch", { query: "select:s__echo" }),
    call("s__echo", { message: "loaded in the same prompt" }),
    answer,
    // second prompt
    call("s__echo", { message: "loaded in the next prompt" }),
    answer,
  ],
  cold: [call("s__echo", { message: "cold start" }), answer],
  trust: [call("t__echo", { message: "approved in pi" }), answer],
  approve: [
    call("s__echo", { message: "allowed once" }),
    answer,
    // second prompt
    call("s__echo", { message: "denied" }),
    answer,
  ],
  code: [
    call("code", { code: "const r = await Promise.all(['a', 'b'].map((m) => tools.s__echo({message: m}))); console.log('two calls'); return r" }),
    answer,
  ],
  abort: [call("s__hang", {}), answer],
  crash: [call("s__echo", { message: "before the crash" }), answer, call("s__echo", { message: "after the crash" }), answer],
  shutdown: [call("s__echo", { message: "started" }), answer],
  // pi loads extensions again for a new session: the script starts over there.
  "new-session": [call("s__echo", { message: "in this session" }), answer],
  reconnect: [call("s__echo", { message: "before" }), answer, call("s__echo", { message: "after" }), answer],
  prompt: [answerUser],
  auth: [call("o__whoami", {}), answer],
  media: [
    call("e__get-tiny-image", {}),
    call("e__get-resource-reference", { resourceType: "Text", resourceId: 2 }),
    call("e__get-resource-reference", { resourceType: "Blob", resourceId: 3 }),
    call("e__get-resource-links", { count: 2 }),
    answer,
  ],
  progress: [call("e__trigger-long-running-operation", { duration: 0.6, steps: 3 }), answer],
  view: [call("mcp", { tool: "c__get-time" }), answer],
  skills: [readSkill("deploy"), answer],
  content: [call("s__audio", {}), answer, call("s__big", { bytes: 120_000 }), answer, call("s__crash", {}), answer],
};

export default function (pi: ExtensionAPI) {
  const scenario = process.env.MCPW_PI_TEST_SCENARIO ?? "";
  const steps = scenarios[scenario];
  if (!steps) throw new Error(`faux-ext: unknown scenario "${scenario}"`);
  registerFaux(pi).setResponses(steps as any);
}
