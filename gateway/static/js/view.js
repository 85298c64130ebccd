// The conversation on screen: one element per message, the streaming one redrawn once per frame.

import { renderJson } from "./jsonview.js";

function el(tag, className, text) {
  const node = document.createElement(tag);
  if (className) node.className = className;
  if (text !== undefined) node.textContent = text;
  return node;
}

function button(label, className, onClick) {
  const node = el("button", className, label);
  node.type = "button";
  node.addEventListener("click", onClick);
  return node;
}

const ms = (value) => (value === null || value === undefined ? "–" : `${value.toFixed(value < 10 ? 1 : 0)} ms`);

export class ChatView {
  // container: the messages element; actions: {edit(index, text), submitToolResults(index, results)}.
  constructor(container, actions) {
    this.container = container;
    this.actions = actions;
    this.messages = () => [];
    this.editing = null;
    this.collapsed = new WeakSet(); // reasoning blocks the user folded
    this.pending = null;
  }

  render() {
    const messages = this.messages();
    if (this.editing !== null && this.editing >= messages.length) this.editing = null;
    const follow = this.atBottom();
    this.container.replaceChildren(...messages.map((msg, i) => this.element(msg, i, i === messages.length - 1)));
    if (!messages.length) this.container.append(el("p", "empty", "Say something. Replies stream here; reasoning and tool calls show as they are parsed."));
    if (follow) this.container.scrollTop = this.container.scrollHeight;
  }

  // Redraws the streaming message at the next animation frame (many chunks, one paint).
  update(msg) {
    if (this.pending) return;
    this.pending = requestAnimationFrame(() => {
      this.pending = null;
      const messages = this.messages();
      const index = messages.indexOf(msg);
      const old = this.container.querySelector(`.msg[data-index="${index}"]`);
      if (index < 0 || !old) return;
      const follow = this.atBottom();
      old.replaceWith(this.element(msg, index, index === messages.length - 1));
      if (follow) this.container.scrollTop = this.container.scrollHeight;
    });
  }

  atBottom() {
    const c = this.container;
    return c.scrollHeight - c.scrollTop - c.clientHeight < 80;
  }

  element(msg, index, isLast) {
    const node = el("article", `msg ${msg.role}`);
    Object.assign(node.dataset, { index, role: msg.role, state: msg.state || "done", chunks: msg.chunks || 0 });
    const head = el("header", "msg-head");
    head.append(el("span", "role", msg.role === "tool" ? `tool result · ${msg.name || ""}` : msg.role));
    if (msg.role !== "tool" && msg.state !== "streaming" && this.editing !== index) {
      head.append(button("edit", "ghost small edit", () => { this.editing = index; this.render(); }));
    }
    node.append(head);
    if (this.editing === index) node.append(this.editor(msg, index));
    else if (msg.role === "assistant") this.assistantBody(node, msg, index, isLast);
    else node.append(el("div", msg.role === "tool" ? "content mono" : "content", msg.content));
    return node;
  }

  editor(msg, index) {
    const form = el("form", "edit-form");
    const area = el("textarea");
    area.value = msg.content;
    area.rows = Math.min(12, Math.max(2, msg.content.split("\n").length + 1));
    const done = (save) => {
      this.editing = null;
      if (save) this.actions.edit(index, area.value);
      else this.render();
    };
    form.addEventListener("submit", (e) => { e.preventDefault(); done(true); });
    const row = el("div", "row");
    const label = msg.role === "user" ? "save & resend" : "save";
    row.append(button(label, "primary small save", () => done(true)), button("cancel", "small", () => done(false)));
    form.append(area, row);
    return form;
  }

  assistantBody(node, msg, index, isLast) {
    if (msg.reasoning) node.append(this.reasoning(msg));
    if (msg.schema) node.append(this.structured(msg));
    else if (msg.content || (!msg.tool_calls.length && !msg.reasoning)) node.append(el("div", "content", msg.content));
    for (const call of msg.tool_calls) node.append(toolCall(call));
    node.append(meta(msg));
    if (isLast && msg.state === "done" && msg.tool_calls.length) node.append(this.toolResultForm(msg, index));
  }

  reasoning(msg) {
    const details = el("details", "reasoning");
    details.open = !this.collapsed.has(msg);
    const streaming = msg.state === "streaming" && !msg.content && !msg.tool_calls.length;
    details.append(el("summary", "", streaming ? "Reasoning…" : "Reasoning"), el("div", "reasoning-text", msg.reasoning));
    details.addEventListener("toggle", () => {
      if (details.open) this.collapsed.delete(msg);
      else this.collapsed.add(msg);
    });
    return details;
  }

  structured(msg) {
    const box = el("div", "structured");
    const pre = el("pre", "json");
    renderJson(pre, msg.content);
    box.append(pre);
    if (msg.validation) {
      const badge = el("span", `validation ${msg.validation.ok ? "ok" : "bad"}`, msg.validation.ok ? "✓ valid" : "✗ invalid");
      badge.title = msg.validation.message;
      box.append(badge, el("span", "validation-detail", msg.validation.message));
    }
    return box;
  }

  toolResultForm(msg, index) {
    const form = el("form", "tool-results");
    const areas = msg.tool_calls.map((call) => {
      const label = el("label", "", `result of ${call.function.name}`);
      const area = el("textarea", "code");
      area.rows = 2;
      area.dataset.call = call.id;
      area.placeholder = '{"temperature": 18}';
      label.append(area);
      form.append(label);
      return area;
    });
    const submit = el("button", "primary small continue", "send results & continue");
    submit.type = "submit";
    form.append(submit);
    form.addEventListener("submit", (e) => {
      e.preventDefault();
      this.actions.submitToolResults(index, areas.map((a) => a.value));
    });
    return form;
  }
}

function toolCall(call) {
  const box = el("div", "tool-call");
  const head = el("div", "tool-head");
  head.append(el("span", "fn", "ƒ"), el("span", "name", call.function.name || "…"), el("span", "call-id", call.id));
  const args = el("pre", "json args");
  renderJson(args, call.function.arguments);
  box.append(head, args);
  return box;
}

function meta(msg) {
  const line = el("footer", "meta");
  const parts = [];
  if (msg.state === "streaming") parts.push("streaming…");
  if (msg.state === "stopped") parts.push("stopped");
  if (msg.finish_reason) parts.push(`finish: ${msg.finish_reason}`);
  if (msg.stats) parts.push(`${msg.stats.tokens} tokens`, `TTFT ${ms(msg.stats.ttft_ms)}`);
  line.textContent = parts.join(" · ");
  if (msg.error) line.append(el("span", "error", ` ${msg.error}`));
  return line;
}
