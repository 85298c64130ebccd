// The conversation: send, stream a reply, stop, regenerate, edit, answer tool calls; kept in local storage.

import { CONVERSATION, load, save } from "./store.js";
import { ReplyTimer, applyChunk, checkStructured, newReply } from "./reply.js";
import { streamResponse } from "./responses.js";

export class Chat {
  // api: Api; view: {render(), update(msg)}; buildRequest(messages) -> {body, schema} (throws when a
  // setting is invalid); hooks: onBusy(bool), onStats(stats), onError(message), onAuth(ApiError).
  constructor({ api, view, buildRequest, hooks }) {
    Object.assign(this, { api, view, buildRequest, hooks });
    this.messages = load(CONVERSATION, []);
    for (const msg of this.messages) if (msg.state === "streaming") msg.state = "stopped";
    this.controller = null;
  }

  get busy() { return this.controller !== null; }

  persist() { save(CONVERSATION, this.messages); }

  async send(text) {
    if (this.busy || !text.trim()) return false;
    this.messages.push({ role: "user", content: text });
    await this.generate();
    return true;
  }

  // Runs one reply to the conversation as it stands.
  async generate() {
    if (this.busy) return;
    let request;
    try {
      request = this.buildRequest(this.messages);
    } catch (e) {
      this.persist();
      this.view.render();
      this.hooks.onError(e.message);
      return;
    }
    const msg = newReply(request.schema);
    this.messages.push(msg);
    this.controller = new AbortController();
    this.hooks.onBusy(true);
    this.view.render();
    const timer = new ReplyTimer();
    try {
      const signal = this.controller.signal;
      const chunks = request.api === "responses" ? streamResponse(this.api, request.body, signal) : this.api.chat(request.body, signal);
      for await (const chunk of chunks) {
        if (applyChunk(msg, chunk)) timer.tick();
        this.view.update(msg);
      }
      msg.state = "done";
    } catch (e) {
      this.fail(msg, e);
    } finally {
      this.finish(msg, timer);
    }
  }

  fail(msg, error) {
    if (error.name === "AbortError") {
      msg.state = "stopped";
      return;
    }
    msg.state = "error";
    msg.error = error.message;
    if (error.isAuth) this.hooks.onAuth(error);
    else this.hooks.onError(error.message);
  }

  finish(msg, timer) {
    this.controller = null;
    const empty = !msg.content && !msg.reasoning && !msg.tool_calls.length;
    const at = this.messages.indexOf(msg);
    if (msg.state === "error" && empty) {
      if (at >= 0) this.messages.splice(at, 1);
    } else {
      msg.stats = timer.stats(msg.usage);
      if (msg.schema && msg.state === "done") msg.validation = checkStructured(msg.schema, msg.content);
      this.hooks.onStats(msg.stats);
    }
    this.persist();
    this.hooks.onBusy(false);
    this.view.render();
  }

  stop() {
    if (this.controller) this.controller.abort();
  }

  // Drops the last reply and asks again.
  async regenerate() {
    if (this.busy) return;
    if (this.messages.length && this.messages[this.messages.length - 1].role === "assistant") this.messages.pop();
    if (this.messages.length) await this.generate();
  }

  // A user message edited: what followed it is dropped and answered again. Others are just saved.
  async edit(index, text) {
    if (this.busy) return;
    const msg = this.messages[index];
    msg.content = text;
    if (msg.role === "user") {
      this.messages.length = index + 1;
      await this.generate();
    } else {
      delete msg.response_id; // the stored reply no longer matches: the next turn resends the history
      if (msg.schema && msg.validation) msg.validation = checkStructured(msg.schema, text);
      this.persist();
      this.view.render();
    }
  }

  // The results typed for the calls of the reply at `index`, then the model's next turn.
  async submitToolResults(index, results) {
    if (this.busy) return;
    const calls = this.messages[index].tool_calls;
    this.messages.length = index + 1;
    calls.forEach((call, i) => this.messages.push({ role: "tool", tool_call_id: call.id, name: call.function.name, content: results[i] }));
    await this.generate();
  }

  clear() {
    this.stop();
    this.messages = [];
    this.persist();
    this.view.render();
  }
}
