// The folder tree of the Files tab: an ARIA tree whose folders load their entries when opened.
// Keys: Up/Down move, Right opens a folder (or steps into it), Left closes it (or steps to
// its parent), Home/End, Enter shows the entry. One item is in the tab order at a time.

const byName = (a, b) => (a.kind === b.kind ? (a.name < b.name ? -1 : 1) : a.kind === "directory" ? -1 : 1);
const nameOf = (path) => path.slice(path.lastIndexOf("/") + 1) || "/";

export class Tree {
  constructor(root, ctx, onOpen) {
    this.root = root;
    this.ctx = ctx;
    this.onOpen = onOpen;
    this.expanded = new Set(["/"]);
    root.addEventListener("keydown", (e) => this.keys(e));
  }

  item(path) {
    return [...this.root.querySelectorAll("[role=treeitem]")].find((li) => li.dataset.path === path) || null;
  }

  async children(path) {
    const data = await this.ctx.getJSON("/v1/files?" + new URLSearchParams({ path }));
    return data.entries.map((e) => ({ path: e.path, kind: e.kind, name: nameOf(e.path) })).sort(byName);
  }

  node(entry, level) {
    const { el } = this.ctx;
    const folder = entry.kind === "directory";
    const li = el("li", null, { role: "treeitem", "aria-level": String(level), "aria-selected": "false", tabindex: "-1" });
    li.dataset.path = entry.path;
    li.dataset.kind = entry.kind;
    const label = el("span", entry.name + (folder ? "/" : ""), { class: folder ? "label folder" : "label file" });
    li.append(label);
    if (folder) {
      li.setAttribute("aria-expanded", "false");
      li.append(el("ul", null, { role: "group" }));
    }
    label.addEventListener("click", (event) => {
      event.stopPropagation();
      this.focus(li);
      if (folder && li.getAttribute("aria-expanded") === "false") this.toggle(li, true);
      this.onOpen(entry.path);
    });
    return li;
  }

  async fill(list, path, level) {
    try {
      const entries = await this.children(path);
      list.replaceChildren(...entries.map((e) => this.node(e, level)));
      if (!entries.length) list.append(this.ctx.el("li", "(empty)", { class: "empty", role: "none" }));
    } catch (e) {
      list.replaceChildren(this.ctx.el("li", e.message, { class: "error", role: "none" }));
    }
  }

  async toggle(li, open) {
    li.setAttribute("aria-expanded", String(open));
    if (open) {
      this.expanded.add(li.dataset.path);
      await this.fill(li.querySelector("ul"), li.dataset.path, Number(li.getAttribute("aria-level")) + 1);
    } else {
      this.expanded.delete(li.dataset.path);
    }
  }

  // Rebuild from the top, opening the folders that were open and those down to `path`.
  async reload(path = "/") {
    const parts = path.split("/").filter(Boolean);
    for (let n = 1; n < parts.length; n++) this.expanded.add("/" + parts.slice(0, n).join("/"));
    await this.fill(this.root, "/", 1);
    const open = async (list) => {
      for (const li of [...list.children].filter((c) => c.dataset.kind === "directory")) {
        if (this.expanded.has(li.dataset.path) || path === li.dataset.path) {
          await this.toggle(li, true);
          await open(li.querySelector("ul"));
        }
      }
    };
    await open(this.root);
    this.select(path);
  }

  select(path) {
    let chosen = null;
    for (const li of this.root.querySelectorAll("[role=treeitem]")) {
      const on = li.dataset.path === path;
      li.setAttribute("aria-selected", String(on));
      if (on) chosen = li;
    }
    const first = this.root.querySelector("[role=treeitem]");
    this.roving(chosen || first);
  }

  roving(target) {
    for (const li of this.root.querySelectorAll("[role=treeitem]")) li.tabIndex = li === target ? 0 : -1;
  }

  focus(li) {
    this.roving(li);
    li.focus();
  }

  visible() {
    return [...this.root.querySelectorAll("[role=treeitem]")].filter((li) => li.offsetParent !== null);
  }

  keys(event) {
    const li = event.target.closest("[role=treeitem]");
    if (!li) return;
    const items = this.visible();
    const at = items.indexOf(li);
    const folder = li.dataset.kind === "directory";
    const open = li.getAttribute("aria-expanded") === "true";
    const parent = li.parentElement.closest("[role=treeitem]");
    let handled = true;
    switch (event.key) {
      case "ArrowDown": if (items[at + 1]) this.focus(items[at + 1]); break;
      case "ArrowUp": if (at > 0) this.focus(items[at - 1]); break;
      case "Home": this.focus(items[0]); break;
      case "End": this.focus(items[items.length - 1]); break;
      case "ArrowRight":
        if (folder && !open) this.toggle(li, true);
        else if (folder) { const first = li.querySelector("[role=treeitem]"); if (first) this.focus(first); }
        break;
      case "ArrowLeft":
        if (folder && open) this.toggle(li, false);
        else if (parent) this.focus(parent);
        break;
      case "Enter": case " ": this.onOpen(li.dataset.path); break;
      default: handled = false;
    }
    if (handled) { event.preventDefault(); event.stopPropagation(); }
  }
}
