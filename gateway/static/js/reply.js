// One assistant reply while it streams: chunks folded into the message, its timing, its final check.

import { validate } from "./schema.js";

export function newReply(schema) {
  return { role: "assistant", content: "", reasoning: "", tool_calls: [], finish_reason: null, usage: null,
           schema: schema || null, validation: null, state: "streaming", error: null, chunks: 0, stats: null };
}

// Folds one chat.completion.chunk into `msg`. Returns true when it carried output (text or a call).
export function applyChunk(msg, chunk) {
  if (chunk.usage) msg.usage = chunk.usage;
  if (chunk.response_id) msg.response_id = chunk.response_id; // Responses API: what the next turn continues
  let output = false;
  for (const choice of chunk.choices || []) {
    if (choice.index !== 0) continue;
    const delta = choice.delta || {};
    const reasoning = delta.reasoning_content ?? delta.reasoning;
    if (reasoning) { msg.reasoning += reasoning; output = true; }
    if (delta.content) { msg.content += delta.content; output = true; }
    for (const part of delta.tool_calls || []) {
      const call = msg.tool_calls[part.index] ||= { id: "", type: "function", function: { name: "", arguments: "" } };
      if (part.id) call.id = part.id;
      if (part.function && part.function.name) call.function.name += part.function.name;
      if (part.function && part.function.arguments) call.function.arguments += part.function.arguments;
      output = true;
    }
    if (choice.finish_reason) msg.finish_reason = choice.finish_reason;
  }
  if (output) msg.chunks += 1;
  return output;
}

// Client-side timing of one reply: TTFT to the first output chunk, then the decode rate.
export class ReplyTimer {
  constructor() {
    this.start = performance.now();
    this.first = null;
    this.last = null;
    this.chunks = 0;
  }

  tick() {
    const now = performance.now();
    if (this.first === null) this.first = now;
    this.last = now;
    this.chunks += 1;
  }

  // tokens from the usage chunk when the server sent one, else the number of output chunks.
  stats(usage) {
    const tokens = usage ? usage.completion_tokens : this.chunks;
    if (this.first === null) return { tokens, ttft_ms: null, itl_ms: null, tokens_per_s: null };
    const decodeMs = this.last - this.first;
    const gaps = tokens - 1;
    return {
      tokens,
      ttft_ms: this.first - this.start,
      itl_ms: gaps > 0 ? decodeMs / gaps : null,
      tokens_per_s: gaps > 0 && decodeMs > 0 ? (gaps * 1000) / decodeMs : null,
    };
  }
}

// The verdict on a structured reply once it ended: {ok, message}.
export function checkStructured(schema, text) {
  let value;
  try {
    value = JSON.parse(text);
  } catch (e) {
    return { ok: false, message: `not complete JSON (${e.message})` };
  }
  try {
    const errors = validate(schema, value);
    if (!errors.length) return { ok: true, message: "valid against the schema" };
    return { ok: false, message: errors.slice(0, 3).map((e) => `${e.path}: ${e.message}`).join("; ") };
  } catch (e) {
    return { ok: false, message: `cannot check: ${e.message}` };
  }
}
