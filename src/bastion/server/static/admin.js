// Administration ("Web app: chat, administration, sign-in"), for operators: the index's status
// with live progress, repair and rebuild (a rebuild is confirmed first), "why can't someone see
// this?" (GET /v1/explain), and the audit log with filters, pages and a CSV export.
// Contract: see app.js. Offered to a principal with the audit or the reindex action.

const PAGE = 50;
const EXPORT_MAX = 10000;
const COLUMNS = ["time", "principal", "tenant", "operation", "path", "target", "allowed", "reason", "bytes", "duration_ms"];

// One cell of the audit export: a value a spreadsheet would run as a formula (it starts with
// =, +, -, @, a tab or a carriage return) gets a leading ' (shown as text); quotes, commas and
// line breaks are quoted as RFC 4180 says.
export function csvCell(value) {
  let text = value === null || value === undefined ? "" : String(value);
  // a spreadsheet must not run it as a formula, nor one that trims blanks first
  if (/^[\t\r]|^\s*[=+\-@]/.test(text)) text = "'" + text;
  return /[",\n\r]/.test(text) ? '"' + text.replace(/"/g, '""') + '"' : text;
}

export function mount(section, ctx) {
  const $ = (id) => document.getElementById(id);
  const { el } = ctx;
  let timer = null;
  let cursors = [null]; // cursors[i]: where page i ends (null: the newest)
  let page = 0;
  let next = null;

  // -- the index ----------------------------------------------------------------------------

  async function loadIndex() {
    clearTimeout(timer);
    try {
      const data = await ctx.getJSON("/v1/index/status");
      $("index-status").textContent = data.has_index
        ? "Search modes: " + data.modes.join(", ") + "." : "This workspace keeps no search index.";
      const job = data.job;
      const bar = $("index-progress");
      const running = Boolean(job && job.running);
      $("repair").disabled = running || !data.has_index;
      $("rebuild").disabled = running || !data.has_index;
      if (job && job.started_by) {
        bar.hidden = false;
        bar.max = Math.max(job.total, 1);
        bar.value = job.done;
        bar.setAttribute("aria-label", "Indexing progress");
        $("index-result").textContent = job.running ? "Indexing: " + job.done + " of " + (job.total || "?") + " files (started by " + job.started_by + ")…"
          : job.error ? "Failed: " + job.error + "."
          : "Done: indexed " + (job.result.indexed || 0) + ", unchanged " + (job.result.unchanged || 0)
            + ", removed " + (job.result.removed || 0) + ", skipped " + (job.result.skipped || 0) + ".";
        if (running && !section.hidden) timer = setTimeout(loadIndex, 400);
      }
    } catch (e) {
      $("index-status").textContent = e.message;
    }
  }

  async function repair(rebuild) {
    if (rebuild && !(await ctx.confirm("Rebuild the index?",
      "The index is thrown away and every file is indexed again. Search and answers find less until it ends.", "Rebuild"))) return;
    try {
      await ctx.postJSON("/v1/index/repair", { rebuild });
      ctx.toast(rebuild ? "Rebuild started." : "Repair started.");
    } catch (e) { $("index-result").textContent = e.message; }
    loadIndex();
  }

  // -- why can't X see this? ----------------------------------------------------------------

  async function explain(form) {
    const box = $("explain-result");
    const q = new URLSearchParams({ user: form.user.value.trim(), path: form.path.value.trim(), action: form.action.value });
    try {
      const d = await ctx.getJSON("/v1/explain?" + q);
      const rows = [
        ["Answer", (d.allowed ? "Allowed" : "Refused") + ": " + d.decided_by],
        ["User", d.user + " (clearance " + d.clearance + "; roles " + (d.roles.join(", ") || "none") + "; with inherited: " + (d.effective_roles.join(", ") || "none") + ")"],
      ];
      if (d.mount) rows.push(["Mount", d.mount.prefix + " (" + d.mount.scope + ": " + (d.mount.allows ? "allows " : "does not allow ") + d.action + ")"]);
      if (d.rule) {
        const r = d.rule;
        rows.push(["Rule", r.number ? "#" + r.number + " " + r.effect + " on " + r.paths.join(", ") + (r.roles.length ? " for " + r.roles.join(", ") : "") + " (" + r.reason + ")" : r.reason]);
        if (r.through && r.through.length) rows.push(["Role", r.through.join(" → ") + " (inherited in that order)"]);
      }
      if (d.labels) {
        const l = d.labels;
        rows.push(["Labels", "tenant " + (l.tenant || "any") + ", " + l.classification + ", roles " + (l.roles.join(", ") || "any") + " — from " + d.label_source + "; they " + (d.labels_admit ? "admit " : "do not admit ") + d.user]);
      }
      const list = el("dl", null, { class: "labels" });
      for (const [k, v] of rows) list.append(el("dt", k), el("dd", v));
      box.replaceChildren(el("p", d.user + " — " + d.action + " " + d.path, { class: d.allowed ? "verdict verified" : "verdict refused" }), list);
    } catch (e) {
      box.replaceChildren(el("p", e.message, { class: "error" }));
    }
  }

  // -- the audit log ------------------------------------------------------------------------

  function filters() {
    const q = new URLSearchParams();
    for (const name of ["principal", "operation", "outcome", "path"]) {
      const value = $("audit-" + name).value.trim();
      if (value) q.set(name, value);
    }
    for (const name of ["since", "until"]) {
      const value = $("audit-" + name).value;
      if (value) q.set(name, String(Date.parse(value + "Z") / 1000));
    }
    return q;
  }

  function outcome(r) {
    return r.allowed ? "allowed" : "refused: " + r.reason;
  }

  async function loadAudit() {
    const body = document.querySelector("#audit-table tbody");
    const q = filters();
    q.set("limit", String(PAGE));
    if (cursors[page]) q.set("cursor", cursors[page]);
    try {
      const data = await ctx.getJSON("/v1/audit?" + q);
      next = data.next;
      const rows = data.records.slice().reverse();
      body.replaceChildren(...rows.map((r) => {
        const row = el("tr", null, { class: r.allowed ? "" : "refused" });
        row.append(
          el("td", new Date(r.time * 1000).toISOString().replace("T", " ").slice(0, 19)),
          el("td", r.principal), el("td", r.operation), el("td", r.path + (r.target ? " → " + r.target : "")),
          el("td", outcome(r)),
        );
        return row;
      }));
      const operations = $("audit-operations");
      const known = new Set([...operations.options].map((o) => o.value));
      for (const r of rows) if (!known.has(r.operation)) { known.add(r.operation); operations.append(el("option", null, { value: r.operation })); }
      $("audit-summary").textContent = rows.length
        ? "Page " + (page + 1) + ": " + rows.length + (rows.length === 1 ? " record" : " records") + ", newest first" + (next ? "; older ones follow." : ".")
        : "No record matches these filters.";
      $("audit-newer").disabled = page === 0;
      $("audit-older").disabled = !next;
    } catch (e) {
      body.replaceChildren();
      $("audit-summary").textContent = e.message;
    }
  }

  async function exportCsv() {
    const lines = [COLUMNS.join(",")];
    let cursor = null;
    let count = 0;
    try {
      do {
        const q = filters();
        q.set("limit", "1000");
        if (cursor) q.set("cursor", cursor);
        const data = await ctx.getJSON("/v1/audit?" + q);
        for (const r of data.records.slice().reverse()) {
          lines.push(COLUMNS.map((c) => csvCell(c === "time" ? new Date(r.time * 1000).toISOString() : r[c])).join(","));
        }
        count += data.records.length;
        cursor = data.next;
      } while (cursor && count < EXPORT_MAX);
    } catch (e) { ctx.toast(e.message, "error"); return; }
    const blob = new Blob([lines.join("\r\n") + "\r\n"], { type: "text/csv" });
    const link = el("a", null, { href: URL.createObjectURL(blob), download: "bastion-audit.csv" });
    document.body.append(link);
    link.click();
    link.remove();
    setTimeout(() => URL.revokeObjectURL(link.href), 10000);
    ctx.toast("Exported " + count + " records" + (cursor ? " (the newest " + EXPORT_MAX + ")" : "") + ".");
  }

  async function knownUsers() {
    try {
      const data = await (await fetch("/v1/auth/demo/users")).json();
      if (data.users) $("explain-users").replaceChildren(...data.users.map((u) => el("option", null, { value: u.id })));
    } catch (e) { /* no demo users */ }
  }

  // -- wiring -------------------------------------------------------------------------------

  $("repair").addEventListener("click", () => repair(false));
  $("rebuild").addEventListener("click", () => repair(true));
  $("explain-form").addEventListener("submit", (event) => { event.preventDefault(); explain(event.target); });
  $("audit-form").addEventListener("submit", (event) => { event.preventDefault(); cursors = [null]; page = 0; loadAudit(); });
  $("audit-export").addEventListener("click", exportCsv);
  $("audit-older").addEventListener("click", () => { if (!next) return; cursors[page + 1] = next; page += 1; loadAudit(); });
  $("audit-newer").addEventListener("click", () => { if (page === 0) return; page -= 1; loadAudit(); });
  return {
    available: (me) => me.operator.audit || me.operator.reindex,
    show() {
      const me = ctx.me();
      $("index-actions").hidden = !me.operator.reindex;
      $("index-help").hidden = !me.operator.reindex;
      $("audit-block").hidden = !me.operator.audit;
      $("explain-block").hidden = !me.operator.audit;
      loadIndex();
      if (me.operator.audit) { cursors = [null]; page = 0; loadAudit(); knownUsers(); }
    },
    reset() {
      clearTimeout(timer);
      document.querySelector("#audit-table tbody").replaceChildren();
      for (const id of ["audit-summary", "index-result", "index-status"]) $(id).textContent = "";
      $("explain-result").replaceChildren();
      $("audit-form").reset();
      $("explain-form").reset();
      $("index-progress").hidden = true;
    },
  };
}
