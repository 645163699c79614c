// mcpw's questions to the user, asked through pi's own dialogues: an approval of a call (a choice
// among its `enum`), or a server's question passed on, when it is one choice or one yes/no.
import type { ExtensionContext } from "@mariozechner/pi-coding-agent";
import type { ElicitRequest, ElicitResult } from "@modelcontextprotocol/sdk/types.js";

interface Property {
  type?: string;
  title?: string;
  enum?: unknown[];
  enumNames?: unknown[];
}

/** Asks `ctx`'s user; a question pi's dialogues cannot put is declined. */
export async function askUser(ctx: ExtensionContext, params: ElicitRequest["params"]): Promise<ElicitResult> {
  const schema = (params as { requestedSchema?: { properties?: Record<string, Property> } }).requestedSchema;
  const fields = Object.entries(schema?.properties ?? {});
  if (fields.length !== 1) return { action: "decline" };
  const [key, field] = fields[0];
  if (Array.isArray(field.enum) && field.enum.every((v) => typeof v === "string")) {
    const values = field.enum as string[];
    const labels = values.map((v, i) => String(field.enumNames?.[i] ?? v));
    const picked = await ctx.ui.select(params.message, labels);
    if (picked === undefined) return { action: "cancel" };
    return { action: "accept", content: { [key]: values[labels.indexOf(picked)] } };
  }
  if (field.type === "boolean") {
    return { action: "accept", content: { [key]: await ctx.ui.confirm(field.title ?? "mcpw", params.message) } };
  }
  return { action: "decline" };
}
