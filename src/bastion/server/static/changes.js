// Changes: the change journal for review (docs/changes.md). The list of changes the viewer may
// see (the server decides: a change to a file the viewer may not read is never listed, and its
// diff or undo answers as a missing change), narrowed by thread, principal and time; the
// unified diff of one change, shown as text; undo of one change and revert of a thread, each
// after a confirmation; a conflict ("the file changed since") is said as such, and nothing is
// undone then. Below, "Overlays": the review of overlay mounts' layers (overlays.js).
// Contract: see app.js.
import { mountOverlays } from "./overlays.js";

const PAGE = 1000; // the change list's largest page
const SHOWN = 200; // the newest changes shown

const when = (at) => new Date(at * 1000).toISOString().replace("T", " ").slice(0, 19) + " UTC";

export function mount(section, ctx) {
  const { el } = ctx;
  const $ = (id) => section.querySelector("#" + id);
  let loaded = false;
  const overlays = mountOverlays(section, ctx);

  function filters() {
    const q = new URLSearchParams();
    const thread = $("changes-thread").value.trim();
    if (thread) q.set("thread", thread);
    const since = $("changes-since").value;
    if (since) q.set("since", String(Date.parse(since + "Z") / 1000));
    const principal = $("changes-principal").value.trim();
    if (principal) q.set("principal", principal); // the operation's own filter, not the page's
    return { q, thread };
  }

  // Every page of the list (oldest first), then the newest SHOWN, newest first.
  async function fetchAll(q) {
    let found = [];
    let after = null;
    for (;;) {
      const page = new URLSearchParams(q);
      page.set("limit", String(PAGE));
      if (after !== null) page.set("after", String(after));
      const data = await ctx.getJSON("/v1/changes?" + page.toString());
      found = found.concat(data.changes);
      if (data.changes.length < PAGE) break;
      after = data.changes[data.changes.length - 1].id;
    }
    return found;
  }

  function say(text, kind = "") {
    const status = $("changes-status");
    status.textContent = text;
    status.className = kind;
  }

  async function load() {
    const { q, thread } = filters();
    say("Loading changes…");
    let changes;
    try {
      changes = await fetchAll(q);
    } catch (e) {
      $("changes-list").replaceChildren();
      $("changes-revert").hidden = true;
      say(e.code === "configuration"
        ? "This workspace keeps no change journal." : "The changes could not be listed: " + e.message, "error");
      return;
    }
    const newest = changes.slice(-SHOWN).reverse();
    const threads = [...new Set(changes.map((c) => c.thread).filter(Boolean))].sort();
    $("changes-threads").replaceChildren(...threads.map((t) => el("option", null, { value: t })));
    $("changes-list").replaceChildren(...newest.map(item));
    $("changes-revert").hidden = !thread || !changes.length;
    $("changes-revert").dataset.thread = thread;
    say(changes.length === 0 ? "No changes." : changes.length + (changes.length === 1 ? " change" : " changes")
      + (changes.length > SHOWN ? "; the newest " + SHOWN + " shown" : "") + ".");
    loaded = true;
  }

  function item(change) {
    const li = el("li", null, { class: "change", "data-change": String(change.id) });
    const head = el("div", null, { class: "change-head" });
    head.append(
      el("strong", "#" + change.id + " " + change.op),
      el("span", " " + change.entries.map((e) => e.path).join(", "), { class: "change-paths" }),
    );
    const meta = el("p", "by " + change.principal + (change.thread ? " in thread " + change.thread : "")
      + ", " + when(change.at), { class: "muted" });
    const diff = el("pre", null, { class: "diff", hidden: "", tabindex: "0", "aria-label": "Diff of change " + change.id });
    const show = el("button", "Show diff", { type: "button", class: "secondary", "aria-expanded": "false" });
    show.addEventListener("click", () => toggleDiff(change.id, diff, show));
    const undo = el("button", "Undo…", { type: "button", class: "danger" });
    undo.addEventListener("click", () => undoOne(change));
    const actions = el("div", null, { class: "actions" });
    actions.append(show, undo);
    li.append(head, meta, actions, diff);
    return li;
  }

  async function toggleDiff(id, box, button) {
    if (!box.hidden) {
      box.hidden = true;
      button.setAttribute("aria-expanded", "false");
      button.textContent = "Show diff";
      return;
    }
    try {
      const data = await ctx.getJSON("/v1/changes/diff?change=" + encodeURIComponent(id));
      box.replaceChildren(...lines(data.diff || "(nothing to show)\n"));
    } catch (e) {
      box.replaceChildren(document.createTextNode(e.status === 404 ? "This change is not there (any more)." : e.message));
    }
    box.hidden = false;
    button.setAttribute("aria-expanded", "true");
    button.textContent = "Hide diff";
  }

  // One span per line, as text, marked added or removed for the colours.
  function lines(text) {
    return text.split(/(?<=\n)/).map((line) => {
      const kind = line.startsWith("+++") || line.startsWith("---") ? "file"
        : line.startsWith("+") ? "add" : line.startsWith("-") ? "del" : line.startsWith("@@") ? "hunk" : "";
      return el("span", line, kind ? { class: kind } : {});
    });
  }

  function done(result, what) {
    const parts = [];
    if (result.restored.length) parts.push("restored " + result.restored.join(", "));
    if (result.removed.length) parts.push("removed " + result.removed.join(", "));
    const text = what + (parts.length ? ": " + parts.join("; ") : "") + ".";
    ctx.toast(text);
    return text;
  }

  function failed(e) {
    if (e.code === "conflict") {
      const text = "The file changed since; nothing was undone. " + e.message;
      say(text, "error");
      ctx.toast(text, "error");
    } else if (e.status === 404) {
      say("That change is not there (any more); nothing was undone.", "error");
      ctx.toast("That change is not there (any more).", "error");
    } else {
      say("Nothing was undone: " + e.message, "error");
      ctx.toast(e.message, "error");
    }
  }

  async function undoOne(change) {
    const paths = change.entries.map((e) => e.path).join(", ");
    if (!await ctx.confirm("Undo change #" + change.id + "?",
      "Put back what " + paths + " held before this " + change.op + ". Nothing is undone if a file changed since.", "Undo")) return;
    let text;
    try {
      text = done(await ctx.postJSON("/v1/changes/undo", { change: change.id }), "Undid change #" + change.id);
    } catch (e) {
      failed(e);
      return;
    }
    await load();
    say(text);
  }

  async function revertThread() {
    const thread = $("changes-revert").dataset.thread;
    if (!thread) return;
    if (!await ctx.confirm("Revert thread " + thread + "?",
      "Take back every change of thread " + thread + " you may see, newest first: all of them or, if a file changed since, none.",
      "Revert thread")) return;
    let result;
    try {
      result = await ctx.postJSON("/v1/changes/revert", { thread });
    } catch (e) {
      failed(e);
      return;
    }
    await load();
    say(done(result, "Reverted thread " + thread + " (" + result.changes.length + " changes)"));
  }

  $("changes-form").addEventListener("submit", (event) => {
    event.preventDefault();
    load();
  });
  $("changes-revert").addEventListener("click", revertThread);

  return {
    show() {
      overlays.show();
      if (!loaded) load();
    },
    reset() {
      loaded = false;
      overlays.reset();
      $("changes-threads").replaceChildren();
      $("changes-form").reset();
      $("changes-list").replaceChildren();
      $("changes-revert").hidden = true;
      say("");
    },
  };
}
