// Bastion's web page: plain JavaScript, no build step. Every request carries the bearer
// token held in memory only (a reload signs out), or the account's session cookie (HttpOnly:
// this script never sees it); everything shown is set as text, never HTML.
"use strict";

const $ = (id) => document.getElementById(id);
let token = null;
let session = false; // signed in with an account (the cookie)
let me = null;

function el(tag, text, attrs = {}) {
  const node = document.createElement(tag);
  if (text !== undefined && text !== null) node.textContent = text;
  for (const [k, v] of Object.entries(attrs)) node.setAttribute(k, v);
  return node;
}

async function api(path, options = {}) {
  const headers = Object.assign({}, options.headers || {});
  if (token) headers.Authorization = "Bearer " + token;
  const response = await fetch(path, Object.assign({}, options, { headers }));
  if (!response.ok) {
    let message = response.status + " " + response.statusText;
    try { message = (await response.json()).error.message; } catch (e) { /* not JSON */ }
    const error = new Error(message);
    error.status = response.status;
    throw error;
  }
  return response;
}

const getJSON = async (path) => (await api(path)).json();
const postJSON = async (path, body) => (await api(path, {
  method: "POST", headers: { "Content-Type": "application/json" }, body: JSON.stringify(body),
})).json();

// -- sign in ------------------------------------------------------------------------------

async function loadDemoUsers() {
  try {
    const data = await (await fetch("/v1/auth/demo/users")).json();
    if (!data.users) return;
    const select = $("demo-user");
    for (const user of data.users) select.append(el("option", user.id + " (" + user.about + ")", { value: user.id }));
    $("demo-form").hidden = false;
  } catch (e) { /* demo login off */ }
}

async function signIn(newToken) {
  token = newToken;
  try {
    me = await getJSON("/v1/me");
  } catch (e) {
    token = null;
    $("signin-error").textContent = e.message;
    return;
  }
  $("signin-error").textContent = "";
  $("whoami").textContent = "Signed in as " + me.id + " (" + me.tenant + ", " + me.clearance + ")";
  $("signin").hidden = true;
  $("app").hidden = false;
  $("signout").hidden = false;
  document.querySelector('[data-tab="audit"]').hidden = !me.operator.audit;
  $("repair").hidden = !me.operator.reindex;
  const dirs = $("upload-dir");
  dirs.replaceChildren(...me.writable.map((p) => el("option", p, { value: p })));
  $("upload-form").hidden = me.writable.length === 0;
  showTab("chat");
  $("question").focus();
}

async function loadSignInMethods() {
  try {
    const methods = await (await fetch("/v1/auth/methods")).json();
    $("account-form").hidden = !methods.accounts;
    $("oidc-sign-in").hidden = !methods.oidc;
  } catch (e) { /* neither */ }
}

async function resumeSession() {
  const response = await fetch("/v1/me");
  if (response.ok) { session = true; await signIn(null); }
}

function signOut() {
  if (session) fetch("/v1/auth/logout", { method: "POST" });
  token = null; me = null; session = false;
  $("app").hidden = true; $("signin").hidden = false; $("signout").hidden = true;
  $("whoami").textContent = "";
  for (const id of ["answer", "citations", "verdict", "hits", "tree", "upload-status"]) $(id).replaceChildren();
  $("viewer").hidden = true;
}

// -- tabs ---------------------------------------------------------------------------------

function showTab(name) {
  for (const button of document.querySelectorAll("nav button")) {
    button.setAttribute("aria-selected", String(button.dataset.tab === name));
  }
  for (const section of document.querySelectorAll(".tab")) section.hidden = section.id !== name;
  if (name === "files") loadTree();
  if (name === "index") loadIndex();
  if (name === "audit") loadAudit();
}

// -- chat ---------------------------------------------------------------------------------

async function openLines(path, lines) {
  const [start, end] = lines;
  const q = new URLSearchParams({ path, offset: String(start - 1), limit: String(end - start + 1) });
  try {
    const data = await getJSON("/v1/files/read?" + q);
    showDocument(path + ":" + start + "-" + end, data.content);
  } catch (e) {
    showDocument(path, "(" + e.message + ")");
  }
}

function showDocument(title, text) {
  $("viewer-path").textContent = title;
  $("viewer-text").textContent = text;
  $("viewer").hidden = false;
  $("viewer-text").focus();
}

function renderAnswer(text, citations) {
  const box = $("answer");
  box.replaceChildren();
  const byNumber = new Map(citations.map((c) => [String(c.n), c]));
  for (const part of text.split(/(\[\d+\])/)) {
    const m = part.match(/^\[(\d+)\]$/);
    const cited = m && byNumber.get(m[1]);
    if (cited) {
      const ref = el("button", part, { type: "button", class: "ref", "aria-label": "citation " + m[1] + ": " + cited.path });
      ref.addEventListener("click", () => openLines(cited.path, cited.lines));
      box.append(ref);
    } else {
      box.append(document.createTextNode(part));
    }
  }
}

