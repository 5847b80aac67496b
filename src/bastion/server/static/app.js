// Bastion's web page, the shell: sign-in state, tabs and routing, the fetch helper, dialogs and
// toasts. Plain ES modules served by the package, no build step. Every request carries the
// bearer token held in memory only (a reload signs out), or the account's session cookie
// (HttpOnly: no script sees it); everything shown is set as text, never HTML.
//
// The contract with the tab modules (chat.js, files.js, search.js, admin.js, signin.js):
//   each exports `mount(section, ctx)`, called once when the page loads with its own
//   <section> (signin.js: #signin); it may return { show(route), reset(), available(me) }:
//     show(route)   the tab is opened; `route` is what follows "#/<tab>" in the address
//                   (e.g. "/larkspur/hr" for "#/files/larkspur/hr"; "?q=x" for "#/search?q=x")
//     reset()       the user signed out: forget everything shown
//     available(me) whether the tab is offered to this principal (default: yes)
//   ctx (the only thing a module gets from the shell; modules never import each other):
//     api(path, options)  fetch on the origin with the credentials; throws an Error with
//                         .status and .code and the server's one-line message when not ok
//     getJSON(path), postJSON(path, body), authHeaders()
//     el(tag, text, attrs)  an element whose text is set as text; encodePath(path) for addresses
//     me()                the signed-in principal (/v1/me) or null
//     go(tab, route)      open a tab (changes the address: back and forward work)
//     open(path, lines)   show a document in Files ([start, end] lines: that range)
//     toast(message, kind) a short notice ("error" for a failure), read out by screen readers
//     confirm(title, message, action) / prompt(title, label, value) / dialog(title, body, buttons)
//                         modal dialogs (focus stays inside, Esc cancels); promises
//     signedIn(token, viaSession)  the sign-in module's result; signOut()
// signin.js's mount may return { shown(message) }: the sign-in page is shown again after a
// sign-out, `message` saying why when the server ended the session (a 401 mid-session).
//
// Loading: the sign-in page needs only this module and signin.js; the tab modules are
// imported just after the page has loaded (or sooner, by a sign-in or a resumed session, which
// wait for them). performance.mark("bastion-ready") marks the shell started.
import * as signin from "./signin.js";

// [name, label, module]: a tab is one line here and one <section id="name"> in index.html.
const TABS = [
  ["chat", "Chat", () => import("./chat.js")],
  ["files", "Files", () => import("./files.js")],
  ["search", "Search", () => import("./search.js")],
  ["changes", "Changes", () => import("./changes.js")],
  ["admin", "Administration", () => import("./admin.js")],
];

const EXPIRED = "Your session has ended (it expired or was signed out elsewhere). Sign in again to go on.";

const $ = (id) => document.getElementById(id);
let token = null;
let session = false;
let me = null;
const mounted = new Map();
let signinPage = {};
let tabsReady = null; // the promise of every tab module loaded and mounted

// The tab modules, imported and mounted once; a failure (the server went away) is the
// sign-in's error, and the next sign-in tries again.
function loadTabs() {
  if (!tabsReady) {
    tabsReady = Promise.all(TABS.filter(([name]) => !mounted.has(name)).map(([name, , load]) =>
      load().then((module) => { if (!mounted.has(name)) mounted.set(name, module.mount($(name), ctx) || {}); })));
    tabsReady.catch(() => { tabsReady = null; });
  }
  return tabsReady;
}

function el(tag, text, attrs = {}) {
  const node = document.createElement(tag);
  if (text !== undefined && text !== null) node.textContent = text;
  for (const [k, v] of Object.entries(attrs)) node.setAttribute(k, v);
  return node;
}

function authHeaders() {
  return token ? { Authorization: "Bearer " + token } : {};
}

// A 401 once signed in: the token or session expired or was revoked; back to the sign-in
// page, saying why (the caller still gets the error).
async function api(path, options = {}) {
  const headers = Object.assign({}, options.headers || {}, authHeaders());
  const response = await fetch(path, Object.assign({}, options, { headers }));
  if (response.status === 401 && me) signOut(EXPIRED);
  if (!response.ok) {
    let message = response.status + " " + response.statusText;
    let code = "";
    try {
      const body = (await response.json()).error;
      message = body.message;
      code = body.code;
    } catch (e) { /* not JSON */ }
    const error = new Error(message);
    error.status = response.status;
    error.code = code;
    throw error;
  }
  return response;
}

const getJSON = async (path) => (await api(path)).json();
const postJSON = async (path, body) => (await api(path, {
  method: "POST", headers: { "Content-Type": "application/json" }, body: JSON.stringify(body),
})).json();

// -- toasts and dialogs -------------------------------------------------------------------

function toast(message, kind = "info") {
  const box = $("toasts");
  const note = el("p", message, { class: "toast " + kind });
  box.append(note);
  setTimeout(() => note.remove(), kind === "error" ? 8000 : 4000);
}

// A modal <dialog>: the rest of the page is inert while it is open (focus cannot leave it),
// Esc cancels, and focus returns where it was. `buttons`: [[label, value, primary?]].
function dialog(title, body, buttons) {
  return new Promise((resolve) => {
    const before = document.activeElement;
    const box = el("dialog", null, { "aria-labelledby": "dialog-title" });
    const form = el("form", null, { method: "dialog" });
    const row = el("div", null, { class: "actions" });
    for (const [label, value, primary] of buttons) {
      // Only the primary button submits (Enter in a field means it); the others just close.
      const b = el("button", label, { value, type: primary ? "submit" : "button", class: primary ? "" : "secondary" });
      if (!primary) b.addEventListener("click", () => box.close(value));
      row.append(b);
    }
    form.append(el("h2", title, { id: "dialog-title" }), ...[].concat(body), row);
    box.append(form);
    document.body.append(box);
    box.addEventListener("close", () => {
      const value = box.returnValue || "cancel";
      box.remove();
      if (before && before.focus) before.focus();
      resolve({ value, form });
    });
    box.showModal();
    const first = form.querySelector("input, textarea, select");
    (first || row.lastElementChild || row.firstElementChild).focus();
  });
}

