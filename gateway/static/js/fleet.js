// The fleet view: one row per engine replica, read from the gateway_replica_* gauges of the /metrics poll.

// The per-replica gauges (labels replica and node) and the row field each fills; gateway/metrics.py names them.
const GAUGES = {
  gateway_replica_num_requests_running: "running",
  gateway_replica_num_requests_waiting: "waiting",
  gateway_replica_kv_cache_usage_ratio: "kv",
  gateway_replica_prefix_cache_hit_rate: "hitRate",
  gateway_replica_failovers: "failovers",
  gateway_replica_up: "up",
};
// A state set: one sample per state, 1 for the replica's own (_up alone cannot tell restarting from dead).
const STATE = "gateway_replica_state";

// [{replica, node, state, running, waiting, kv, hitRate, failovers}] by replica index, from parseSamples' output.
export function fleetRows(samples) {
  const rows = new Map();
  for (const { name, labels, value } of samples) {
    const field = GAUGES[name];
    if (!field && name !== STATE) continue;
    if (labels.replica === undefined) continue;
    let row = rows.get(labels.replica);
    if (!row) {
      row = { replica: Number(labels.replica), node: labels.node ?? "?", state: null, running: 0, waiting: 0, kv: 0,
              hitRate: 0, failovers: 0, up: null };
      rows.set(labels.replica, row);
    }
    if (field) row[field] = value;
    else if (value === 1) row.state = labels.state;
  }
  for (const row of rows.values()) {
    // A server without the state set still says whether the replica serves.
    if (row.state === null) row.state = row.up === 0 ? "down" : "ok";
    delete row.up;
  }
  return [...rows.values()].sort((a, b) => a.replica - b.replica);
}

// One decimal under 10 %: a few KV blocks of a large cache would otherwise read as an empty one.
const percent = (ratio) => (ratio > 0 && ratio < 0.1 ? `${(100 * ratio).toFixed(1)}%` : `${Math.round(100 * ratio)}%`);

export class FleetTable {
  // els: {section, summary, line, table, body}. The section stays hidden until /metrics lists a replica.
  constructor(els) {
    this.els = els;
    this.rows = [];
  }

  show(rows) {
    const { section, summary, line, table, body } = this.els;
    this.rows = rows;
    section.hidden = rows.length === 0;
    const serving = rows.filter((r) => r.state === "ok").length;
    summary.textContent = rows.length ? `${rows.length} · ${serving} ok` : "";
    // One replica is the common single-machine case: a line says where it runs and in what state, no table.
    table.hidden = rows.length < 2;
    line.hidden = rows.length !== 1;
    if (rows.length === 1) {
      const [r] = rows;
      line.textContent = `replica ${r.replica} on ${r.node}: ${r.state}`;
      line.dataset.state = r.state;
      return;
    }
    body.replaceChildren(...rows.map((r) => this.row(r)));
  }

  row(r) {
    const tr = document.createElement("tr");
    tr.dataset.replica = String(r.replica);
    tr.dataset.state = r.state;
    const cells = [String(r.replica), r.node, r.state, String(r.running), String(r.waiting), percent(r.kv),
                   percent(r.hitRate), String(r.failovers)];
    for (const text of cells) {
      const td = document.createElement("td");
      td.textContent = text;
      tr.append(td);
    }
    tr.children[1].title = r.node; // long Ray node names are cut to the column; the whole one on hover
    tr.children[2].className = "state";
    return tr;
  }
}
