// The settings form: read and restore its fields, and turn them into a chat request body.

const INTEGER_FIELDS = ["max_tokens", "top_k", "seed"];
const FLOAT_FIELDS = ["temperature", "top_p", "min_p", "presence_penalty", "frequency_penalty"];

// Every named field of the form: strings for text inputs, booleans for checkboxes.
export function readForm(form) {
  const values = {};
  for (const el of form.elements) {
    if (!el.name) continue;
    values[el.name] = el.type === "checkbox" ? el.checked : el.value;
  }
  return values;
}

export function fillForm(form, values) {
  for (const el of form.elements) {
    if (!el.name || !(el.name in values)) continue;
    if (el.type === "checkbox") el.checked = Boolean(values[el.name]);
    else el.value = values[el.name];
  }
}

// The sampling fields that are set (blank means the server's default). Throws on a bad number.
export function samplingFields(values) {
  const body = {};
  for (const name of [...INTEGER_FIELDS, ...FLOAT_FIELDS]) {
    const text = String(values[name] ?? "").trim();
    if (!text) continue;
    const number = Number(text);
    if (!Number.isFinite(number) || (INTEGER_FIELDS.includes(name) && !Number.isInteger(number))) {
      throw new Error(`${name} must be ${INTEGER_FIELDS.includes(name) ? "an integer" : "a number"}`);
    }
    body[name] = number;
  }
  const stop = String(values.stop ?? "").split("\n").map((s) => s.replace(/\\n/g, "\n")).filter((s) => s !== "");
  if (stop.length) body.stop = stop;
  if (values.ignore_eos) body.ignore_eos = true;
  return body;
}

// One message as the API takes it (the page's own bookkeeping stripped).
export function wireMessage(msg) {
  const out = { role: msg.role, content: msg.content ?? "" };
  if (msg.role === "assistant" && msg.tool_calls && msg.tool_calls.length) {
    out.tool_calls = msg.tool_calls.map((c) => ({ id: c.id, type: "function", function: { name: c.function.name, arguments: c.function.arguments } }));
  }
  if (msg.role === "tool") out.tool_call_id = msg.tool_call_id;
  return out;
}

// The body of one chat request: model, system prompt, history, sampling, tools, schema.
export function buildRequest({ model, values, messages, tools, schema }) {
  const history = messages.map(wireMessage);
  if (String(values.system ?? "").trim()) history.unshift({ role: "system", content: values.system });
  const body = { messages: history, stream_options: { include_usage: true }, ...samplingFields(values) };
  if (model) body.model = model;
  if (tools && tools.length) {
    body.tools = tools;
    body.tool_choice = values.tool_choice || "auto";
  }
  if (schema) body.response_format = { type: "json_schema", json_schema: { name: "playground", schema, strict: true } };
  return body;
}
