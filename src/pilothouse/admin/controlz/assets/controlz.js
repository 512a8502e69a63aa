// ControlZ: draws the page's topic from its JSON (/<topic>j) and sends changes back with
// fetch(). Everything from the server goes into the page as text (textContent), never as
// markup.
"use strict";

const LEVELS = ["debug", "info", "warn", "error", "none"];
const REFRESH_MS = 2000;

const topic = document.body.dataset.topic;
const content = document.getElementById("content");
const statusLine = document.getElementById("status");

// An element with properties (or attributes, for names that are not properties) and
// children (strings become text nodes).
function el(tag, props = {}, ...children) {
  const node = document.createElement(tag);
  for (const [key, value] of Object.entries(props)) {
    if (key === "dataset") Object.assign(node.dataset, value);
    else if (key in node) node[key] = value;
    else node.setAttribute(key, value);
  }
  node.append(...children);
  return node;
}

function say(text, failed = false) {
  statusLine.textContent = text;
  statusLine.className = failed ? "failed" : "done";
}

// The JSON of a response; an Error with the server's own reason when it refused.
async function answer(response) {
  const text = await response.text();
  let data = null;
  try {
    data = text ? JSON.parse(text) : null;
  } catch (_) {
    data = null;
  }
  if (!response.ok) {
    const reason = data && typeof data.error === "string"
      ? data.error
      : `${response.status} ${response.statusText}`;
    throw new Error(reason);
  }
  return data;
}

async function getJson(path) {
  return answer(await fetch(path, { headers: { Accept: "application/json" }, cache: "no-store" }));
}

async function send(method, path, body) {
  return answer(await fetch(path, {
    method,
    headers: { "Content-Type": "application/json", Accept: "application/json" },
    body: body === undefined ? undefined : JSON.stringify(body),
  }));
}

function table(headings, rows, className = "") {
  const head = el("tr", {}, ...headings.map((text) => el("th", { scope: "col", textContent: text })));
  return el("table", { className }, el("thead", {}, head), el("tbody", {}, ...rows));
}

function levelSelect(name, current, label) {
  const select = el("select", { name, "aria-label": label });
  for (const level of LEVELS) select.append(el("option", { value: level, textContent: level }));
  select.value = current;
  return select;
}

// -- scope: logging scopes -------------------------------------------------------------

function scopeRow(scope) {
  const output = levelSelect("output_level", scope.output_level, `output level of ${scope.name}`);
  const stack = levelSelect(
    "stack_trace_level", scope.stack_trace_level, `stack trace level of ${scope.name}`);
  const callers = el("input", {
    type: "checkbox", name: "log_callers", checked: scope.log_callers,
    "aria-label": `log callers of ${scope.name}`,
  });
  const apply = el("button", { type: "button", className: "apply", textContent: "Apply" });
  const inherited = scope.inherited
    ? el("span", { className: "note", textContent: "inherited" })
    : "";
  const row = el("tr", { dataset: { scope: scope.name } },
    el("th", { scope: "row", textContent: scope.name }),
    el("td", { className: "description", textContent: scope.description }),
    el("td", { className: "level" }, output, inherited),
    el("td", {}, stack),
    el("td", {}, callers),
    el("td", {}, apply));
  apply.addEventListener("click", async () => {
    // Only what was changed: an inherited level stays inherited unless it is changed.
    const changes = {};
    if (output.value !== scope.output_level) changes.output_level = output.value;
    if (stack.value !== scope.stack_trace_level) changes.stack_trace_level = stack.value;
    if (callers.checked !== scope.log_callers) changes.log_callers = callers.checked;
    if (Object.keys(changes).length === 0) {
      say(`${scope.name}: nothing changed`);
      return;
    }
    apply.disabled = true;
    try {
      const now = await send("PUT", `/scopej/${encodeURIComponent(scope.name)}`, changes);
      row.replaceWith(scopeRow(now));
      say(`${now.name}: output level ${now.output_level}, stack traces ${now.stack_trace_level}, `
        + `callers ${now.log_callers ? "on" : "off"}`);
    } catch (problem) {
      say(`${scope.name}: ${problem.message}`, true);
      apply.disabled = false;
    }
  });
  return row;
}

async function drawScopes() {
  const scopes = await getJson("/scopej/");
  content.replaceChildren(table(
    ["Scope", "Description", "Output level", "Stack traces from", "Callers", ""],
    scopes.map(scopeRow), "scopes"));
}

// -- knob: runtime knobs ---------------------------------------------------------------

function knobInput(knob) {
  const label = `new value of ${knob.name}`;
  if (knob.type === "level") return levelSelect("value", knob.value, label);
  if (knob.type === "bool") {
    const select = el("select", { name: "value", "aria-label": label },
      el("option", { value: "true", textContent: "true" }),
      el("option", { value: "false", textContent: "false" }));
    select.value = String(knob.value);
    return select;
  }
  return el("input", {
    type: "text", name: "value", value: String(knob.value), size: 10, "aria-label": label,
  });
}

function knobValue(knob, input) {
  if (knob.type === "bool") return input.value === "true";
  if (knob.type === "level") return input.value;
  const text = input.value.trim();
  return text !== "" && !Number.isNaN(Number(text)) ? Number(text) : text;
}

