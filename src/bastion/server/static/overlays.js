// Changes, "Overlays": the review of an overlay mount's layer (docs/changes.md, "Overlay
// mounts"), part of the Changes tab (changes.js mounts it; not a tab of its own). The overlay
// mounts are those /v1/me flags; for the mount and thread chosen, the page shows exactly what
// /v1/overlay/changes answers (the server lists only the files the viewer may read), each
// file's diff from /v1/overlay/diff set as text, and apply or discard of the files ticked or
// of all, each after a confirmation, with what was applied, kept as a conflict or dropped.
// `thread` is sent only when one is typed (none: the layer kept outside any thread).

export function mountOverlays(section, ctx) {
  const { el } = ctx;
  const $ = (id) => section.querySelector("#" + id);
  let shownFor = null; // { prefix, thread } of the list on screen: what apply and discard act on
  let prefixes = [];

  function say(text, kind = "") {
    $("overlay-status").textContent = text;
    $("overlay-status").className = kind;
  }

  function where({ prefix, thread }) {
    return prefix + (thread ? " (thread " + thread + ")" : " (outside any thread)");
  }

  function body(paths) {
    const sent = { prefix: shownFor.prefix };
    if (shownFor.thread) sent.thread = shownFor.thread;
    if (paths) sent.paths = paths;
    return sent;
  }

  function clear() {
    shownFor = null;
    $("overlay-list").replaceChildren();
    $("overlay-changes").hidden = true;
  }

  async function load() {
    const chosen = { prefix: $("overlay-mount").value, thread: $("overlay-thread").value.trim() };
    const q = new URLSearchParams({ prefix: chosen.prefix });
    if (chosen.thread) q.set("thread", chosen.thread);
    say("Loading the layer…");
    let data;
    try {
      data = await ctx.getJSON("/v1/overlay/changes?" + q.toString());
    } catch (e) {
      clear();
      say("The layer of " + where(chosen) + " could not be listed: " + e.message, "error");
      return;
    }
    shownFor = chosen;
    $("overlay-list").replaceChildren(...data.changes.map(item));
    $("overlay-changes").hidden = !data.changes.length;
    selection();
    const n = data.changes.length;
    say(n === 0 ? "No changes in the layer of " + where(chosen) + "."
      : n + (n === 1 ? " change" : " changes") + " in the layer of " + where(chosen) + ".");
  }

  function item(change, i) {
    const li = el("li", null, { class: "change", "data-path": change.path });
    const id = "overlay-pick-" + i;
    const pick = el("input", null, { type: "checkbox", id, value: change.path });
    pick.addEventListener("change", selection);
    const head = el("div", null, { class: "change-head" });
    const kind = change.action === "mkdir" ? "mkdir" : change.status;
    head.append(pick, el("label", change.path, { for: id }),
      el("span", " " + kind, { class: "overlay-kind" }));
    if (change.conflict) head.append(el("strong", " conflict: changed in the base since", { class: "conflict" }));
    const diff = el("pre", null, { class: "diff", hidden: "", tabindex: "0", "aria-label": "Diff of " + change.path });
    const show = el("button", "Show diff", { type: "button", class: "secondary", "aria-expanded": "false",
      "aria-label": "Show diff of " + change.path });
    show.addEventListener("click", () => toggleDiff(change.path, diff, show));
    head.append(show);
    li.append(head, diff);
    return li;
  }

  function picked() {
    return [...$("overlay-list").querySelectorAll("input[type=checkbox]:checked")].map((b) => b.value);
  }

  function selection() {
    const none = picked().length === 0;
    $("overlay-apply").disabled = none;
    $("overlay-discard").disabled = none;
  }

  async function toggleDiff(path, box, button) {
    const opening = box.hidden;
    box.hidden = !opening;
    button.setAttribute("aria-expanded", String(opening));
    button.textContent = opening ? "Hide diff" : "Show diff";
    button.setAttribute("aria-label", button.textContent + " of " + path);
    if (!opening) return;
    box.replaceChildren(document.createTextNode("Loading…"));
    try {
      const data = await ctx.postJSON("/v1/overlay/diff", body([path]));
      box.replaceChildren(...lines(data.diff || "(nothing to show)\n"));
    } catch (e) {
      box.replaceChildren(document.createTextNode(e.status === 404
        ? "This change is not there (any more)." : "The diff could not be shown: " + e.message));
    }
  }

  // One span per line, as text, marked added or removed for the colours.
  function lines(text) {
    return text.split(/(?<=\n)/).map((line) => {
      const kind = line.startsWith("+++") || line.startsWith("---") ? "file"
        : line.startsWith("+") ? "add" : line.startsWith("-") ? "del" : line.startsWith("@@") ? "hunk" : "";
      return el("span", line, kind ? { class: kind } : {});
    });
  }

  function outcome(result) {
    const parts = [];
    if (result.applied.length) parts.push("Applied " + result.applied.join(", ") + ".");
    if (result.conflicts.length) {
      parts.push("Kept in the layer as conflicts (changed in the base since): " + result.conflicts.join(", ") + ".");
    }
    if (result.discarded.length) parts.push("Dropped " + result.discarded.join(", ") + ".");
    return parts.length ? parts.join(" ") : "Nothing to do: no change you may see.";
  }

  async function act(verb, all) {
    if (!shownFor) return;
    const paths = all ? null : picked();
    if (paths && !paths.length) return;
    const what = all ? "every change you may see in the layer of " + where(shownFor)
      : paths.join(", ");
    const [title, message, label] = verb === "apply"
      ? [(all ? "Apply all" : "Apply " + paths.length + (paths.length === 1 ? " change" : " changes")) + "?",
        "Write " + what + " into the base of " + shownFor.prefix + ". A file changed in the base since is kept in the layer as a conflict.",
        "Apply"]
      : [(all ? "Discard all" : "Discard " + paths.length + (paths.length === 1 ? " change" : " changes")) + "?",
        "Drop " + what + " from the layer: the base shows through again. This cannot be undone.",
        "Discard"];
    if (!await ctx.confirm(title, message, label)) return;
    let result;
    try {
      result = await ctx.postJSON("/v1/overlay/" + verb, body(paths));
    } catch (e) {
      const text = (verb === "apply" ? "Nothing was applied: " : "Nothing was discarded: ")
        + (e.status === 404 ? "that change is not there (any more)." : e.message);
      $("overlay-result").textContent = text;
      $("overlay-result").className = "error";
      ctx.toast(text, "error");
      return;
    }
    const text = outcome(result);
    $("overlay-result").textContent = text;
    $("overlay-result").className = result.conflicts.length ? "error" : "";
    ctx.toast(text, result.conflicts.length ? "error" : "info");
    await load();
  }

  $("overlay-form").addEventListener("submit", (event) => {
    event.preventDefault();
    $("overlay-result").textContent = "";
    load();
  });
  $("overlay-apply").addEventListener("click", () => act("apply", false));
  $("overlay-discard").addEventListener("click", () => act("discard", false));
  $("overlay-apply-all").addEventListener("click", () => act("apply", true));
  $("overlay-discard-all").addEventListener("click", () => act("discard", true));

  return {
    // The overlay mounts the principal sees (/v1/me); the block is hidden when there are none.
    show() {
      const seen = (ctx.me()?.mounts || []).filter((m) => m.overlay).map((m) => m.prefix);
      $("overlay-block").hidden = seen.length === 0;
      if (seen.join("\n") === prefixes.join("\n")) return;
      prefixes = seen;
      $("overlay-mount").replaceChildren(...seen.map((p) => el("option", p, { value: p })));
    },
    reset() {
      prefixes = [];
      clear();
      $("overlay-form").reset();
      $("overlay-mount").replaceChildren();
      $("overlay-block").hidden = true;
      $("overlay-result").textContent = "";
      say("");
    },
  };
}
