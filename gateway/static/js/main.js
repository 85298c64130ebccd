// Wires the page: the API key dialog, the settings form and editors, the chat, and the metrics panel.

import { Api } from "./api.js";
import { Chat } from "./chat.js";
import { Editor, parseSchema, parseTools } from "./editors.js";
import { SCHEMA_EXAMPLES, TOOL_EXAMPLES } from "./examples.js";
import { MetricsPanel } from "./metrics.js";
import { buildRequest, fillForm, readForm } from "./settings.js";
import { responsesBody } from "./responses.js";
import { SETTINGS, apiKey, load, save } from "./store.js";
import { ChatView } from "./view.js";

const $ = (id) => document.getElementById(id);
const plural = (n, word) => `${n} ${word}${n === 1 ? "" : "s"}`;

// ?poll_ms=N polls /metrics every N ms (default 1000, at least 100).
function pageOptions() {
  const params = new URLSearchParams(window.location.search);
  return { pollMs: Math.max(100, Number(params.get("poll_ms")) || 1000), windowS: 300 };
}

class Page {
  constructor() {
    this.api = new Api(apiKey);
    this.model = null;
    this.form = $("settings");
    this.initSettings();
    this.view = new ChatView($("messages"), {
      edit: (index, text) => this.chat.edit(index, text),
      submitToolResults: (index, results) => this.chat.submitToolResults(index, results),
    });
    this.chat = new Chat({
      api: this.api,
      view: this.view,
      buildRequest: (messages) => this.request(messages),
      hooks: {
        onBusy: (busy) => this.setBusy(busy),
        onStats: (stats) => this.metrics.showReply(stats),
        onError: (message) => this.showError(message),
        onAuth: (error) => this.askKey(error.message),
      },
    });
    this.view.messages = () => this.chat.messages;
    this.metrics = this.initMetrics();
    this.bindComposer();
    this.bindKeyDialog();
    this.view.render();
  }

  initSettings() {
    const saved = load(SETTINGS, null);
    if (saved) fillForm(this.form, saved);
    const { tools, schema } = this.form.elements;
    if (!tools.value.trim()) tools.value = JSON.stringify(Object.values(TOOL_EXAMPLES)[0], null, 2);
    if (!schema.value.trim()) schema.value = JSON.stringify(Object.values(SCHEMA_EXAMPLES)[0], null, 2);
    const persist = () => save(SETTINGS, readForm(this.form));
    this.form.addEventListener("input", persist);
    this.form.addEventListener("change", persist);
    this.form.addEventListener("submit", (e) => e.preventDefault());
    this.tools = new Editor({
      textarea: tools, examples: TOOL_EXAMPLES, menu: $("tool-examples"), status: $("tools-status"),
      badge: $("tools-badge"), toggle: this.form.elements.tools_on, parse: parseTools, onChange: persist,
      describe: (list) => `${plural(list.length, "tool")}: ${list.map((t) => t.function.name).join(", ")}`,
    });
    this.schema = new Editor({
      textarea: schema, examples: SCHEMA_EXAMPLES, menu: $("schema-examples"), status: $("schema-status"),
      badge: $("schema-badge"), toggle: this.form.elements.schema_on, parse: parseSchema, onChange: persist,
      describe: (s) => `a valid schema${s.properties ? ` with ${plural(Object.keys(s.properties).length, "property")}` : ""}`,
    });
    this.tools.refresh();
    this.schema.refresh();
  }

  initMetrics() {
    const options = pageOptions();
    $("poll-s").textContent = String(options.pollMs / 1000);
    $("window-min").textContent = String(options.windowS / 60);
    const ids = { panel: "metrics", tps: "m-tps", ttft: "m-ttft", itl: "m-itl", tokens: "m-tokens", running: "m-running",
                  waiting: "m-waiting", kv: "m-kv", gen: "m-gen", status: "m-status", requests: "plot-requests",
                  kvPlot: "plot-kv", genPlot: "plot-gen" };
    const byId = (map) => Object.fromEntries(Object.entries(map).map(([k, id]) => [k, $(id)]));
    const fleet = { section: "fleet", summary: "fleet-summary", line: "fleet-line", table: "fleet-table", body: "fleet-body" };
    const metrics = new MetricsPanel(this.api, byId(ids), byId(fleet), options);
    window.addEventListener("resize", () => metrics.draw());
    return metrics;
  }

  // The body of the next request; throws (shown to the user) when a setting cannot be sent.
  request(messages) {
    const values = readForm(this.form);
    let tools, schema;
    try {
      tools = this.tools.current();
    } catch (e) {
      throw new Error(`The tool list is invalid: ${e.message}`);
    }
    try {
      schema = this.schema.current();
    } catch (e) {
      throw new Error(`The JSON Schema is invalid: ${e.message}`);
    }
    const body = buildRequest({ model: this.model, values, messages, tools, schema });
    if (values.api === "responses") return { body: responsesBody(body, messages), schema, api: "responses" };
    return { body, schema, api: "chat" };
  }

  bindComposer() {
    const prompt = $("prompt");
    $("composer").addEventListener("submit", (e) => {
      e.preventDefault();
      const text = prompt.value;
      if (!text.trim() || this.chat.busy) return;
      prompt.value = "";
      this.hideError();
      this.chat.send(text);
    });
    prompt.addEventListener("keydown", (e) => {
      if (e.key === "Enter" && (e.ctrlKey || e.metaKey)) {
        e.preventDefault();
        $("composer").requestSubmit();
      }
    });
    $("stop").addEventListener("click", () => this.chat.stop());
    $("regenerate").addEventListener("click", () => { this.hideError(); this.chat.regenerate(); });
    $("new-chat").addEventListener("click", () => { this.hideError(); this.chat.clear(); });
    $("error-close").addEventListener("click", () => this.hideError());
  }

  setBusy(busy) {
    $("send").disabled = busy;
    $("regenerate").disabled = busy;
    $("stop").hidden = !busy;
  }

  showError(message) {
    $("error-text").textContent = message;
    $("error").hidden = false;
  }

  hideError() {
    $("error").hidden = true;
  }

  bindKeyDialog() {
    $("key-form").addEventListener("submit", (e) => {
      e.preventDefault();
      const key = $("key-input").value.trim();
      if (!key) return;
      apiKey.set(key);
      this.connect();
    });
    $("change-key").addEventListener("click", () => this.askKey(""));
  }

  askKey(message) {
    apiKey.clear();
    $("change-key").hidden = false;
    $("model").textContent = "API key needed";
    $("key-error").textContent = message;
    const dialog = $("key-dialog");
    if (!dialog.open) dialog.showModal();
    $("key-input").select();
  }

  // Asks the server for its model; a 401 opens the API key dialog.
  async connect() {
    try {
      const models = await this.api.json("v1/models");
      this.model = models.data.length ? models.data[0].id : null;
      $("model").textContent = this.model || "no model";
      $("model").classList.remove("bad");
      const dialog = $("key-dialog");
      if (dialog.open) dialog.close();
    } catch (e) {
      if (e.isAuth) {
        this.askKey(apiKey.get() ? e.message : "");
        return;
      }
      $("model").textContent = "offline";
      $("model").classList.add("bad");
      this.showError(`Cannot reach the server: ${e.message}`);
    }
  }
}

const page = new Page();
window.playground = page; // for the browser console (and the browser tests)
page.connect();
page.metrics.start();
