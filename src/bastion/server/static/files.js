// Files: a folder tree with breadcrumbs; a folder's entries, upload (drag and drop, with
// progress), new file and folder; a document's preview (Markdown rendered as text nodes, PDF
// and Word as the text search indexes), its labels, edit with a version check, download,
// rename or move, delete. Every call is one of the API's declared operations, for the
// signed-in principal: what it may not see is absent, and a path to it is "not found".
// Contract: see app.js.

import { renderMarkdown } from "./markdown.js";
import { Tree } from "./tree.js";

const PREVIEW_LINES = 2000;
const DOCUMENTS = /\.(pdf|docx)$/i;
const MARKDOWN = /\.(md|markdown)$/i;
const SIDECAR = ".labels.yaml";

const parentOf = (path) => path.slice(0, path.lastIndexOf("/")) || "/";
const nameOf = (path) => path.slice(path.lastIndexOf("/") + 1);
const join = (folder, name) => (folder === "/" ? "" : folder) + "/" + name;

function size(n) {
  if (n < 1024) return n + " B";
  if (n < 1024 * 1024) return (n / 1024).toFixed(1) + " KiB";
  return (n / 1024 / 1024).toFixed(1) + " MiB";
}

export function mount(section, ctx) {
  const { el } = ctx;
  const pane = section.querySelector("#pane");
  const crumbs = section.querySelector("#crumbs ol");
  const tree = new Tree(section.querySelector("#tree"), ctx, (path) => ctx.go("files", ctx.encodePath(path)));
  let shownPath = null;
  let treeLoaded = false;
  let dropInto = null; // what a drop on the pane does: an upload into the folder shown

  for (const name of ["dragenter", "dragover"]) {
    pane.addEventListener(name, (e) => { if (dropInto) { e.preventDefault(); pane.classList.add("dragging"); } });
  }
  pane.addEventListener("dragleave", () => pane.classList.remove("dragging"));
  pane.addEventListener("drop", (e) => {
    pane.classList.remove("dragging");
    if (!dropInto) return;
    e.preventDefault();
    if (e.dataTransfer.files.length) dropInto(e.dataTransfer.files);
  });

  const writable = (path) => (ctx.me()?.writable || []).some((p) => path === p || path.startsWith(p + "/"));
  const stat = (path) => ctx.getJSON("/v1/files/stat?" + new URLSearchParams({ path }));
  const button = (label, action, attrs = {}) => {
    const b = el("button", label, Object.assign({ type: "button" }, attrs));
    b.addEventListener("click", action);
    return b;
  };
  const fail = (e) => ctx.toast(e.message, "error");

  function renderCrumbs(path) {
    const parts = path.split("/").filter(Boolean);
    const items = [["/", "All files"]];
    parts.forEach((p, n) => items.push(["/" + parts.slice(0, n + 1).join("/"), p]));
    crumbs.replaceChildren(...items.map(([target, label], n) => {
      const li = el("li");
      const last = n === items.length - 1;
      li.append(el("a", label, Object.assign({ href: "#/files" + ctx.encodePath(target) }, last ? { "aria-current": "page" } : {})));
      return li;
    }));
  }

  async function show(route) {
    const [raw, query] = route.split("?");
    let path;
    try {
      path = "/" + raw.split("/").filter(Boolean).map(decodeURIComponent).join("/");
    } catch (e) {
      path = "/";
    }
    const lines = (new URLSearchParams(query || "").get("lines") || "").match(/^(\d+)-(\d+)$/);
    shownPath = path;
    renderCrumbs(path);
    if (!treeLoaded) { treeLoaded = true; await tree.reload(path); } else tree.select(path);
    if (path === "/") return showFolder("/");
    let info;
    try {
      info = await stat(path);
    } catch (e) {
      if (shownPath !== path) return;
      const title = e.status === 404 ? "Not found" : "Cannot open " + path;
      pane.replaceChildren(el("h3", title, { id: "viewer-path" }), el("p", e.message, { class: "error" }));
      return;
    }
    if (shownPath !== path) return;
    if (info.kind === "directory") {
      if (!tree.item(path)) await tree.reload(path);
      return showFolder(path);
    }
    if (!tree.item(path)) await tree.reload(parentOf(path));
    tree.select(path);
    return lines ? showLines(info, Number(lines[1]), Number(lines[2])) : showFile(info);
  }

  async function refresh(path) {
    await tree.reload(path);
    ctx.go("files", ctx.encodePath(path));
  }

  // -- a folder ---------------------------------------------------------------------------

  async function showFolder(path) {
    dropInto = null;
    const heading = el("h3", path === "/" ? "All files" : path, { id: "viewer-path" });
    const actions = el("div", null, { class: "actions" });
    const status = el("p", "", { id: "upload-status", role: "status" });
    const progress = el("progress", null, { max: "1", value: "0", hidden: "", "aria-label": "Upload progress" });
    const listing = el("div", null, { id: "listing" });
    pane.replaceChildren(heading, actions, status, progress, listing);
    if (path !== "/" && writable(path)) {
      actions.append(button("New file", () => newFile(path)), button("New folder", () => newFolder(path)));
    }
    // Uploads at the top go to the first writable folder, as the server writes only there.
    const target = () => (path === "/" ? ctx.me().writable[0] : path);
    if (writable(path) || (path === "/" && ctx.me()?.writable.length)) {
      const input = el("input", null, { type: "file", multiple: "", id: "upload-file", class: "visually-hidden", tabindex: "-1", "aria-label": "Files to upload" });
      const overwrite = el("input", null, { type: "checkbox", id: "upload-overwrite" });
      const choose = button("Upload files…", () => input.click(), { id: "upload-button" });
      input.addEventListener("change", () => { if (input.files.length) upload(target(), input.files, overwrite.checked, status, progress); input.value = ""; });
      const replace = el("label", null, { class: "inline", for: "upload-overwrite" });
      replace.append(overwrite, document.createTextNode(" Replace existing files"));
      actions.append(choose, input, replace);
      const drop = el("p", "…or drop files here to upload them into " + target() + ".", { class: "dropzone" });
      pane.insertBefore(drop, status);
      dropInto = (list) => upload(target(), list, overwrite.checked, status, progress);
    }
    if (path !== "/" && writable(path)) actions.append(...itemActions({ path, kind: "directory" }));
    await listEntries(path, listing);
  }

  async function listEntries(path, holder) {
    try {
      const data = await ctx.getJSON("/v1/files?" + new URLSearchParams({ path }));
      if (!data.entries.length) { holder.replaceChildren(el("p", "This folder is empty.", { class: "muted" })); return; }
      const table = el("table", null, { class: "listing" });
      const head = el("tr");
      head.append(el("th", "Name", { scope: "col" }), el("th", "Size", { scope: "col" }), el("th", "Modified", { scope: "col" }));
      const thead = el("thead");
      thead.append(head);
      const body = el("tbody");
      for (const e of data.entries.sort((a, b) => (a.kind === b.kind ? (a.path < b.path ? -1 : 1) : a.kind === "directory" ? -1 : 1))) {
        const row = el("tr");
        const name = el("td");
        name.append(el("a", nameOf(e.path) + (e.kind === "directory" ? "/" : ""), { href: "#/files" + ctx.encodePath(e.path) }));
        row.append(name, el("td", e.kind === "directory" ? "" : size(e.size)), el("td", new Date(e.mtime * 1000).toLocaleString()));
        body.append(row);
      }
      table.append(thead, body);
      holder.replaceChildren(table);
    } catch (e) {
      holder.replaceChildren(el("p", e.message, { class: "error" }));
    }
  }

  function upload(folder, list, overwrite, status, progress) {
    const form = new FormData();
    form.append("path", folder);
    if (overwrite) form.append("overwrite", "true");
    for (const file of list) form.append("file", file);
    const xhr = new XMLHttpRequest();
    xhr.open("POST", "/v1/ingest");
    for (const [k, v] of Object.entries(ctx.authHeaders())) xhr.setRequestHeader(k, v);
    progress.hidden = false;
    progress.value = 0;
    status.textContent = "Uploading " + list.length + " file(s)…";
    xhr.upload.addEventListener("progress", (e) => { if (e.lengthComputable) progress.value = e.loaded / e.total; });
    xhr.addEventListener("load", () => {
      progress.hidden = true;
      progress.value = xhr.status === 201 ? 1 : progress.value;
      let data = {};
      try { data = JSON.parse(xhr.responseText); } catch (e) { /* not JSON */ }
      if (xhr.status === 201) {
        status.textContent = "Uploaded " + data.files.map((f) => f.path).join(", ") + (data.indexed ? " and indexed." : ".");
        tree.reload(folder);
        const listing = pane.querySelector("#listing");
        if (listing && shownPath === folder) listEntries(folder, listing);
      } else {
        status.textContent = "Upload refused: " + ((data.error && data.error.message) || xhr.status + " " + xhr.statusText);
      }
    });
    xhr.addEventListener("error", () => { progress.hidden = true; status.textContent = "Upload failed: the server could not be reached."; });
    xhr.send(form);
  }

  async function newFile(folder) {
    const name = await ctx.prompt("New file", "Name of the new file in " + folder);
    if (!name) return;
    try {
      const info = await ctx.postJSON("/v1/files/write", { path: join(folder, name), content: "", mode: "create" });
      await tree.reload(info.path);
      ctx.go("files", ctx.encodePath(info.path) + "?edit=1");
    } catch (e) { fail(e); }
  }

  async function newFolder(folder) {
    const name = await ctx.prompt("New folder", "Name of the new folder in " + folder);
    if (!name) return;
    try {
      const made = await ctx.postJSON("/v1/files/mkdir", { path: join(folder, name), parents: false, exist_ok: false });
      await refresh(made.path);
    } catch (e) { fail(e); }
  }

  // -- a document -------------------------------------------------------------------------

  function itemActions(info) {
    const out = [];
    const mountRoot = (ctx.me()?.mounts || []).some((m) => m.prefix === info.path);
    if (writable(info.path) && !mountRoot) {
      out.push(button("Rename or move", () => move(info)));
      out.push(button("Delete", () => remove(info), { class: "danger" }));
    }
    return out;
  }

  async function showLines(info, start, end) {
    const title = el("h3", info.path + ":" + start + "-" + end, { id: "viewer-path" });
    const text = el("pre", "", { id: "viewer-text", tabindex: "0" });
    const whole = el("a", "Show the whole document", { href: "#/files" + ctx.encodePath(info.path) });
    pane.replaceChildren(title, text, whole);
    try {
      const q = new URLSearchParams({ path: info.path, offset: String(start - 1), limit: String(end - start + 1) });
      text.textContent = (await ctx.getJSON("/v1/files/read?" + q)).content;
    } catch (e) { text.textContent = "(" + e.message + ")"; }
    text.focus();
  }

  function labelsLine(labels) {
    const box = el("dl", null, { class: "labels", id: "labels" });
    if (!labels) { box.append(el("dt", "Labels"), el("dd", "the mount's defaults")); return box; }
    const pairs = [
      ["Classification", labels.classification],
      ["Readers", labels.roles.length ? labels.roles.join(", ") : "every role"],
      ["Tags", labels.tags.length ? labels.tags.join(", ") : "none"],
    ];
    if (labels.tenant) pairs.push(["Tenant", labels.tenant]);
    for (const [k, v] of pairs) box.append(el("dt", k), el("dd", v));
    return box;
  }

  async function showFile(info) {
    const editing = location.hash.includes("?edit=1");
    const title = el("h3", info.path, { id: "viewer-path" });
    const meta = el("p", size(info.size) + " · modified " + new Date(info.mtime * 1000).toLocaleString(), { class: "muted" });
    const actions = el("div", null, { class: "actions" });
    const body = el("div", null, { id: "viewer-text", class: "document", tabindex: "0" });
    pane.replaceChildren(title, meta, labelsLine(info.labels), actions, body);
    const isDocument = DOCUMENTS.test(info.path);
    if (writable(info.path) && !isDocument) actions.append(button("Edit", () => edit(info)));
    actions.append(button("Download", () => download(info.path)));
    if (writable(info.path) && !info.path.endsWith(SIDECAR)) actions.append(button("Labels…", () => editLabels(info)));
    actions.append(...itemActions(info));
    let text;
    try {
      const q = { path: info.path, limit: String(PREVIEW_LINES) };
      if (isDocument) q.format = "document";
      text = (await ctx.getJSON("/v1/files/read?" + new URLSearchParams(q))).content;
    } catch (e) {
      body.replaceChildren(el("p", e.message, { class: "error" }));
      return;
    }
    if (shownPath !== info.path) return;
    if (MARKDOWN.test(info.path)) {
      let front = null;
      body.replaceChildren(renderMarkdown(text, (block) => { front = block; }));
      if (front !== null) {
        const details = el("details", null, { class: "front-matter" });
        details.append(el("summary", "Front matter"), el("pre", front));
        body.prepend(details);
      }
    } else {
      body.replaceChildren(el("pre", text));
    }
    if (text.split("\n").length > PREVIEW_LINES) body.append(el("p", "Shown: the first " + PREVIEW_LINES + " lines. Download the file for all of it.", { class: "muted" }));
    if (editing && writable(info.path)) edit(info);
  }

  async function edit(info) {
    let fresh;
    let content;
    try {
      fresh = await stat(info.path); // the version first: a change after it is a conflict, never lost
      content = (await ctx.getJSON("/v1/files/read?" + new URLSearchParams({ path: info.path }))).content;
    } catch (e) { fail(e); return; }
    const area = el("textarea", null, { id: "editor", rows: "20", spellcheck: "false" });
    area.value = content;
    const label = el("label", "Content of " + info.path, { for: "editor" });
    const save = button("Save", async () => {
      try {
        await ctx.postJSON("/v1/files/write", { path: info.path, content: area.value, mode: "overwrite", if_version: fresh.version });
        ctx.toast("Saved " + info.path + ".");
        history.replaceState(null, "", "#/files" + ctx.encodePath(info.path));
        showFile(await stat(info.path));
      } catch (e) {
        if (e.status !== 409) { fail(e); return; }
        const { value } = await ctx.dialog("The file changed", [el("p", info.path + " was changed since you opened it (" + e.message + "). Reload it to see the new content (your changes are lost), or keep editing and copy your text first.")],
          [["Keep editing", "cancel"], ["Reload", "reload", true]]);
        if (value === "reload") showFile(await stat(info.path));
      }
    }, { id: "save" });
    const cancel = button("Cancel", () => showFile(info), { class: "secondary" });
    const body = pane.querySelector("#viewer-text");
    body.replaceChildren(label, area, el("div", null, { class: "actions" }));
    body.lastChild.append(save, cancel);
    area.focus();
  }

  async function download(path) {
    try {
      const response = await ctx.api("/v1/files/read?" + new URLSearchParams({ path, format: "bytes" }));
      const url = URL.createObjectURL(await response.blob());
      const a = el("a", null, { href: url, download: nameOf(path) });
      document.body.append(a);
      a.click();
      a.remove();
      setTimeout(() => URL.revokeObjectURL(url), 10_000);
    } catch (e) { fail(e); }
  }

  async function move(info) {
    const target = await ctx.prompt("Rename or move", "New path of " + info.path, info.path);
    if (!target || target === info.path) return;
    try {
      const moved = await ctx.postJSON("/v1/files/move", { src: info.path, dst: target });
      ctx.toast("Moved " + info.path + " to " + moved.path + ".");
      await refresh(moved.path);
    } catch (e) { fail(e); }
  }

  async function remove(info) {
    const what = info.kind === "directory" ? "the folder " + info.path + " and everything in it" : info.path;
    if (!(await ctx.confirm("Delete", "Delete " + what + "? This cannot be undone.", "Delete"))) return;
    try {
      await ctx.postJSON("/v1/files/delete", { path: info.path, recursive: info.kind === "directory" });
      ctx.toast("Deleted " + info.path + ".");
      await refresh(parentOf(info.path));
    } catch (e) { fail(e); }
  }

  // Labels live in the document's sidecar, <name>.labels.yaml, written with the write
  // operation: the workspace decides (only tighter labels without the `label` action).
  async function editLabels(info) {
    const labels = info.labels || { classification: "", roles: [], tags: [] };
    const field = (id, text, value) => {
      const input = el("input", null, { id, name: id, maxlength: "512" });
      input.value = value;
      return [el("label", text, { for: id }), input];
    };
    const body = [
      el("p", "Saved in " + nameOf(info.path) + SIDECAR + ". Without the label permission, labels can only be made stricter.", { class: "muted" }),
      ...field("label-class", "Classification", labels.classification),
      ...field("label-roles", "Roles that may read (comma-separated; empty: every role)", labels.roles.join(", ")),
      ...field("label-tags", "Tags (comma-separated)", labels.tags.join(", ")),
    ];
    const { value, form } = await ctx.dialog("Labels of " + nameOf(info.path), body, [["Cancel", "cancel"], ["Save labels", "ok", true]]);
    if (value !== "ok") return;
    const list = (id) => form.querySelector("#" + id).value.split(",").map((s) => s.trim()).filter(Boolean);
    const yaml = [
      "classification: " + JSON.stringify(form.querySelector("#label-class").value.trim() || "public"),
      "roles: " + JSON.stringify(list("label-roles")),
      "tags: " + JSON.stringify(list("label-tags")),
    ].join("\n") + "\n";
    try {
      await ctx.postJSON("/v1/files/write", { path: info.path + SIDECAR, content: yaml, mode: "overwrite" });
      ctx.toast("Labels of " + info.path + " saved.");
      await refresh(info.path);
    } catch (e) { fail(e); }
  }

  return {
    show,
    reset() { treeLoaded = false; shownPath = null; pane.replaceChildren(); section.querySelector("#tree").replaceChildren(); crumbs.replaceChildren(); },
  };
}
