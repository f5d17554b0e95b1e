// clstream view: the single-page app (docs/viewer.md). Vanilla JS, no build step.
// Every text from a results directory (replies, datasets, labels) is untrusted: it is set
// with textContent or setAttribute, never parsed as HTML. The page reads the JSON API of
// `clstream view`, or, where static.json is found (`clstream view --static`), the JSON
// shards next to it, filtering, sorting and paging them by the API's rules.
"use strict";

const SORT_KEYS = ["key", "family", "interval", "stage", "score", "correct", "tokens", "latency"];
const PALETTE = ["#1f77b4", "#d62728", "#2ca02c", "#ff7f0e", "#9467bd", "#8c564b",
                 "#e377c2", "#7f7f7f", "#bcbd22", "#17becf"];
const SVG_NS = "http://www.w3.org/2000/svg";
let STATIC = null;  // the static.json marker, when the page is a static copy

// -- elements ------------------------------------------------------------------------------
function el(tag, attrs, ...children) {
  const node = document.createElement(tag);
  for (const [k, v] of Object.entries(attrs || {})) {
    if (v === null || v === undefined || v === false) continue;
    if (k === "text") node.textContent = String(v);
    else if (k === "testid") node.setAttribute("data-testid", v);
    else if (k.startsWith("on")) node.addEventListener(k.slice(2), v);
    else node.setAttribute(k, v === true ? "" : String(v));
  }
  for (const child of children.flat(Infinity)) {
    if (child === null || child === undefined) continue;
    node.append(child instanceof Node ? child : document.createTextNode(String(child)));
  }
  return node;
}

function svg(tag, attrs) {
  const node = document.createElementNS(SVG_NS, tag);
  for (const [k, v] of Object.entries(attrs || {})) {
    if (k === "text") node.textContent = String(v);
    else if (k === "testid") node.setAttribute("data-testid", v);
    else node.setAttribute(k, String(v));
  }
  return node;
}

function num(value, digits) {
  if (value === null || value === undefined) return "–";
  if (typeof value !== "number") return String(value);
  return Number.isInteger(value) ? String(value) : value.toFixed(digits === undefined ? 3 : digits);
}

function interval(pair) {
  return pair ? `[${num(pair[0])}, ${num(pair[1])}]` : "";
}

function show(...nodes) {
  const main = document.getElementById("main");
  main.replaceChildren(...nodes.flat(Infinity).filter((n) => n !== null && n !== undefined));
}

function link(href, text, testid) {
  return el("a", {href, text, testid});
}

function table(testid, headers, rows) {
  const head = el("tr", {}, headers.map((h) => (h instanceof Node ? h : el("th", {text: h}))));
  return el("table", {testid}, el("thead", {}, head), el("tbody", {}, rows));
}

// -- data ----------------------------------------------------------------------------------
async function getJSON(path) {
  const response = await fetch(path, {headers: {Accept: "application/json"}});
  const body = await response.json().catch(() => ({error: response.statusText}));
  if (!response.ok) throw new Error(body.error || `${response.status}`);
  return body;
}

function fileRef(ref) { return ref.replaceAll(":", "_"); }

const shardCache = new Map();
async function staticRows(ref) {
  if (shardCache.has(ref)) return shardCache.get(ref);
  const info = STATIC.runs[ref];
  if (!info) throw new Error(`no run ${ref}`);
  const rows = [];
  for (let n = 0; n < info.shards; n++) {
    rows.push(...(await getJSON(`data/items/${info.file}/${n}.json`)).rows);
  }
  shardCache.set(ref, rows);
  return rows;
}

function sortValue(row, sort) {
  let value;
  if (sort === "tokens") value = row.cost.prompt_tokens + row.cost.completion_tokens;
  else if (sort === "latency") value = row.cost.latency_s;
  else value = row[sort];
  if (typeof value === "boolean") value = Number(value);
  return value;
}

// Text compared with its runs of digits as numbers (clstream/view/items.py natural_key).
function naturalParts(text) {
  return text.split(/(\d+)/).filter((p) => p !== "").map(
    (p) => (/^\d+$/.test(p) ? [0, Number(p)] : [1, p]));
}

