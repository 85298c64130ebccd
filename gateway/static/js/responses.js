// The Responses API for the playground: a chat body as a /v1/responses body that continues the last
// stored reply (previous_response_id, so only the newer turns are sent), and the response's stream
// events folded back into chat chunks, so that one reply view serves both APIs.

import { ApiError, sseEvents } from "./api.js";
import { wireMessage } from "./settings.js";

const CARRIED = ["temperature", "top_p", "top_k", "seed", "stop"]; // the sampling fields /v1/responses takes

// One page message as Responses input items (an assistant turn with calls is a message and its calls).
function asItems(msg) {
  const wire = wireMessage(msg);
  if (wire.role === "tool") return [{ type: "function_call_output", call_id: wire.tool_call_id, output: wire.content }];
  const out = [];
  if (wire.role !== "assistant" || wire.content) out.push({ type: "message", role: wire.role, content: wire.content });
  for (const call of wire.tool_calls || []) {
    out.push({ type: "function_call", call_id: call.id, name: call.function.name, arguments: call.function.arguments });
  }
  return out;
}

// The /v1/responses body for a chat body built from `messages` (the page's, which remember response ids).
export function responsesBody(chat, messages) {
  let start = 0;
  let previous = null;
  messages.forEach((msg, i) => {
    if (msg.role === "assistant" && msg.response_id && msg.state === "done") [start, previous] = [i + 1, msg.response_id];
  });
  const body = { input: messages.slice(start).flatMap(asItems), stream: true };
  if (previous) body.previous_response_id = previous;
  if (chat.model) body.model = chat.model;
  const system = chat.messages.find((m) => m.role === "system");
  if (system) body.instructions = system.content;
  if (chat.max_tokens !== undefined) body.max_output_tokens = chat.max_tokens;
  for (const name of CARRIED) if (chat[name] !== undefined) body[name] = chat[name];
  if (chat.tools) {
    body.tools = chat.tools.map((t) => ({ type: "function", ...t.function }));
    body.tool_choice = chat.tool_choice;
  }
  const format = chat.response_format;
  if (format) body.text = { format: { type: "json_schema", ...format.json_schema } };
  return body;
}

function chunk(delta, extra = {}) {
  return { choices: [{ index: 0, delta, finish_reason: null }], ...extra };
}

// The chat chunks a stream of response events amounts to; the first carries the response's id.
export async function* asChatChunks(events) {
  const calls = new Map(); // output_index -> the call's index among the reply's calls
  for await (const event of events) {
    switch (event.type) {
      case "response.created":
        yield { choices: [], response_id: event.response.id };
        break;
      case "response.output_text.delta":
        yield chunk({ content: event.delta });
        break;
      case "response.reasoning_text.delta":
        yield chunk({ reasoning_content: event.delta });
        break;
      case "response.output_item.added":
        if (event.item.type === "function_call") {
          calls.set(event.output_index, calls.size);
          const call = { index: calls.get(event.output_index), id: event.item.call_id, function: { name: event.item.name, arguments: "" } };
          yield chunk({ tool_calls: [call] });
        }
        break;
      case "response.function_call_arguments.delta":
        yield chunk({ tool_calls: [{ index: calls.get(event.output_index), function: { arguments: event.delta } }] });
        break;
      case "response.completed":
      case "response.incomplete": {
        const { status, usage } = event.response;
        const reason = status === "incomplete" ? "length" : calls.size ? "tool_calls" : "stop";
        const done = chunk({}, { usage: usage && { prompt_tokens: usage.input_tokens, completion_tokens: usage.output_tokens } });
        done.choices[0].finish_reason = reason;
        yield done;
        return;
      }
      case "response.failed":
        throw new ApiError(null, event.response.error ? event.response.error.message : "the response failed");
      default:
        break;
    }
  }
}

// The chat chunks of one streamed /v1/responses call (`api`: the page's Api).
export async function* streamResponse(api, body, signal) {
  const response = await api.fetch("v1/responses", { body, signal });
  yield* asChatChunks(sseEvents(response.body));
}
