"""The connectors page: one HTML file over the REST API, served at ``GET /ui``.

The Airflow plugin links it from Airflow's navigation (an external view), and ``kopycat rest``
serves it as well. It only calls the Kafka Connect endpoints, with URLs relative to the page, so it
works wherever the app is mounted (``/kopycat/ui`` in Airflow) and under the same authentication:
Airflow's session cookie when mounted. Behind ``kopycat rest --token-file`` the page itself is
served without the token (it holds no data) and asks for it when the API answers 401 with
Kopycat's challenge, keeping it in the tab's sessionStorage (or taking it from ``#token=...``: a
URL fragment never reaches the server or its logs) and sending it as a bearer header. Text goes in
with ``textContent``, never as HTML, because connector names, classes and traces are user input.

Each task's figures come from the app's ``GET /metrics`` (Kafka Connect's metrics under the JMX
exporter's names, :mod:`kopycat.runtime.prometheus_metrics`) when the app serves it (``kopycat
worker``, ``kopycat standalone``'s registry): throughput is ``source-record-write-rate`` or
``sink-record-send-rate`` (records/s over Kafka's 30 s sample windows), records copied
(``source-record-write-total``, ``sink-record-send-total``), lag the records written or read and not
yet committed (``*-record-active-count``), and the last error with ``task-error-metrics``'
``last-error-timestamp`` and error count. A task without figures (no ``/metrics``, or an Airflow copy
task that failed before returning its summary) shows its last error alone. The last error is the
exception line of the task's trace: the first line of a Java trace (Kafka Connect's status records),
the line after the frames of a Python traceback.
"""

from __future__ import annotations

import json
from typing import Final

__all__ = ["CONNECTORS_PAGE", "TOKEN_CHALLENGE", "UI_PATH"]

UI_PATH: Final = "/ui"
TOKEN_CHALLENGE: Final = 'Bearer realm="kopycat"'
"""The ``WWW-Authenticate`` of the standalone server's 401: the page asks for the token only then."""

