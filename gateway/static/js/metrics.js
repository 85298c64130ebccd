// The live metrics panel: the last reply's timing, and the server's gauges polled from /metrics and plotted.

import { FleetTable, fleetRows } from "./fleet.js";
import { drawPlot } from "./plot.js";

// Every sample of a Prometheus text exposition as {name, labels, value}: the fleet view needs the labels.
export function parseSamples(text) {
  const samples = [];
  for (const line of text.split("\n")) {
    if (!line || line.startsWith("#")) continue;
    const m = /^([a-zA-Z_:][a-zA-Z0-9_:]*)(\{.*\})?\s+(\S+)/.exec(line);
    if (!m) continue;
    const value = Number(m[3]);
    if (Number.isFinite(value)) samples.push({ name: m[1], labels: parseLabels(m[2] || ""), value });
  }
  return samples;
}

// {a="x",b="y\"z"} -> {a: "x", b: 'y"z'} (the exposition escapes \\, \" and \n in label values).
function parseLabels(text) {
  const labels = {};
  for (const m of text.matchAll(/([a-zA-Z_][a-zA-Z0-9_]*)="((?:[^"\\]|\\.)*)"/g)) {
    labels[m[1]] = m[2].replace(/\\(.)/g, (_, c) => (c === "n" ? "\n" : c));
  }
  return labels;
}

// name -> value for every sample (labelled samples summed per name).
export function parsePrometheus(text) {
  return sumByName(parseSamples(text));
}

function sumByName(samples) {
  const values = new Map();
  for (const { name, value } of samples) values.set(name, (values.get(name) || 0) + value);
  return values;
}

const fixed = (v, digits = 1) => (v === null || v === undefined ? "–" : v.toFixed(digits));

export class MetricsPanel {
  // els: {panel, tps, ttft, itl, tokens, running, waiting, kv, gen, status, requests, kvPlot, genPlot};
  // fleetEls: FleetTable's elements (the replicas come from the same poll: no second request).
  constructor(api, els, fleetEls, { pollMs = 1000, windowS = 300 } = {}) {
    Object.assign(this, { api, els, pollMs, windowS });
    this.fleet = new FleetTable(fleetEls);
    this.samples = []; // {t, running, waiting, kv, generated, genRate}
    this.timer = null;
    this.polls = 0;
    this.failures = 0;
    this.inFlight = false;
  }

  start() {
    if (this.timer === null) {
      this.poll();
      this.timer = setInterval(() => this.poll(), this.pollMs);
    }
  }

  stop() {
    clearInterval(this.timer);
    this.timer = null;
  }

  showReply(stats) {
    const { els } = this;
    els.tps.textContent = fixed(stats.tokens_per_s);
    els.ttft.textContent = stats.ttft_ms === null ? "–" : `${fixed(stats.ttft_ms, 0)} ms`;
    els.itl.textContent = stats.itl_ms === null ? "–" : `${fixed(stats.itl_ms, 1)} ms`;
    els.tokens.textContent = String(stats.tokens);
  }

  async poll() {
    if (document.visibilityState === "hidden" || this.inFlight) return;
    this.inFlight = true;
    try {
      const samples = parseSamples(await this.api.text("metrics"));
      this.add(sumByName(samples));
      this.fleet.show(fleetRows(samples));
      this.failures = 0;
      this.els.status.textContent = "";
    } catch (e) {
      this.failures += 1;
      this.els.status.textContent = `(metrics unavailable: ${e.message})`;
    } finally {
      this.inFlight = false;
      this.polls += 1;
    }
  }

  add(values) {
    const t = performance.now() / 1000;
    const previous = this.samples[this.samples.length - 1];
    const generated = values.get("gateway_generation_tokens_total") ?? 0;
    let genRate = 0;
    if (previous && t > previous.t && generated >= previous.generated) genRate = (generated - previous.generated) / (t - previous.t);
    const sample = {
      t,
      running: values.get("gateway_num_requests_running") ?? 0,
      waiting: values.get("gateway_num_requests_waiting") ?? 0,
      kv: 100 * (values.get("gateway_kv_cache_usage_ratio") ?? 0),
      generated,
      genRate,
    };
    this.samples.push(sample);
    while (this.samples.length && this.samples[0].t < t - this.windowS - 5) this.samples.shift();
    this.show(sample);
  }

  show(sample) {
    const { els } = this;
    els.running.textContent = String(sample.running);
    els.waiting.textContent = String(sample.waiting);
    els.kv.textContent = `${fixed(sample.kv)} %`;
    els.gen.textContent = fixed(sample.genRate);
    els.panel.dataset.samples = String(this.samples.length);
    this.draw();
  }

  draw() {
    // The window grows from one minute to windowS as history accumulates, so early plots are not a sliver.
    const end = performance.now() / 1000;
    const history = this.samples.length ? end - this.samples[0].t : 0;
    const span = Math.min(this.windowS, Math.max(60, history));
    const window = { start: end - span, end };
    const series = (key, color) => ({ points: this.samples.map((s) => [s.t, s[key]]), color });
    drawPlot(this.els.requests, [series("running", "--c-running"), series("waiting", "--c-waiting")], window, 1);
    drawPlot(this.els.kvPlot, [series("kv", "--c-kv")], window, 10);
    drawPlot(this.els.genPlot, [series("genRate", "--c-gen")], window, 10);
  }
}
