// MCP tool results as pi tool results: content blocks pi knows (text, image), notes for the rest,
// and big text cut to pi's limits with the whole of it kept in a file.
import { mkdtempSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import type { CallToolResult } from "@modelcontextprotocol/sdk/types.js";
// Runtime values from pi: the @mariozechner name resolves to pi's own copy on both the 0.73
// line and the 1.x line (which maps the old names); @earendil-works names exist only on 1.x.
import { DEFAULT_MAX_BYTES, DEFAULT_MAX_LINES, formatSize, truncateHead } from "@mariozechner/pi-coding-agent";

export type PiContent = { type: "text"; text: string } | { type: "image"; data: string; mimeType: string };

export interface PiToolResult {
  content: PiContent[];
  details: Record<string, unknown>;
}

/** The raw result kept in details (for renderers and the session file) is capped at this. */
const RAW_DETAILS_LIMIT = 16 * 1024;

let outputDir: string | undefined;
let fileCount = 0;

/** A private directory per pi process for saved outputs and binary resources. */
function saveFile(name: string, data: string | Buffer): string {
  outputDir ??= mkdtempSync(join(tmpdir(), "mcpw-pi-"));
  const path = join(outputDir, `${++fileCount}-${name.replace(/[^A-Za-z0-9._-]/g, "_").slice(0, 80)}`);
  writeFileSync(path, data, { mode: 0o600 });
  return path;
}

function base64Size(data: string): number {
  return Buffer.byteLength(data, "base64");
}

function extension(mimeType: string | undefined): string {
  const sub = mimeType?.split("/")[1]?.split(/[;+]/)[0];
  return sub && /^[a-z0-9.-]+$/i.test(sub) ? `.${sub}` : ".bin";
}

type McpBlock = CallToolResult["content"][number];

function mapBlock(block: McpBlock, toolName: string): PiContent {
  switch (block.type) {
    case "text":
      return { type: "text", text: block.text };
    case "image":
      return { type: "image", data: block.data, mimeType: block.mimeType || "image/png" };
    case "audio":
      // pi has no audio block: say what was there rather than dropping it silently.
      return { type: "text", text: `[Audio: ${block.mimeType}, ${formatSize(base64Size(block.data))}; not shown]` };
    case "resource": {
      const resource = block.resource as { uri: string; mimeType?: string; text?: string; blob?: string };
      if (typeof resource.text === "string") return { type: "text", text: `[Resource: ${resource.uri}]\n${resource.text}` };
      if (typeof resource.blob === "string") {
        const bytes = Buffer.from(resource.blob, "base64");
        const path = saveFile(`${toolName}-resource${extension(resource.mimeType)}`, bytes);
        return {
          type: "text",
          text: `[Resource: ${resource.uri}]\nBinary content (${resource.mimeType ?? "unknown type"}, ${formatSize(bytes.length)}) saved to ${path}`,
        };
      }
      return { type: "text", text: `[Resource: ${resource.uri}] (no content)` };
    }
    case "resource_link": {
      const lines = [`[Resource link: ${block.name}]`, `URI: ${block.uri}`];
      if (block.mimeType) lines.push(`MIME type: ${block.mimeType}`);
      if (block.description) lines.push(block.description);
      return { type: "text", text: lines.join("\n") };
    }
    default:
      return { type: "text", text: JSON.stringify(block) };
  }
}

function sameJson(text: string, value: unknown): boolean {
  try {
    return JSON.stringify(JSON.parse(text)) === JSON.stringify(value);
  } catch {
    return false;
  }
}

/**
 * Cuts the text blocks to pi's limits (the same head-first cut as pi's read tool). When the text
 * is cut, every text block is merged into one so the cut is made once over the whole output,
 * and the full text is saved to a file the model can read.
 */
function limitText(content: PiContent[], toolName: string): { content: PiContent[]; truncation?: Record<string, unknown> } {
  const texts = content.filter((c): c is Extract<PiContent, { type: "text" }> => c.type === "text").map((c) => c.text);
  const full = texts.join("\n");
  const cut = truncateHead(full, { maxBytes: DEFAULT_MAX_BYTES, maxLines: DEFAULT_MAX_LINES });
  if (!cut.truncated) return { content };
  const path = saveFile(`${toolName}-output.txt`, full);
  let shown = cut.content;
  let notice: string;
  if (cut.firstLineExceedsLimit) {
    // A line-based cut would show nothing at all (one huge JSON line, say): show its start.
    shown = Buffer.from(full, "utf8").subarray(0, DEFAULT_MAX_BYTES).toString("utf8").replace(/\uFFFD$/, "");
    notice = `\n\n[Output truncated: the first line alone is ${formatSize(Buffer.byteLength(full.split("\n", 1)[0]))}; ` +
      `showing its first ${formatSize(Buffer.byteLength(shown))} of ${formatSize(cut.totalBytes)} in ${cut.totalLines} ${cut.totalLines === 1 ? "line" : "lines"}. ` +
      `Full output saved to ${path}]`;
  } else {
    notice = `\n\n[Output truncated: showing ${cut.outputLines} of ${cut.totalLines} lines ` +
      `(${formatSize(cut.outputBytes)} of ${formatSize(cut.totalBytes)}; limit ${cut.truncatedBy === "lines" ? `${DEFAULT_MAX_LINES} lines` : formatSize(DEFAULT_MAX_BYTES)}). ` +
      `Full output saved to ${path}]`;
  }
  const images = content.filter((c) => c.type === "image");
  return {
    content: [{ type: "text", text: shown + notice }, ...images],
    truncation: { truncatedBy: cut.truncatedBy, totalLines: cut.totalLines, totalBytes: cut.totalBytes, fullOutputPath: path },
  };
}

function capRaw(result: CallToolResult): unknown {
  const json = JSON.stringify(result);
  return json.length <= RAW_DETAILS_LIMIT ? result : { truncated: true, bytes: json.length, head: json.slice(0, RAW_DETAILS_LIMIT) };
}

/**
 * Maps an MCP CallToolResult. `structuredInDetails`: the tool's structuredContent is metadata
 * for the host (mcpw's `mcp` tool puts its own details object there), so it stays out of the
 * model's text.
 */
export function toPiResult(result: CallToolResult, toolName: string, options: { structuredInDetails?: boolean } = {}): PiToolResult {
  let content = (result.content ?? []).map((block) => mapBlock(block, toolName));
  const structured = result.structuredContent;
  // mcpw cut this result to its budget already: its preview, and the note that says where the
  // rest is (a file, the read_result tool, a resource), reach the model as they are.
  const cutByMcpw = (result.content ?? []).some((b) => b.type === "resource_link" && String(b.uri).startsWith("mcpw://results/"));
  if (structured !== undefined && !options.structuredInDetails && !cutByMcpw) {
    // Servers are asked to repeat structured output as JSON text; do not send it twice.
    const repeated = content.some((c) => c.type === "text" && sameJson(c.text, structured));
    if (!repeated) content.push({ type: "text", text: `${content.length ? "Structured content:\n" : ""}${JSON.stringify(structured, null, 2)}` });
  }
  if (content.length === 0) content = [{ type: "text", text: result.isError ? "(tool error without a message)" : "(no output)" }];
  const limited = cutByMcpw ? { content } : limitText(content, toolName);
  const details: Record<string, unknown> = { tool: toolName, mcp: capRaw(result) };
  if (structured !== undefined && options.structuredInDetails) details.structuredContent = structured;
  if (limited.truncation) details.truncation = limited.truncation;
  if (result.isError) details.error = "tool_error";
  return { content: limited.content, details };
}