CONNECTORS_PAGE: Final = """<!doctype html>
<html lang="en">
<head>
<meta charset="utf-8">
<title>Kopycat connectors</title>
<style>
  body { font-family: system-ui, sans-serif; margin: 1.5rem; color: #1f2933; }
  h1 { font-size: 1.4rem; margin: 0 0 .25rem 0; }
  p.hint { color: #52606d; margin: 0 0 1rem 0; }
  table { border-collapse: collapse; width: 100%; }
  th, td { text-align: left; padding: .45rem .6rem; border-bottom: 1px solid #e4e7eb; vertical-align: top; }
  th { background: #f5f7fa; font-weight: 600; }
  .state { font-weight: 600; padding: .1rem .45rem; border-radius: .3rem; font-size: .85rem; }
  .RUNNING { background: #e3f9e5; color: #207227; } .PAUSED { background: #fff3c4; color: #8d6708; }
  .STOPPED { background: #e4e7eb; color: #3e4c59; } .FAILED { background: #ffe3e3; color: #a61b1b; }
  .UNASSIGNED, .RESTARTING { background: #e6f6ff; color: #035388; }
  ul { margin: 0; padding-left: 1rem; } code { font-size: .85rem; }
  button { margin: 0 .2rem .2rem 0; padding: .25rem .6rem; border: 1px solid #9aa5b1; border-radius: .3rem;
           background: white; cursor: pointer; }
  button:hover { background: #f0f4f8; } #error { color: #a61b1b; white-space: pre-wrap; }
</style>
</head>
<body>
<h1>Kopycat connectors</h1>
<p class="hint">Connectors stored in the config topic; each runs as the Airflow DAG
<code>kopycat_connector_&lt;name&gt;</code>. Pause and stop also pause the DAG; restart reruns the failed
tasks of its latest run. Topics are those the copy tasks used; lag is how far a sink (or a mirror) is
behind its input topics; figures are each task's throughput, records copied, uncommitted records and
last error from the worker's metrics. Refreshes every 5 seconds.</p>
<form id="login" hidden>This server needs its bearer token (kopycat rest --token-file):
  <input id="token" type="password" autocomplete="off" size="40"> <button type="submit">Use token</button></form>
<div id="error"></div>
<table id="connectors">
  <thead><tr><th>Connector</th><th>Type</th><th>State</th><th>Tasks</th><th>Topics</th><th>Lag</th><th>Figures</th><th>Offsets</th>
    <th>Actions</th></tr></thead>
  <tbody></tbody>
</table>
<script>
"use strict";
const ACTIONS = [["Pause", "PUT", "pause"], ["Resume", "PUT", "resume"], ["Stop", "PUT", "stop"],
                 ["Restart", "POST", "restart?includeTasks=true&onlyFailed=true"]];

const TOKEN_KEY = "kopycat-token";
if (location.hash.startsWith("#token=")) {
  sessionStorage.setItem(TOKEN_KEY, decodeURIComponent(location.hash.slice(7)));
  history.replaceState(null, "", location.pathname + location.search);
}
document.getElementById("login").onsubmit = async (event) => {
  event.preventDefault();
  sessionStorage.setItem(TOKEN_KEY, document.getElementById("token").value);
  document.getElementById("login").hidden = true;
  await render();
};

async function call(method, path) {
  const token = sessionStorage.getItem(TOKEN_KEY);
  const headers = token ? {"Authorization": "Bearer " + token} : {};
  const response = await fetch(path, {method: method, credentials: "same-origin", headers: headers});
  if (response.status === 401 && response.headers.get("WWW-Authenticate") === __CHALLENGE__) {
    document.getElementById("login").hidden = false;
  }
  if (!response.ok) {
    let message = response.statusText;
    try { message = (await response.json()).message || message; } catch (e) { /* not JSON */ }
    throw new Error(method + " " + path + ": " + response.status + " " + message);
  }
  return response.status === 204 ? null : response.json().catch(() => null);
}

function cell(row, text, className) {
  const td = row.insertCell();
  if (text !== undefined) {
    const span = document.createElement("span");
    span.textContent = text;
    if (className) span.className = className;
    td.appendChild(span);
  }
  return td;
}

function list(td, items) {
  const ul = document.createElement("ul");
  for (const item of items) {
    const li = document.createElement("li");
    li.textContent = item;
    ul.appendChild(li);
  }
  td.appendChild(ul);
  return td;
}

const MAX_LINES = 12;

function capped(lines) {
  return lines.length <= MAX_LINES ? lines
    : lines.slice(0, MAX_LINES).concat(["\u2026 " + (lines.length - MAX_LINES) + " more"]);
}

function lagLines(lag) {
  if (lag.error) return [lag.error];
  if (lag.input === null) return ["\u2014 reads no Kafka topic"];
  return ["total " + lag.total_lag].concat(lag.partitions.filter(p => p.lag > 0).map(
    p => p.topic + "-" + p.partition + ": " + p.lag + " (at " + (p.committed === null ? "none" : p.committed)
      + " of " + p.end + ")"));
}

const FIGURES = {
  kafka_connect_source_task_metrics_source_record_write_rate: "rate",
  kafka_connect_sink_task_metrics_sink_record_send_rate: "rate",
  kafka_connect_source_task_metrics_source_record_write_total: "copied",
  kafka_connect_sink_task_metrics_sink_record_send_total: "copied",
  kafka_connect_source_task_metrics_source_record_active_count: "active",
  kafka_connect_sink_task_metrics_sink_record_active_count: "active",
  kafka_connect_task_error_metrics_total_record_errors: "errors",
  kafka_connect_task_error_metrics_last_error_timestamp: "lastError",
};

function unescapeLabel(text) {
  return text.replace(/\\\\(.)/g, (m, c) => c === "n" ? "\\n" : c);
}

async function taskFigures() {
  // connector + "\\u0000" + task -> {rate, active, errors, lastError}; {} where the app has no /metrics
  const token = sessionStorage.getItem(TOKEN_KEY);
  const headers = token ? {"Authorization": "Bearer " + token} : {};
  const figures = {};
  try {
    const response = await fetch("metrics", {credentials: "same-origin", headers: headers});
    if (!response.ok) return figures;
    for (const line of (await response.text()).split("\\n")) {
      const match = /^(\\w+)\\{(.*)\\} (\\S+)$/.exec(line);
      if (!match || !(match[1] in FIGURES)) continue;
      const labels = {};
      for (const pair of match[2].matchAll(/(\\w+)="((?:[^"\\\\]|\\\\.)*)"/g)) labels[pair[1]] = unescapeLabel(pair[2]);
      const key = labels.connector + "\\u0000" + labels.task;
      (figures[key] = figures[key] || {})[FIGURES[match[1]]] = Number(match[3]);
    }
  } catch (e) { /* no figures */ }
  return figures;
}

function errorLine(trace) {
  // Kafka Connect's (Java's) traces start with the exception; Python's end with it, after the indented frames
  const lines = trace.split("\\n");
  if (lines[0] !== "Traceback (most recent call last):") return lines[0];
  let frame = 0;
  lines.forEach((line, i) => { if (line.startsWith(" ")) frame = i; });
  return lines[frame + 1] || lines[0];
}

function figureLines(name, tasks, figures) {
  return tasks.map(t => {
    const f = figures[name + "\\u0000" + t.id];
    if (!f) return "task " + t.id + ": no metrics" + (t.trace ? ", last error: " + errorLine(t.trace) : "");
    const parts = ["task " + t.id + ": " + (Number.isFinite(f.rate) ? f.rate.toFixed(1) : "\\u2014") + " records/s"];
    if (f.copied !== undefined) parts.push(f.copied + " copied");
    if (f.active !== undefined) parts.push(f.active + " uncommitted");
    if (f.lastError) {
      parts.push("last error " + new Date(f.lastError).toISOString().replace(".000", "") + " (" + f.errors
        + " failed" + (t.trace ? ": " + errorLine(t.trace) : "") + ")");
    } else if (t.trace) {
      parts.push("last error: " + errorLine(t.trace));
    }
    return parts.join(", ");
  });
}

function perConnector(names, suffix) {
  return Promise.all(names.map(name => call("GET", "connectors/" + encodeURIComponent(name) + "/" + suffix)
    .catch(e => ({error: e.message}))));
}

function offsetLines(offsets) {
  return (offsets.offsets || []).map(o => JSON.stringify(o.partition) + " \\u2192 " + JSON.stringify(o.offset));
}

async function render() {
  const error = document.getElementById("error");
  try {
    const connectors = await call("GET", "connectors?expand=status&expand=info");
    const names = Object.keys(connectors).sort();
    const [offsets, topics, lags, figures] = await Promise.all(
      [perConnector(names, "offsets"), perConnector(names, "topics"), perConnector(names, "lag"), taskFigures()]);
    const body = document.querySelector("#connectors tbody");
    body.replaceChildren();
    names.forEach((name, i) => {
      const status = connectors[name].status, info = connectors[name].info;
      const row = body.insertRow();
      row.dataset.connector = name;
      cell(row, name);
      cell(row, status.type + " \\u00b7 " + info.config["connector.class"]);
      cell(row, status.connector.state, "state " + status.connector.state).dataset.role = "state";
      list(cell(row), status.tasks.map(t => "task " + t.id + ": " + t.state + (t.trace ? " \\u2014 "
        + errorLine(t.trace) : "")));
      list(cell(row), topics[i].error ? [topics[i].error] : topics[i][name].topics);
      list(cell(row), capped(lagLines(lags[i]))).dataset.role = "lag";
      list(cell(row), capped(figureLines(name, status.tasks, figures))).dataset.role = "figures";
      list(cell(row), capped(offsets[i].error ? [offsets[i].error] : offsetLines(offsets[i])));
      const actions = cell(row);
      for (const [label, method, path] of ACTIONS) {
        const button = document.createElement("button");
        button.textContent = label;
        button.dataset.action = label.toLowerCase();
        button.onclick = async () => {
          try { await call(method, "connectors/" + encodeURIComponent(name) + "/" + path); error.textContent = ""; }
          catch (e) { error.textContent = e.message; }
          await render();
        };
        actions.appendChild(button);
      }
    });
    document.body.dataset.loaded = String(names.length);
  } catch (e) {
    error.textContent = e.message;
  }
}

render();
setInterval(render, 5000);
</script>
</body>
</html>
""".replace("__CHALLENGE__", json.dumps(TOKEN_CHALLENGE))
