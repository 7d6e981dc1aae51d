// agentrt inspector: the live parts of its pages, over the server's SSE.
// No framework and no inline script (the pages' Content-Security-Policy
// forbids it); every page works without it, a reload away.
"use strict";

// Live rows of the sessions table: its rows fragment, every 3 s while the
// page is visible.
function liveTable() {
  const table = document.querySelector("table[data-live]");
  if (!table) return;
  const url = table.getAttribute("data-live");
  const body = table.querySelector("tbody");
  setInterval(async () => {
    if (document.hidden) return;
    try {
      const r = await fetch(url, { credentials: "same-origin" });
      if (r.ok) body.innerHTML = await r.text(); // rendered and escaped by the server's templates
    } catch (e) { /* the next tick tries again */ }
  }, 3000);
}

// The inbox, polled every 3 s while the page is visible: when its requests
// change, the page reloads — unless a form has been typed in, when it
// says so and waits for the person.
function liveInbox() {
  const note = document.querySelector("[data-live-ids]");
  if (!note) return;
  const url = note.getAttribute("data-live-ids");
  const ids = (s) => s.split(/\s+/).filter(Boolean).join(" ");
  const shown = ids(note.getAttribute("data-ids"));
  let typed = false;
  document.addEventListener("input", () => { typed = true; });
  setInterval(async () => {
    if (document.hidden) return;
    try {
      const r = await fetch(url, { credentials: "same-origin" });
      if (!r.ok || ids(await r.text()) === shown) return;
      if (typed) note.hidden = false;
      else location.reload();
    } catch (e) { /* the next tick tries again */ }
  }, 3000);
}

// The session's events as they are committed, from the seq the page was
// rendered at (EventSource resumes from the last id after a dropped
// connection); tokens stream into the live answer. A run that stops or asks
// a person reloads the page, which renders the timeline and the forms.
function liveSession() {
  const facts = document.querySelector("dl[data-session]");
  if (!facts) return;
  const id = facts.getAttribute("data-session");
  const after = facts.getAttribute("data-last-seq");
  const timeline = document.getElementById("timeline");
  const live = document.getElementById("live");
  const status = document.getElementById("status");
  const es = new EventSource("/ui/sessions/" + encodeURIComponent(id) + "/events?after=" + encodeURIComponent(after));
  const row = (ev) => {
    const li = document.createElement("li");
    li.className = "ev " + ev.type;
    li.id = "ev-" + ev.seq;
    const head = document.createElement("div");
    head.className = "head";
    const seq = document.createElement("span");
    seq.className = "seq";
    seq.textContent = "#" + ev.seq;
    const title = document.createElement("strong");
    title.textContent = ev.type.replaceAll("_", " ");
    head.append(seq, " ", title);
    const details = document.createElement("details");
    details.className = "raw";
    const summary = document.createElement("summary");
    summary.textContent = "JSON";
    const pre = document.createElement("pre");
    pre.textContent = JSON.stringify(ev, null, 2);
    details.append(summary, pre);
    li.append(head, details);
    return li;
  };
  const onEvent = (msg) => {
    let ev;
    try { ev = JSON.parse(msg.data); } catch (e) { return; }
    if (!ev || !ev.type) return;
    if (ev.type === "token") {
      live.hidden = false;
      live.textContent += (ev.data && ev.data.text) || "";
      return;
    }
    if (!ev.seq) return; // other live events: the committed ones follow
    const empty = timeline.querySelector(".empty");
    if (empty) empty.remove();
    if (!document.getElementById("ev-" + ev.seq)) timeline.append(row(ev));
    if (status && ev.type === "run_started") status.textContent = "running";
    if (ev.type === "model_finished") { live.textContent = ""; live.hidden = true; }
    if (ev.type === "run_finished" || ev.type === "input_required") {
      es.close();
      window.location.reload();
    }
  };
  es.onmessage = onEvent;
  // The server names each SSE event by its type (docs/events.md).
  for (const t of ["run_started", "run_finished", "run_resumed", "round_started", "model_started", "token", "model_finished",
    "tool_call", "tool_result", "input_required", "input_resolved", "interrupted", "rule_added", "rule_revoked", "loop_warning",
    "compaction", "control", "messages_imported", "input_steered", "model_changed", "subagent_started", "subagent_progress", "subagent_checkpoint",
    "subagent_paused", "subagent_finished", "subagent_error", "subagent_event", "plan_created", "plan_step_started",
    "plan_step_finished", "final", "error"]) {
    es.addEventListener(t, onEvent);
  }
}

// Expiry counts down.
function countdowns() {
  const els = document.querySelectorAll("[data-expires]");
  if (!els.length) return;
  const tick = () => {
    for (const el of els) {
      const left = Math.round((Date.parse(el.getAttribute("data-expires")) - Date.now()) / 1000);
      el.textContent = left > 0 ? "expires in " + (left > 120 ? Math.round(left / 60) + " min" : left + " s") : "expired";
    }
  };
  tick();
  setInterval(tick, 1000);
}

// A JSON field says at once when it is not JSON (the server checks again).
function jsonFields() {
  for (const el of document.querySelectorAll("textarea[data-json]")) {
    el.addEventListener("input", () => {
      let msg = "";
      if (el.value.trim() !== "") {
        try { JSON.parse(el.value); } catch (e) { msg = "not JSON: " + e.message; }
      }
      el.setCustomValidity(msg);
      el.reportValidity();
    });
  }
}

document.addEventListener("DOMContentLoaded", () => {
  liveTable();
  liveSession();
  liveInbox();
  countdowns();
  jsonFields();
});