function compareText(a, b) {
  const pa = naturalParts(a), pb = naturalParts(b);
  for (let i = 0; i < Math.min(pa.length, pb.length); i++) {
    const [ka, va] = pa[i], [kb, vb] = pb[i];
    if (ka !== kb) return ka - kb;
    if (va !== vb) return va < vb ? -1 : 1;
  }
  return pa.length - pb.length;
}

function compareValues(a, b) {
  const sa = typeof a === "string", sb = typeof b === "string";
  if (sa !== sb) return sa ? 1 : -1;
  if (sa) return compareText(a, b);
  return a - b;
}

function changedKeys(rows, other) {
  const theirs = new Map(other.map((r) => [r.key, r]));
  const out = new Set();
  for (const r of rows) {
    const t = theirs.get(r.key);
    if (t && (t.correct !== r.correct || t.score !== r.score)) out.add(r.key);
  }
  return out;
}

// The API's item selection (clstream/view/items.py select), for the static copy.
function selectRows(rows, q, changed) {
  const needle = q.get("q") ? q.get("q").toLowerCase() : null;
  const family = q.get("family") || null;
  const correct = q.get("correct") ? q.get("correct") === "true" : null;
  const kept = rows.filter((r) => {
    if (family !== null && r.family !== family) return false;
    if (correct !== null && r.correct !== correct) return false;
    if (changed && !changed.has(r.key)) return false;
    if (needle !== null && !["key", "gold", "answer", "verdict", "family"].some(
      (f) => String(r[f] ?? "").toLowerCase().includes(needle))) return false;
    return true;
  });
  const sort = q.get("sort") || "key";
  const present = kept.filter((r) => sortValue(r, sort) !== null && sortValue(r, sort) !== undefined);
  const absent = kept.filter((r) => sortValue(r, sort) === null || sortValue(r, sort) === undefined);
  present.sort((a, b) => compareValues(sortValue(a, sort), sortValue(b, sort)));
  if (q.get("order") === "desc") present.reverse();
  return present.concat(absent);
}

const api = {
  async runs(q) {
    if (!STATIC) return getJSON(`api/runs?${q}`);
    const doc = await getJSON("data/runs.json");
    const want = ["protocol", "system", "model", "seed"].filter((k) => q.get(k));
    for (const group of doc.datasets) {
      group.runs = group.runs.filter((r) => want.every((k) => String(r[k]) === q.get(k)));
    }
    doc.datasets = doc.datasets.filter((g) => g.runs.length);
    doc.total = doc.datasets.reduce((n, g) => n + g.runs.length, 0);
    return doc;
  },
  summary() { return getJSON(STATIC ? "data/summary.json" : "api/summary"); },
  figures() { return getJSON(STATIC ? "data/figures.json" : "api/figures"); },
  async items(ref, q) {
    if (!STATIC) return getJSON(`api/runs/${encodeURIComponent(ref)}/items?${q}`);
    const rows = await staticRows(ref);
    const changed = q.get("changed_vs") ? changedKeys(rows, await staticRows(q.get("changed_vs"))) : null;
    const kept = selectRows(rows, q, changed);
    const offset = Number(q.get("offset") || 0), limit = Number(q.get("limit") || 50);
    const run = (await api.runInfo(ref));
    return {run, total: kept.length, offset, limit, families: STATIC.runs[ref].families,
            rows: kept.slice(offset, offset + limit)};
  },
  async item(ref, key) {
    if (!STATIC) {
      return getJSON(`api/runs/${encodeURIComponent(ref)}/items/${encodeURIComponent(key)}`);
    }
    const rows = await staticRows(ref);
    const index = rows.findIndex((r) => r.key === key);
    if (index < 0) throw new Error(`run ${ref}: no item ${key}`);
    const shard = Math.floor(index / STATIC.shard_rows);
    return (await getJSON(`data/detail/${STATIC.runs[ref].file}/${shard}.json`))[key];
  },
  async compare(a, b, q) {
    if (!STATIC) {
      return getJSON(`api/compare?a=${encodeURIComponent(a)}&b=${encodeURIComponent(b)}&${q}`);
    }
    const stored = STATIC.compare.some(([x, y]) => x === a && y === b);
    if (!stored && STATIC.compare.some(([x, y]) => x === b && y === a)) {
      go(["compare", b, a], q);  // a static copy holds each pair in one order
      return new Promise(() => {});
    }
    if (!stored) throw new Error(`this static copy compares runs of one protocol and dataset only`);
    const doc = await getJSON(`data/compare/${fileRef(a)}__${fileRef(b)}.json`);
    let rows = doc.rows;
    if (q.get("changed") === "true") {
      rows = rows.filter((r) => r.a.correct !== r.b.correct || r.a.score !== r.b.score);
    }
    const offset = Number(q.get("offset") || 0), limit = Number(q.get("limit") || 50);
    return {...doc, total: rows.length, offset, limit, rows: rows.slice(offset, offset + limit)};
  },
  async runInfo(ref) {
    const doc = await api.runs(new URLSearchParams());
    for (const group of doc.datasets) for (const r of group.runs) if (r.ref === ref) return r;
    throw new Error(`no run ${ref}`);
  },
};