function knobRow(knob) {
  const input = knobInput(knob);
  const set = el("button", { type: "button", className: "apply", textContent: "Set" });
  const setting = knob.setting ? el("code", { textContent: knob.setting }) : "";
  const row = el("tr", { dataset: { knob: knob.name } },
    el("th", { scope: "row", textContent: knob.name }),
    el("td", { className: "value" }, input, set),
    el("td", { textContent: knob.type }),
    el("td", { className: "description" }, knob.description, setting ? " " : "", setting));
  set.addEventListener("click", async () => {
    set.disabled = true;
    try {
      const change = await send("PUT", `/knobj/${encodeURIComponent(knob.name)}`,
        knobValue(knob, input));
      row.replaceWith(knobRow({ ...knob, value: change.new }));
      say(`${change.name}: ${change.old} → ${change.new}`);
    } catch (problem) {
      say(problem.message, true);
      set.disabled = false;
    }
  });
  return row;
}

async function drawKnobs() {
  const { knobs } = await getJson("/knobj/");
  content.replaceChildren(table(["Knob", "Value", "Type", "Description"], knobs.map(knobRow),
    "knobs"));
}

// -- mem, proc, version: figures -------------------------------------------------------

function shown(key, value) {
  if (value === null || value === undefined) return "—";
  if (typeof value === "number" && /Bytes$/.test(key)) {
    const units = ["B", "KiB", "MiB", "GiB", "TiB"];
    let size = value;
    let unit = 0;
    while (size >= 1024 && unit < units.length - 1) {
      size /= 1024;
      unit += 1;
    }
    const rounded = unit === 0 ? String(size) : size.toFixed(1);
    return `${rounded} ${units[unit]} (${value.toLocaleString("en")} bytes)`;
  }
  if (typeof value === "number") return value.toLocaleString("en", { maximumFractionDigits: 3 });
  if (Array.isArray(value) && value.every((item) => typeof item !== "object")) {
    return value.join(", ");
  }
  return String(value);
}

// [dotted key, value] for every leaf of a JSON object.
function leaves(value, prefix = "") {
  if (value !== null && typeof value === "object"
      && !(Array.isArray(value) && value.every((item) => typeof item !== "object"))) {
    return Object.entries(value).flatMap(
      ([key, inner]) => leaves(inner, prefix ? `${prefix}.${key}` : key));
  }
  return [[prefix, value]];
}

function figures(data) {
  return table(["Name", "Value"], leaves(data).map(([key, value]) => el("tr",
    { dataset: { key } },
    el("th", { scope: "row", textContent: key }),
    el("td", { textContent: shown(key.split(".").pop(), value) }))), "figures");
}

function liveFigures(path, extraControls = []) {
  const live = el("input", { type: "checkbox", checked: true, id: "live" });
  const controls = el("p", { className: "controls" },
    el("label", {}, live, ` refresh every ${REFRESH_MS / 1000} s`), ...extraControls);
  const holder = el("div");
  const refresh = async () => {
    holder.replaceChildren(figures(await getJson(path)));
  };
  content.replaceChildren(controls, holder);
  setInterval(() => {
    if (live.checked) refresh().catch((problem) => say(problem.message, true));
  }, REFRESH_MS);
  return refresh;
}

async function drawMemory() {
  const collect = el("button", { type: "button", textContent: "Collect garbage now" });
  const refresh = liveFigures("/memj/", [" ", collect]);
  collect.addEventListener("click", async () => {
    collect.disabled = true;
    try {
      const result = await send("PUT", "/memj/forcecollection");
      say(`collected ${result.collected} unreachable objects in ${result.seconds} s`);
      await refresh();
    } catch (problem) {
      say(problem.message, true);
    } finally {
      collect.disabled = false;
    }
  });
  await refresh();
}

async function drawProcess() {
  await liveFigures("/procj/")();
}

async function drawVersion() {
  content.replaceChildren(figures(await getJson("/versionj/")));
}

// -- arg, env ---------------------------------------------------------------------------

async function drawArguments() {
  const { args, command } = await getJson("/argj/");
  const list = (items) => el("ol", { className: "args" },
    ...items.map((item) => el("li", {}, el("code", { textContent: item }))));
  content.replaceChildren(
    el("h2", { textContent: "Arguments" }), list(args),
    el("h2", { textContent: "Interpreter command line" }), list(command));
}

async function drawEnvironment() {
  const { variables } = await getJson("/envj/");
  content.replaceChildren(table(["Variable", "Value"], variables.map((variable) => el("tr",
    { dataset: { name: variable.name } },
    el("th", { scope: "row", textContent: variable.name }),
    el("td", { className: variable.redacted ? "redacted" : "" },
      el("code", { textContent: variable.value })))), "environment"));
}

const DRAW = {
  scope: drawScopes,
  knob: drawKnobs,
  mem: drawMemory,
  proc: drawProcess,
  arg: drawArguments,
  env: drawEnvironment,
  version: drawVersion,
};

if (DRAW[topic]) {
  content.replaceChildren(el("p", { className: "loading", textContent: "Loading…" }));
  DRAW[topic]().catch((problem) => {
    content.replaceChildren();
    say(`could not load /${topic}j: ${problem.message}`, true);
  });
}