async function ask(question) {
  const answer = $("answer");
  answer.textContent = "…";
  $("citations").replaceChildren();
  $("verdict").textContent = "";
  let text = "";
  let citations = [];
  try {
    const response = await api("/v1/ask", {
      method: "POST",
      headers: { "Content-Type": "application/json", Accept: "text/event-stream" },
      body: JSON.stringify({ question }),
    });
    const reader = response.body.getReader();
    const decoder = new TextDecoder();
    let buffer = "";
    answer.textContent = "";
    for (;;) {
      const { value, done } = await reader.read();
      if (done) break;
      buffer += decoder.decode(value, { stream: true });
      let cut;
      while ((cut = buffer.indexOf("\n\n")) >= 0) {
        const block = buffer.slice(0, cut);
        buffer = buffer.slice(cut + 2);
        const name = (block.match(/^event: (.*)$/m) || [])[1];
        const data = JSON.parse((block.match(/^data: (.*)$/m) || [])[1] || "{}");
        if (name === "answer") { text += data.text; answer.textContent = text; }
        if (name === "citations") { citations = data.citations; renderCitations(citations); }
        if (name === "verification") {
          $("verdict").textContent = data.verdict;
        }
        if (name === "error") { answer.textContent = data.message; }
      }
    }
    renderAnswer(text, citations);
  } catch (e) {
    answer.textContent = e.message;
  }
}

function renderCitations(citations) {
  const list = $("citations");
  list.replaceChildren();
  for (const c of citations) {
    const item = el("li");
    const open = el("button", c.path + ":" + c.lines[0] + "-" + c.lines[1], { type: "button" });
    open.addEventListener("click", () => openLines(c.path, c.lines));
    item.append(open);
    list.append(item);
  }
}

// -- files --------------------------------------------------------------------------------

async function loadTree() {
  const tree = $("tree");
  try {
    const data = await getJSON("/v1/files?path=/&recursive=true");
    tree.replaceChildren(...data.entries.map((entry) => {
      const item = el("li");
      if (entry.kind === "file") {
        const open = el("button", entry.path, { type: "button" });
        open.addEventListener("click", async () => {
          try {
            const doc = await getJSON("/v1/files/read?" + new URLSearchParams({ path: entry.path, limit: "400" }));
            showDocument(entry.path, doc.content);
          } catch (e) { showDocument(entry.path, "(" + e.message + ")"); }
        });
        item.append(open);
      } else {
        item.textContent = entry.path + "/";
      }
      return item;
    }));
  } catch (e) {
    tree.replaceChildren(el("li", e.message, { class: "error" }));
  }
}

async function search(query) {
  const hits = $("hits");
  try {
    const data = await getJSON("/v1/search?" + new URLSearchParams({ query, k: "10" }));
    if (data.hits.length === 0) { hits.replaceChildren(el("li", "No results.")); return; }
    hits.replaceChildren(...data.hits.map((hit) => {
      const item = el("li");
      const open = el("button", hit.path + ":" + hit.lines[0] + "-" + hit.lines[1], { type: "button" });
      open.addEventListener("click", () => openLines(hit.path, hit.lines));
      item.append(open, el("p", hit.snippet));
      return item;
    }));
  } catch (e) {
    hits.replaceChildren(el("li", e.message, { class: "error" }));
  }
}

async function upload(form) {
  const status = $("upload-status");
  status.textContent = "Uploading…";
  try {
    const data = await (await api("/v1/ingest", { method: "POST", body: new FormData(form) })).json();
    status.textContent = "Uploaded " + data.files.map((f) => f.path).join(", ") + (data.indexed ? " and indexed." : ".");
    form.reset();
    loadTree();
  } catch (e) {
    status.textContent = "Upload refused: " + e.message;
  }
}

// -- index and audit ----------------------------------------------------------------------

async function loadIndex() {
  try {
    const data = await getJSON("/v1/index/status");
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

async function repair() {
  try { await postJSON("/v1/index/repair", { rebuild: true }); } catch (e) { $("index-result").textContent = e.message; }
  loadIndex();
}

async function loadAudit() {
  const body = document.querySelector("#audit-table tbody");
  try {
    const data = await getJSON("/v1/audit?limit=200");
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

// -- wiring -------------------------------------------------------------------------------

document.addEventListener("DOMContentLoaded", () => {
  loadDemoUsers();
  loadSignInMethods();
  resumeSession();
  $("account-form").addEventListener("submit", async (event) => {
    event.preventDefault();
    try {
      await postJSON("/v1/auth/login", { user: $("account-user").value, password: $("account-password").value });
      session = true;
      await signIn(null);
    } catch (e) { $("signin-error").textContent = e.message; }
    $("account-password").value = "";
  });
  $("demo-form").addEventListener("submit", async (event) => {
    event.preventDefault();
    try {
      const data = await postJSON("/v1/auth/demo", { user: $("demo-user").value });
      await signIn(data.token);
    } catch (e) { $("signin-error").textContent = e.message; }
  });
  $("token-form").addEventListener("submit", (event) => {
    event.preventDefault();
    signIn($("token").value.trim());
    $("token").value = "";
  });
  $("signout").addEventListener("click", signOut);
  for (const button of document.querySelectorAll("nav button")) {
    button.addEventListener("click", () => showTab(button.dataset.tab));
  }
  $("ask-form").addEventListener("submit", (event) => { event.preventDefault(); ask($("question").value); });
  $("search-form").addEventListener("submit", (event) => { event.preventDefault(); search($("search").value); });
  $("upload-form").addEventListener("submit", (event) => { event.preventDefault(); upload(event.target); });
  $("repair").addEventListener("click", repair);
  $("audit-refresh").addEventListener("click", loadAudit);
  $("viewer-close").addEventListener("click", () => { $("viewer").hidden = true; });
});