// -- routing -------------------------------------------------------------------------------
function parseHash() {
  const hash = location.hash.replace(/^#\/?/, "");
  const [path, query] = hash.split("?", 2);
  const parts = path.split("/").filter((p) => p !== "").map(decodeURIComponent);
  return {parts, query: new URLSearchParams(query || "")};
}

function go(parts, query) {
  const path = parts.map(encodeURIComponent).join("/");
  const text = query && String(query) ? `?${query}` : "";
  location.hash = `#/${path}${text}`;
}

let ROUTE = 0;  // the latest navigation: a slower earlier page never replaces a later one

async function route() {
  const mine = ++ROUTE;
  const render = (...nodes) => { if (mine === ROUTE) show(...nodes); };
  const {parts, query} = parseHash();
  const page = parts[0] || "runs";
  const main = document.getElementById("main");
  main.setAttribute("data-loading", "true");
  try {
    if (page === "runs") await pageRuns(render, query);
    else if (page === "summary") await pageSummary(render);
    else if (page === "items" && parts[1]) await pageItems(render, parts[1], query);
    else if (page === "item" && parts[2] !== undefined) await pageItem(render, parts[1], parts[2]);
    else if (page === "compare") await pageCompare(render, parts[1], parts[2], query);
    else if (page === "figures") await pageFigures(render);
    else render(el("p", {class: "error", testid: "error", text: `no page ${page}`}));
  } catch (error) {
    render(el("p", {class: "error", testid: "error", text: String(error.message || error)}));
  }
  if (mine === ROUTE) {
    main.setAttribute("data-page", page);
    main.setAttribute("data-loading", "false");
  }
}

// -- pages ---------------------------------------------------------------------------------
async function pageRuns(render, query) {
  const doc = await api.runs(query);
  const filters = el("form", {class: "controls", testid: "runs-filters"});
  for (const name of ["protocol", "system", "model", "seed"]) {
    filters.append(el("label", {}, `${name} `,
      el("input", {name, value: query.get(name) || "", size: 12, testid: `filter-${name}`})));
  }
  filters.append(el("button", {type: "submit", text: "Filter", testid: "filter-apply"}));
  filters.addEventListener("submit", (event) => {
    event.preventDefault();
    const q = new URLSearchParams();
    for (const [k, v] of new FormData(filters)) if (v) q.set(k, v);
    go(["runs"], q);
  });
  const sections = doc.datasets.map((group) => {
    const rows = group.runs.map((r) => el("tr", {testid: "run-row", "data-ref": r.ref},
      el("td", {}, link(`#/items/${encodeURIComponent(r.ref)}`, r.ref, "run-link")),
      el("td", {text: r.system}), el("td", {text: r.model}), el("td", {text: num(r.seed)}),
      el("td", {class: "num", text: r.status.ok}), el("td", {class: "num", text: r.status.errors}),
      el("td", {class: "num", text: r.status.calls}), el("td", {class: "num", text: num(r.wall_s, 1)}),
      el("td", {text: r.dir})));
    const pair = group.runs.length > 1
      ? link(`#/compare/${encodeURIComponent(group.runs[0].ref)}/${encodeURIComponent(group.runs[1].ref)}`,
             "compare the first two", "compare-link") : null;
    return el("section", {testid: "dataset-group"},
      el("h3", {text: `${group.protocol} · dataset ${group.dataset_sha256.slice(0, 8)} `}, pair),
      table("runs-table", ["run", "system", "model", "seed", "ok", "errors", "calls", "wall s",
                           "directory"], rows));
  });
  render(el("h2", {text: `Runs (${doc.total})`}), filters,
       doc.total ? sections : el("p", {testid: "runs-empty", text: "No run matches."}));
}

function cellText(cell) {
  if (!cell) return "not run";
  return `${num(cell.value)} ${interval(cell.interval)}${cell.rank ? ` #${cell.rank}` : ""}`;
}

async function pageSummary(render) {
  const doc = await api.summary();
  const view = doc.cross_protocol;
  // Runs that differ only in their seed are rows of their own: a seed column tells them apart.
  const seeded = new Set(view.methods.flatMap((m) => m.seeds)).size > 1;
  const cross = table("cross-table",
    ["method", ...(seeded ? ["seed"] : []), ...view.columns.map((c) => c.label)],
    view.methods.map((m) => el("tr", {testid: "cross-row"}, el("td", {text: m.label}),
      seeded ? el("td", {class: "num", text: m.seeds.join(",") || "-"}) : [],
      view.columns.map((c) => el("td", {class: "num", text: cellText(m.cells[c.key])})))));
  const runs = [];
  for (const summary of doc.summaries) {
    for (const run of summary.runs) {
      const heads = doc.headlines[run.ref] || [];
      runs.push(el("tr", {testid: "summary-row", "data-ref": run.ref},
        el("td", {}, link(`#/items/${encodeURIComponent(run.ref)}`, run.ref)),
        el("td", {text: run.protocol}), el("td", {text: run.system}), el("td", {text: run.model}),
        el("td", {class: "text", text: run.broken ? `broken: ${run.broken}` : heads.map(
          (h) => `${h.label} ${num(h.value)} ${interval(h.interval)}`).join("\n")})));
    }
  }
  const paired = doc.summaries.flatMap((s, i) => (s.paired ? s.paired.pairs : [])
    .map((p) => ({...p, ref_a: `${i}:${p.run_a}`, ref_b: `${i}:${p.run_b}`})));
  render(el("h2", {text: "Summary"}),
       el("h3", {text: "Across protocols: value [interval] #rank"}), cross,
       view.notes.map((n) => el("p", {class: "note", text: n})),
       el("h3", {text: "Each protocol, as clstream summary prints it"}),
       doc.text.flatMap((tables, i) => tables.map((t) => el("section", {testid: "protocol-summary"},
         el("div", {class: "note", text: `${t.protocol} · dataset ${t.dataset_sha256.slice(0, 8)} · ${doc.summaries[i].dir}`}),
         el("pre", {text: t.lines.join("\n")})))),
       el("h3", {text: "Runs: headline metrics with intervals"}),
       table("summary-table", ["run", "protocol", "system", "model", "headlines"], runs),
       el("h3", {text: "Paired differences A − B on the same items"}), pairedTable(paired));
}

function pairedTable(pairs) {
  return table("paired-table", ["protocol", "metric", "A", "B", "A − B", "interval", "p (Holm)", "items"],
    pairs.map((p) => el("tr", {testid: "paired-row"}, el("td", {},
      p.ref_a ? link(`#/compare/${encodeURIComponent(p.ref_a)}/${encodeURIComponent(p.ref_b)}`, p.protocol, "paired-link")
        : p.protocol),
      el("td", {text: p.label || p.metric}), el("td", {text: p.a}), el("td", {text: p.b}),
      el("td", {class: "num", text: num(p.difference)}), el("td", {text: interval(p.interval)}),
      el("td", {class: "num", text: num(p.p_holm ?? p.p_value, 4)}),
      el("td", {class: "num", text: p.items}))));
}

function verdictClass(row) {
  return row.correct === true ? "right" : row.correct === false ? "wrong" : null;
}

async function pageItems(render, ref, query) {
  const q = new URLSearchParams(query);
  if (!q.get("limit")) q.set("limit", "50");
  const doc = await api.items(ref, q);
  const runs = await api.runs(new URLSearchParams());
  const others = runs.datasets.flatMap((g) => g.runs)
    .filter((r) => r.ref !== ref && r.protocol === doc.run.protocol);
  const update = (changes) => {
    const next = new URLSearchParams(q);
    for (const [k, v] of Object.entries(changes)) if (v === "" || v === null) next.delete(k); else next.set(k, v);
    if (!("offset" in changes)) next.delete("offset");
    go(["items", ref], next);
  };
  const family = el("select", {testid: "filter-family", onchange: (e) => update({family: e.target.value})},
    el("option", {value: "", text: "all families"}),
    doc.families.map((f) => el("option", {value: f, text: f, selected: q.get("family") === f})));
  const correct = el("select", {testid: "filter-correct", onchange: (e) => update({correct: e.target.value})},
    ["", "true", "false"].map((v) => el("option", {value: v, text: v ? `correct=${v}` : "any verdict",
                                                    selected: (q.get("correct") || "") === v})));
  const search = el("input", {testid: "filter-q", placeholder: "search text", value: q.get("q") || "",
                              onchange: (e) => update({q: e.target.value})});
  const changed = el("select", {testid: "filter-changed", onchange: (e) => update({changed_vs: e.target.value})},
    el("option", {value: "", text: "changed vs: none"}),
    others.map((r) => el("option", {value: r.ref, text: `changed vs ${r.ref} (${r.system})`,
                                    selected: q.get("changed_vs") === r.ref})));
  const sort = q.get("sort") || "key", desc = q.get("order") === "desc";
  const header = (label, key) => {
    if (!key) return el("th", {text: label});
    return el("th", {class: `sortable${sort === key ? " sorted" : ""}${sort === key && desc ? " desc" : ""}`,
                     testid: `sort-${key}`, text: label,
                     onclick: () => update({sort: key, order: sort === key && !desc ? "desc" : "asc"})});
  };
  const rows = doc.rows.map((r) => el("tr", {testid: "item-row", "data-key": r.key, class: verdictClass(r)},
    el("td", {}, link(`#/item/${encodeURIComponent(ref)}/${encodeURIComponent(r.key)}`, r.key, "item-link")),
    el("td", {text: r.family}), el("td", {class: "num", text: num(r.interval)}), el("td", {text: r.stage}),
    el("td", {class: "text", text: r.gold ?? ""}), el("td", {class: "text", text: r.answer ?? ""}),
    el("td", {class: "text verdict", text: r.error ? `error: ${r.error}` : (r.verdict ?? "")}),
    el("td", {class: "num", text: num(r.score)}),
    el("td", {class: "num", text: r.cost.prompt_tokens + r.cost.completion_tokens})));
  const last = Math.min(doc.offset + doc.limit, doc.total);
  const pager = el("div", {class: "pager"},
    el("button", {testid: "page-prev", disabled: doc.offset <= 0,
                  onclick: () => update({offset: String(Math.max(0, doc.offset - doc.limit))})}, "◀ prev"),
    el("span", {testid: "page-info", text: `${doc.total ? doc.offset + 1 : 0}–${last} of ${doc.total}`}),
    el("button", {testid: "page-next", disabled: last >= doc.total,
                  onclick: () => update({offset: String(doc.offset + doc.limit)})}, "next ▶"));
  render(el("h2", {testid: "items-title", text: `${doc.run.protocol} · ${doc.run.system} · ${doc.run.model} (${ref})`}),
       el("div", {class: "controls"}, family, correct, search, changed,
          el("span", {testid: "items-total", "data-total": doc.total, text: `${doc.total} items`})),
       pager,
       table("items-table", [header("item", "key"), header("family", "family"), header("interval", "interval"),
                             header("stage", "stage"), header("gold"), header("answer"),
                             header("verdict", "correct"), header("score", "score"),
                             header("tokens", "tokens")], rows));
}

function callView(call, n) {
  const messages = call.messages.map((m) => el("div", {class: "message", testid: "call-message"},
    el("div", {class: "role", text: m.role}), el("pre", {text: m.content})));
  const replies = call.samples.map((s, i) => el("div", {class: "message", testid: "call-reply"},
    el("div", {class: "role", text: `reply ${i + 1}${s.finish_reason ? ` (${s.finish_reason})` : ""}`}),
    el("pre", {text: s.text ?? ""}),
    s.reasoning ? el("details", {}, el("summary", {text: "reasoning"}), el("pre", {text: s.reasoning})) : null));
  return el("div", {class: `call${call.judge ? " judge" : ""}`, testid: call.judge ? "judge-call" : "call"},
    el("div", {text: `call ${n + 1}: ${call.stage}${call.judge ? " (judge)" : ""} · ${call.record_kind} ${call.record_key}`}),
    el("div", {class: "note", text: `tokens ${call.prompt_tokens} in, ${call.completion_tokens} out` +
      `${call.cached_tokens ? `, ${call.cached_tokens} cached` : ""} · ${num(call.latency_s, 4)} s` +
      `${call.cache_hit ? " · cache hit" : ""}${call.error ? ` · error: ${call.error}` : ""}`}),
    el("details", {}, el("summary", {text: "sampling"}), el("pre", {testid: "call-params", text: JSON.stringify(call.params, null, 2)})),
    messages, replies);
}

async function pageItem(render, ref, key) {
  const doc = await api.item(ref, key);
  const row = doc.row;
  const facts = table("item-facts", ["family", "interval", "stage", "gold", "answer", "verdict", "score"],
    [el("tr", {class: verdictClass(row)}, el("td", {text: row.family}), el("td", {text: num(row.interval)}),
        el("td", {text: row.stage}), el("td", {class: "text", text: row.gold ?? ""}),
        el("td", {class: "text", text: row.answer ?? ""}), el("td", {class: "text verdict", text: row.verdict ?? ""}),
        el("td", {class: "num", text: num(row.score)}))]);
  const timeline = doc.timeline ? table("timeline", ["item", "kind", "interval", "gold", "answer", "verdict"],
    doc.timeline.map((t) => el("tr", {testid: "timeline-row", class: verdictClass(t)},
      el("td", {}, t.key === row.key ? el("strong", {text: t.key})
        : link(`#/item/${encodeURIComponent(ref)}/${encodeURIComponent(t.key)}`, t.key)),
      el("td", {text: t.kind}), el("td", {class: "num", text: num(t.interval)}),
      el("td", {class: "text", text: t.gold ?? ""}), el("td", {class: "text", text: t.answer ?? ""}),
      el("td", {class: "verdict", text: t.correct === null ? "" : t.correct ? "right" : "wrong"})))) : null;
  const memory = doc.memory
    ? el("div", {testid: "memory"}, el("p", {class: "note",
        text: `snapshot of stream ${doc.memory.stream} at step ${num(doc.memory.step)} (stored steps: ${doc.memory.steps.join(", ")})`}),
      el("pre", {testid: "memory-state", text: JSON.stringify(doc.memory.state, null, 2)}))
    : el("p", {class: "note", testid: "memory-none", text: "No memory snapshot stored for this item."});
  render(el("h2", {testid: "item-title", text: `${row.key} · ${doc.run.system} (${ref})`}),
       el("p", {}, link(`#/items/${encodeURIComponent(ref)}`, "← all items", "back-to-items")),
       facts,
       timeline ? [el("h3", {text: "The same question over the stream"}), timeline] : [],
       el("h3", {text: `Model calls (${doc.calls.length})`}),
       el("div", {testid: "calls"}, doc.calls.length ? doc.calls.map(callView)
         : el("p", {class: "note", testid: "calls-none", text: STATIC && STATIC.calls === false
           ? "Calls are left out of this static copy (written with --no-calls)."
           : "No stored call (a run with --transcripts none, or none made)."})),
       el("h3", {text: "Memory state"}), memory,
       el("h3", {text: "Stored record"}), el("pre", {testid: "item-record", text: JSON.stringify(doc.record, null, 2)}));
}

async function pageCompare(render, a, b, query) {
  const runs = (await api.runs(new URLSearchParams())).datasets.flatMap((g) => g.runs);
  const pick = (testid, value) => el("select", {testid, name: testid},
    runs.map((r) => el("option", {value: r.ref, text: `${r.ref} ${r.protocol} ${r.system}`, selected: r.ref === value})));
  const pickA = pick("compare-a", a), pickB = pick("compare-b", b || (runs[1] || {}).ref);
  const form = el("div", {class: "controls"}, "A ", pickA, " B ", pickB,
    el("button", {testid: "compare-go", text: "Compare", onclick: () => go(["compare", pickA.value, pickB.value])}));
  if (!a || !b) { render(el("h2", {text: "Compare two runs"}), form); return; }
  const q = new URLSearchParams(query);
  const doc = await api.compare(a, b, q);
  const update = (changes) => {
    const next = new URLSearchParams(q);
    for (const [k, v] of Object.entries(changes)) next.set(k, v);
    go(["compare", a, b], next);
  };
  const verdict = (side) => el("td", {class: `verdict ${verdictClass(side) || ""}`,
    text: side.correct === null ? num(side.score) : side.correct ? "right" : "wrong"});
  const itemLink = (ref, key, text, testid) =>
    link(`#/item/${encodeURIComponent(ref)}/${encodeURIComponent(key)}`, text, testid);
  const rows = doc.rows.map((r) => el("tr", {testid: "compare-row", "data-key": r.key},
    el("td", {}, itemLink(a, r.key, r.key, "compare-item-a"), " ", itemLink(b, r.key, "(B)", "compare-item-b")),
    el("td", {text: r.a.family}), el("td", {class: "text", text: r.a.gold ?? ""}),
    el("td", {class: "text", text: r.a.answer ?? ""}), verdict(r.a),
    el("td", {class: "text", text: r.b.answer ?? ""}), verdict(r.b)));
  const offset = doc.offset, last = Math.min(offset + doc.limit, doc.total);
  render(el("h2", {text: `Compare ${doc.a.system} (A) and ${doc.b.system} (B)`}), form,
       el("h3", {text: "Paired differences"}), pairedTable(doc.paired),
       el("p", {testid: "compare-counts", text: `${doc.total} shared items${q.get("changed") === "true" ? " (changed only)" : ""} · ${doc.changed} changed · ${doc.only_a} only in A · ${doc.only_b} only in B`}),
       el("label", {}, el("input", {type: "checkbox", testid: "compare-changed", checked: q.get("changed") === "true",
                                    onchange: (e) => update({changed: e.target.checked ? "true" : "false", offset: "0"})}), " only changed"),
       el("div", {class: "pager"},
         el("button", {testid: "page-prev", disabled: offset <= 0, onclick: () => update({offset: String(Math.max(0, offset - doc.limit))})}, "◀ prev"),
         el("span", {testid: "page-info", text: `${doc.total ? offset + 1 : 0}–${last} of ${doc.total}`}),
         el("button", {testid: "page-next", disabled: last >= doc.total, onclick: () => update({offset: String(offset + doc.limit)})}, "next ▶")),
       table("compare-table", ["item", "family", "gold", "A answer", "A", "B answer", "B"], rows));
}

// -- figures -------------------------------------------------------------------------------
const hidden = new Set();  // "figure id|series label" toggled off

function tooltip(event, text) {
  const tip = document.getElementById("tooltip");
  if (text === null) { tip.hidden = true; return; }
  tip.textContent = text;
  tip.hidden = false;
  tip.style.left = `${event.clientX + 12}px`;
  tip.style.top = `${event.clientY + 12}px`;
}

function hover(node, text) {
  node.addEventListener("mousemove", (e) => tooltip(e, text));
  node.addEventListener("mouseleave", (e) => tooltip(e, null));
  node.setAttribute("data-value", text);
  node.append(svg("title", {text}));
}

function drawFigure(figure) {
  const W = 560, H = 260, L = 50, R = 10, T = 10, B = 30;
  const series = figure.series.map((s, i) => ({...s, colour: PALETTE[i % PALETTE.length]}))
    .filter((s) => !hidden.has(`${figure.id}|${s.label}`));
  const ys = series.flatMap((s) => s.points.flatMap((p) => [p.y, p.low, p.high])).filter((v) => typeof v === "number");
  let lo = Math.min(0, ...ys), hi = Math.max(0, ...ys);
  if (hi <= 1 && lo >= 0) hi = 1;
  if (hi === lo) hi = lo + 1;
  const y = (v) => T + (H - T - B) * (1 - (v - lo) / (hi - lo));
  const root = svg("svg", {width: W, height: H, viewBox: `0 0 ${W} ${H}`, role: "img", testid: "figure-svg"});
  root.append(svg("line", {x1: L, x2: L, y1: T, y2: H - B, stroke: "#888"}),
              svg("line", {x1: L, x2: W - R, y1: y(0), y2: y(0), stroke: "#888"}));
  for (const v of [lo, (lo + hi) / 2, hi]) {
    root.append(svg("text", {x: L - 4, y: y(v) + 4, "text-anchor": "end", text: num(v, 2)}));
  }
  if (figure.kind === "bars") {
    const width = (W - L - R) / Math.max(1, series.length);
    series.forEach((s, i) => {
      const p = s.points[0], x = L + i * width + width * 0.15, w = width * 0.7;
      const bar = svg("rect", {x, width: w, y: Math.min(y(p.y), y(0)), height: Math.abs(y(p.y) - y(0)) || 1,
                               fill: s.colour, testid: "figure-mark"});
      hover(bar, `${s.label}: ${num(p.y)} ${interval(p.low === null ? null : [p.low, p.high])}`.trim());
      root.append(bar);
      if (typeof p.low === "number" && typeof p.high === "number") {
        root.append(svg("line", {x1: x + w / 2, x2: x + w / 2, y1: y(p.low), y2: y(p.high), stroke: "#000"}));
      }
      root.append(svg("text", {x: x + w / 2, y: H - B + 14, "text-anchor": "middle", text: s.label.slice(0, 24)}));
    });
  } else {
    const xs = series.flatMap((s) => s.points.map((p) => p.x)).filter((v) => typeof v === "number");
    const x0 = Math.min(...xs), x1 = Math.max(...xs);
    const x = (v) => L + (W - L - R) * (x1 === x0 ? 0.5 : (v - x0) / (x1 - x0));
    root.append(svg("text", {x: (L + W) / 2, y: H - 4, "text-anchor": "middle", text: figure.x_label}));
    for (const s of series) {
      const pts = s.points.filter((p) => typeof p.y === "number");
      root.append(svg("polyline", {points: pts.map((p) => `${x(p.x)},${y(p.y)}`).join(" "),
                                   fill: "none", stroke: s.colour, "stroke-width": 1.5}));
      for (const p of pts) {
        const dot = svg("circle", {cx: x(p.x), cy: y(p.y), r: 3.5, fill: s.colour, testid: "figure-mark"});
        hover(dot, `${s.label}: ${figure.x_label} ${p.x} → ${num(p.y)}`);
        root.append(dot);
      }
    }
  }
  return root;
}

function figureBox(figure) {
  const box = el("div", {class: "figure", testid: "figure", "data-id": figure.id});
  const redraw = () => box.replaceChildren(el("div", {text: figure.title}), drawFigure(figure), legend);
  const legend = el("div", {class: "legend"}, figure.series.map((s) => el("label", {},
    el("input", {type: "checkbox", testid: "series-toggle", "data-series": s.label,
                 checked: !hidden.has(`${figure.id}|${s.label}`),
                 onchange: (e) => {
                   const key = `${figure.id}|${s.label}`;
                   if (e.target.checked) hidden.delete(key); else hidden.add(key);
                   redraw();
                 }}),
    el("span", {text: ` ${s.label}`}))));
  // Legend swatches carry the series colour (set through the CSSOM, which the CSP allows).
  legend.querySelectorAll("label").forEach((label, i) => { label.style.color = PALETTE[i % PALETTE.length]; });
  redraw();
  return box;
}

async function pageFigures(render) {
  const doc = await api.figures();
  render(el("h2", {text: "Figures"}),
       el("p", {class: "note", text: "Hover a mark for its value; untick a series to hide it."}),
       el("div", {testid: "figures"}, doc.figures.map(figureBox)));
}

// -- start ---------------------------------------------------------------------------------
async function start() {
  try {
    // The live server answers {"mode": "live"}; a static copy holds its marker here.
    const response = await fetch("static.json");
    const marker = response.ok ? await response.json() : null;
    if (marker && marker.mode === "static") STATIC = marker;
  } catch (error) { STATIC = null; }
  document.getElementById("mode").textContent = STATIC ? "static copy" : "live, read-only";
  window.addEventListener("hashchange", route);
  await route();
}

start();
