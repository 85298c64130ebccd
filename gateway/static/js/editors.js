// The tool list and JSON Schema editors: examples, validation as you type, and the values requests use.

import { checkSchema, typeOf } from "./schema.js";

const TOOL_NAME = /^[a-zA-Z0-9_.-]{1,64}$/;

function parseJson(text) {
  try {
    return { value: JSON.parse(text) };
  } catch (e) {
    return { error: `not JSON: ${e.message}` };
  }
}

// The problems of a tool list (an OpenAI `tools` array); empty when it can be sent.
export function checkTools(tools) {
  if (!Array.isArray(tools)) return ["the tool list must be a JSON array"];
  const problems = [];
  const names = new Set();
  tools.forEach((tool, i) => {
    const at = `tools[${i}]`;
    if (typeOf(tool) !== "object") { problems.push(`${at}: must be an object`); return; }
    if (tool.type !== "function") problems.push(`${at}.type: must be "function"`);
    const fn = tool.function;
    if (typeOf(fn) !== "object") { problems.push(`${at}.function: must be an object`); return; }
    if (typeof fn.name !== "string" || !TOOL_NAME.test(fn.name)) problems.push(`${at}.function.name: 1-64 letters, digits, _ . -`);
    else if (names.has(fn.name)) problems.push(`${at}.function.name: "${fn.name}" is listed twice`);
    names.add(fn.name);
    if (fn.description !== undefined && typeof fn.description !== "string") problems.push(`${at}.function.description: must be a string`);
    if (fn.parameters !== undefined) {
      if (typeOf(fn.parameters) !== "object") problems.push(`${at}.function.parameters: must be a JSON Schema object`);
      else problems.push(...checkSchema(fn.parameters, `${at}.function.parameters`));
    }
  });
  return problems;
}

// {value} or {error}: the tool list typed in the editor.
export function parseTools(text) {
  const parsed = parseJson(text);
  if (parsed.error) return parsed;
  const problems = checkTools(parsed.value);
  return problems.length ? { error: problems.join("\n") } : { value: parsed.value };
}

// {value} or {error}: the JSON Schema typed in the editor.
export function parseSchema(text) {
  const parsed = parseJson(text);
  if (parsed.error) return parsed;
  if (typeOf(parsed.value) !== "object") return { error: "the schema must be a JSON object" };
  const problems = checkSchema(parsed.value);
  return problems.length ? { error: problems.join("\n") } : { value: parsed.value };
}

// Wires one editor: its examples menu, a status line and a badge that say whether the text is usable.
export class Editor {
  constructor({ textarea, examples, menu, status, badge, toggle, parse, describe, onChange }) {
    Object.assign(this, { textarea, examples, status, badge, toggle, parse, describe, onChange });
    menu.append(new Option("insert an example…", ""), ...Object.keys(examples).map((name) => new Option(name, name)));
    menu.addEventListener("change", () => {
      if (!menu.value) return;
      textarea.value = JSON.stringify(examples[menu.value], null, 2);
      menu.value = "";
      toggle.checked = true;
      this.refresh();
      onChange();
    });
    textarea.addEventListener("input", () => this.refresh());
    toggle.addEventListener("change", () => this.refresh());
  }

  // Re-checks the text; shows the verdict. Returns {value} or {error}.
  refresh() {
    const text = this.textarea.value.trim();
    const result = text ? this.parse(text) : { error: "empty" };
    this.status.textContent = result.error ? result.error : `✓ ${this.describe(result.value)}`;
    this.status.classList.toggle("bad", Boolean(result.error) && text !== "");
    this.textarea.classList.toggle("invalid", Boolean(result.error) && text !== "");
    this.badge.hidden = !this.toggle.checked;
    this.badge.textContent = result.error ? "invalid" : "on";
    this.badge.classList.toggle("bad", Boolean(result.error));
    return result;
  }

  // What a request should carry: null when off; throws with the problem when on but invalid.
  current() {
    if (!this.toggle.checked) return null;
    const result = this.refresh();
    if (result.error) throw new Error(result.error);
    return result.value;
  }
}
