// Search: the modes the index declares, a folder and label filters (the search operation's
// `path` and `filter`), snippets with the query's words marked, pages of results, and a plain
// "No results" when nothing matches. The query lives in the address (#/search?q=...), so a
// search can be bookmarked and Back returns to it. Contract: see app.js.

const PAGE = 10;
const MAX_K = 100; // the search operation's most results

// Text nodes with each of `terms` wrapped in <mark>: the snippet stays text (never HTML);
// only the marks are elements.
export function marked(text, terms) {
  const out = document.createDocumentFragment();
  const words = terms.filter((t) => t.length > 1).map((t) => t.replace(/[.*+?^${}()|[\]\\]/g, "\\$&"));
  if (!words.length) { out.append(document.createTextNode(text)); return out; }
  const pattern = new RegExp("(" + words.join("|") + ")", "giu");
  let last = 0;
  for (const m of text.matchAll(pattern)) {
    if (m.index > last) out.append(document.createTextNode(text.slice(last, m.index)));
    const mark = document.createElement("mark");
    mark.textContent = m[0];
    out.append(mark);
    last = m.index + m[0].length;
  }
  if (last < text.length) out.append(document.createTextNode(text.slice(last)));
  return out;
}

const list = (text) => text.split(",").map((s) => s.trim()).filter(Boolean);

export function mount(section, ctx) {
  const { el } = ctx;
  const $ = (id) => section.querySelector("#" + id);
  const form = $("search-form");
  let modesLoaded = false;

  async function loadModes() {
    if (modesLoaded) return;
    try {
      const data = await ctx.getJSON("/v1/index/status");
      $("search-mode").replaceChildren(
        el("option", "Default", { value: "" }),
        ...data.modes.map((m) => el("option", { bm25: "Keyword (BM25)", vector: "Meaning (vector)", hybrid: "Hybrid" }[m] || m, { value: m })),
      );
      modesLoaded = true;
    } catch (e) { /* the default mode only */ }
  }

  function fromForm() {
    const q = new URLSearchParams({ q: $("search-query").value.trim() });
    for (const [key, id] of [["mode", "search-mode"], ["path", "search-path"], ["classifications", "search-class"], ["tags", "search-tags"]]) {
      const value = $(id).value.trim();
      if (value && !(key === "path" && value === "/")) q.set(key, value);
    }
    return q;
  }

  function toForm(q) {
    $("search-query").value = q.get("q") || "";
    $("search-mode").value = q.get("mode") || "";
    $("search-path").value = q.get("path") || "/";
    $("search-class").value = q.get("classifications") || "";
    $("search-tags").value = q.get("tags") || "";
    if (q.get("path") || q.get("classifications") || q.get("tags")) $("search-filters").open = true;
  }

  async function run(q) {
    const page = Math.max(1, Number(q.get("page")) || 1);
    const query = q.get("q");
    const hits = $("hits");
    const summary = $("search-summary");
    const pages = $("search-pages");
    hits.replaceChildren();
    pages.replaceChildren();
    if (!query) { summary.textContent = ""; return; }
    const body = { query, k: Math.min(MAX_K, page * PAGE + 1), path: q.get("path") || "/" };
    if (q.get("mode")) body.mode = q.get("mode");
    const filter = {};
    if (q.get("classifications")) filter.classifications = list(q.get("classifications"));
    if (q.get("tags")) filter.tags = list(q.get("tags"));
    if (Object.keys(filter).length) body.filter = filter;
    summary.textContent = "Searching…";
    let data;
    try {
      data = await ctx.postJSON("/v1/search", body);
    } catch (e) {
      summary.textContent = e.message;
      summary.className = "error";
      return;
    }
    summary.className = "";
    const shown = data.hits.slice((page - 1) * PAGE, page * PAGE);
    if (!data.hits.length) { summary.textContent = "No results for “" + query + "”."; return; }
    if (!shown.length) { summary.textContent = "No more results."; }
    else summary.textContent = "Results " + ((page - 1) * PAGE + 1) + " to " + ((page - 1) * PAGE + shown.length) + " for “" + query + "” (" + data.mode + ").";
    const terms = query.split(/\s+/);
    hits.start = (page - 1) * PAGE + 1;
    hits.replaceChildren(...shown.map((hit) => {
      const item = el("li");
      const where = hit.path + ":" + hit.lines[0] + "-" + hit.lines[1];
      const link = el("a", hit.title ? hit.title + " — " + where : where, {
        href: "#/files" + ctx.encodePath(hit.path) + "?lines=" + hit.lines[0] + "-" + hit.lines[1],
      });
      const snippet = el("p", null, { class: "snippet" });
      snippet.append(marked(hit.snippet.replace(/\n\s*\n+/g, "\n"), terms));
      item.append(link, snippet);
      return item;
    }));
    const more = data.hits.length > page * PAGE && page * PAGE < MAX_K;
    const pageLink = (label, n) => {
      const next = new URLSearchParams(q);
      next.set("page", String(n));
      return el("a", label, { href: "#/search?" + next, class: "page" });
    };
    if (page > 1) pages.append(pageLink("← Previous", page - 1));
    if (more) pages.append(pageLink("Next →", page + 1));
  }

  form.addEventListener("submit", (event) => {
    event.preventDefault();
    ctx.go("search", "?" + fromForm());
  });

  return {
    async show(route) {
      const q = new URLSearchParams(route.replace(/^\?/, ""));
      toForm(q); // at once: what is typed next is not overwritten
      await loadModes();
      $("search-mode").value = q.get("mode") || "";
      await run(q);
    },
    reset() {
      form.reset();
      for (const id of ["hits", "search-pages"]) $(id).replaceChildren();
      $("search-summary").textContent = "";
      modesLoaded = false;
    },
  };
}
