// Administration (owned by the "webb" helper): the index's status and repair, the audit log.
// Contract: see app.js.

export function mount(section, ctx) {
  const $ = (id) => document.getElementById(id);
  const { el } = ctx;

  async function loadIndex() {
    try {
      const data = await ctx.getJSON("/v1/index/status");
      $("index-status").textContent = data.has_index ? "Search modes: " + data.modes.join(", ") : "No search index.";
      const job = data.job;
      const bar = $("index-progress");
      if (job && (job.running || job.total)) {
        bar.hidden = false;
        bar.max = Math.max(job.total, 1);
        bar.value = job.done;
        $("index-result").textContent = job.running ? "Indexing " + job.done + " of " + job.total + "…"
          : job.error ? "Failed: " + job.error
          : "Done: indexed " + (job.result.indexed || 0) + ", unchanged " + (job.result.unchanged || 0) + ", removed " + (job.result.removed || 0) + ".";
        if (job.running) setTimeout(loadIndex, 300);
      }
    } catch (e) {
      $("index-status").textContent = e.message;
    }
  }

  async function loadAudit() {
    const body = document.querySelector("#audit-table tbody");
    try {
      const data = await ctx.getJSON("/v1/audit?limit=200");
      body.replaceChildren(...data.records.reverse().map((r) => {
        const row = el("tr");
        row.append(
          el("td", new Date(r.time * 1000).toISOString().slice(11, 19)),
          el("td", r.principal), el("td", r.operation), el("td", r.path),
          el("td", r.allowed ? "allowed" : "refused: " + r.reason),
        );
        return row;
      }));
    } catch (e) {
      body.replaceChildren(el("tr", e.message));
    }
  }

  $("repair").addEventListener("click", async () => {
    try { await ctx.postJSON("/v1/index/repair", { rebuild: true }); } catch (e) { $("index-result").textContent = e.message; }
    loadIndex();
  });
  $("audit-refresh").addEventListener("click", loadAudit);
  return {
    available: (me) => me.operator.audit || me.operator.reindex,
    show() {
      const me = ctx.me();
      $("repair").hidden = !me.operator.reindex;
      $("audit-block").hidden = !me.operator.audit;
      loadIndex();
      if (me.operator.audit) loadAudit();
    },
    reset() { document.querySelector("#audit-table tbody").replaceChildren(); },
  };
}