async function confirm(title, message, action) {
  const { value } = await dialog(title, [el("p", message)], [["Cancel", "cancel"], [action, "ok", true]]);
  return value === "ok";
}

async function prompt(title, label, value = "") {
  const input = el("input", null, { id: "dialog-input", name: "value", required: "", maxlength: "1024" });
  input.value = value;
  const answer = await dialog(title, [el("label", label, { for: "dialog-input" }), input],
    [["Cancel", "cancel"], ["OK", "ok", true]]);
  return answer.value === "ok" ? input.value.trim() : null;
}

// -- routing and tabs ---------------------------------------------------------------------

function route() {
  const hash = location.hash.replace(/^#\/?/, "");
  const cut = hash.search(/[/?]/);
  const name = cut < 0 ? hash : hash.slice(0, cut);
  return { name, rest: cut < 0 ? "" : hash.slice(cut) };
}

// Open a tab now; the address follows (pushState fires no hashchange; Back and links do).
function go(name, rest = "") {
  const target = "#/" + name + rest;
  if (location.hash !== target) history.pushState(null, "", target);
  showTab(name, rest);
}

function offered(name) {
  const tab = mounted.get(name);
  return Boolean(tab) && (!tab.available || tab.available(me));
}

function showTab(name, rest) {
  if (!me) return;
  if (!offered(name)) { name = "chat"; rest = ""; }
  for (const button of document.querySelectorAll("#tabs [role=tab]")) {
    const on = button.dataset.tab === name;
    button.setAttribute("aria-selected", String(on));
    button.tabIndex = on ? 0 : -1;
  }
  for (const [tab] of TABS) $(tab).hidden = tab !== name;
  const shown = mounted.get(name);
  if (shown && shown.show) shown.show(rest);
}

function tabKeys(event) {
  const buttons = [...document.querySelectorAll("#tabs [role=tab]")].filter((b) => !b.hidden);
  const at = buttons.indexOf(document.activeElement);
  if (at < 0) return;
  const next = { ArrowRight: at + 1, ArrowLeft: at - 1, Home: 0, End: buttons.length - 1 }[event.key];
  if (next === undefined) return;
  event.preventDefault();
  const button = buttons[(next + buttons.length) % buttons.length];
  button.focus();
  go(button.dataset.tab);
}

// -- signing in and out -------------------------------------------------------------------

async function signedIn(newToken, viaSession = false) {
  token = newToken;
  session = viaSession;
  let who;
  try {
    [who] = await Promise.all([getJSON("/v1/me"), loadTabs()]);
  } catch (e) {
    token = null;
    session = false;
    throw e;
  }
  me = who;
  const roles = me.roles.length ? me.roles.join(", ") : "none";
  $("whoami").replaceChildren(
    document.createTextNode("Signed in as "), el("strong", me.id),
    document.createTextNode(" · tenant " + me.tenant + " · roles " + roles + " · clearance " + me.clearance),
  );
  $("signin").hidden = true;
  $("app").hidden = false;
  $("signout").hidden = false;
  for (const button of document.querySelectorAll("#tabs [role=tab]")) button.hidden = !offered(button.dataset.tab);
  const { name, rest } = route();
  if (name && offered(name)) showTab(name, rest);
  else go("chat");
}

// `message`: why the session ended, when the server ended it (shown on the sign-in page).
function signOut(message = "") {
  if (session) fetch("/v1/auth/logout", { method: "POST" });
  token = null; me = null; session = false;
  $("app").hidden = true; $("signin").hidden = false; $("signout").hidden = true;
  $("whoami").replaceChildren();
  for (const tab of mounted.values()) if (tab.reset) tab.reset();
  history.replaceState(null, "", location.pathname);
  if (signinPage.shown) signinPage.shown(message);
}

async function resumeSession() {
  const response = await fetch("/v1/me");
  if (response.ok) await signedIn(null, true);
}

// -- wiring -------------------------------------------------------------------------------

const ctx = {
  api, getJSON, postJSON, authHeaders, el, toast, dialog, confirm, prompt, go, signedIn, signOut,
  me: () => me,
  encodePath,
  open: (path, lines) => go("files", encodePath(path) + (lines ? "?lines=" + lines[0] + "-" + lines[1] : "")),
};

function encodePath(path) {
  return path.split("/").map(encodeURIComponent).join("/");
}

function start() {
  const nav = $("tabs");
  for (const [name, label] of TABS) {
    const button = el("button", label, {
      type: "button", role: "tab", id: "tab-" + name, "data-tab": name, "aria-controls": name,
      "aria-selected": "false", tabindex: "-1",
    });
    button.addEventListener("click", () => go(name));
    nav.append(button);
    const section = $(name);
    section.setAttribute("role", "tabpanel");
    section.setAttribute("aria-labelledby", "tab-" + name);
  }
  // once the sign-in page has loaded (a session resumed or a sign-in asks for them sooner)
  const later = () => setTimeout(() => loadTabs().catch(() => {}), 0);
  if (document.readyState === "complete") later(); else window.addEventListener("load", later, { once: true });
  nav.addEventListener("keydown", tabKeys);
  signinPage = signin.mount($("signin"), ctx) || {};
  $("signout").addEventListener("click", () => signOut());
  window.addEventListener("hashchange", () => { const r = route(); showTab(r.name || "chat", r.rest); });
  performance.mark("bastion-ready");
  resumeSession();
}

start();
