// A small Markdown renderer that builds DOM nodes: every piece of the document becomes text
// (textContent), never HTML, so raw HTML in a document shows as the text it is. Covers what
// documents in a workspace use: front matter (shown apart), headings, paragraphs, lists,
// block quotes, fenced and indented code, pipe tables, rules, and inline code, emphasis,
// strong and links (http, https, mailto and in-page only; any other target stays text).

const SAFE_LINK = /^(https?:|mailto:|#)/i;

function inline(text) {
  const out = document.createDocumentFragment();
  const pattern = /(`+)([^`]|[^`][\s\S]*?[^`])\1(?!`)|\*\*([^*]+)\*\*|__([^_]+)__|\*([^*\s][^*]*)\*|_([^_\s][^_]*)_|\[([^\]]+)\]\(([^)\s]+)\)/g;
  let last = 0;
  let m;
  while ((m = pattern.exec(text)) !== null) {
    if (m.index > last) out.append(document.createTextNode(text.slice(last, m.index)));
    let node;
    if (m[1]) { node = document.createElement("code"); node.textContent = m[2]; }
    else if (m[3] || m[4]) { node = document.createElement("strong"); node.append(inline(m[3] || m[4])); }
    else if (m[5] || m[6]) { node = document.createElement("em"); node.append(inline(m[5] || m[6])); }
    else if (SAFE_LINK.test(m[8])) {
      node = document.createElement("a");
      node.href = m[8];
      node.rel = "noopener noreferrer";
      node.append(inline(m[7]));
    } else { node = document.createTextNode(m[0]); }
    out.append(node);
    last = pattern.lastIndex;
  }
  if (last < text.length) out.append(document.createTextNode(text.slice(last)));
  return out;
}

function element(tag, children) {
  const node = document.createElement(tag);
  node.append(children);
  return node;
}

const cells = (line) => line.trim().replace(/^\|/, "").replace(/\|$/, "").split("|").map((c) => c.trim());

function table(rows) {
  const node = document.createElement("table");
  const head = document.createElement("thead");
  const tr = document.createElement("tr");
  for (const c of cells(rows[0])) tr.append(element("th", inline(c)));
  head.append(tr);
  const body = document.createElement("tbody");
  for (const row of rows.slice(2)) {
    const line = document.createElement("tr");
    for (const c of cells(row)) line.append(element("td", inline(c)));
    body.append(line);
  }
  node.append(head, body);
  const wrap = document.createElement("div");
  wrap.className = "scroll";
  wrap.append(node);
  return wrap;
}

// The document as nodes; `frontMatter` receives the front matter block's text, if any.
export function renderMarkdown(source, frontMatter = () => {}) {
  const out = document.createDocumentFragment();
  let lines = source.replace(/\r\n?/g, "\n").split("\n");
  if (lines[0] === "---") {
    const end = lines.indexOf("---", 1);
    if (end > 0) { frontMatter(lines.slice(1, end).join("\n")); lines = lines.slice(end + 1); }
  }
  let i = 0;
  const para = [];
  const flush = () => {
    if (para.length) out.append(element("p", inline(para.join(" "))));
    para.length = 0;
  };
  while (i < lines.length) {
    const line = lines[i];
    let m;
    if (!line.trim()) { flush(); i++; continue; }
    if ((m = line.match(/^(```|~~~)/))) {
      flush();
      const body = [];
      for (i++; i < lines.length && !lines[i].startsWith(m[1]); i++) body.push(lines[i]);
      i++;
      out.append(element("pre", element("code", document.createTextNode(body.join("\n")))));
      continue;
    }
    if ((m = line.match(/^(#{1,6})\s+(.*?)\s*#*\s*$/))) {
      flush();
      out.append(element("h" + Math.min(6, m[1].length + 2), inline(m[2])));
      i++;
      continue;
    }
    if (/^\s*([-*_])(\s*\1){2,}\s*$/.test(line)) { flush(); out.append(document.createElement("hr")); i++; continue; }
    if (line.includes("|") && i + 1 < lines.length && /^\s*\|?\s*:?-+:?\s*(\|\s*:?-+:?\s*)*\|?\s*$/.test(lines[i + 1])) {
      flush();
      const rows = [];
      while (i < lines.length && lines[i].includes("|")) rows.push(lines[i++]);
      out.append(table(rows));
      continue;
    }
    if (/^>/.test(line)) {
      flush();
      const body = [];
      while (i < lines.length && /^>/.test(lines[i])) body.push(lines[i++].replace(/^>\s?/, ""));
      out.append(element("blockquote", renderMarkdown(body.join("\n"))));
      continue;
    }
    if ((m = line.match(/^\s*([-*+]|\d+[.)])\s+/))) {
      flush();
      const ordered = /\d/.test(m[1]);
      const list = document.createElement(ordered ? "ol" : "ul");
      while (i < lines.length && (m = lines[i].match(/^\s*([-*+]|\d+[.)])\s+(.*)$/)) && /\d/.test(m[1]) === ordered) {
        list.append(element("li", inline(m[2])));
        i++;
      }
      out.append(list);
      continue;
    }
    if (/^( {4}|\t)/.test(line) && !para.length) {
      const body = [];
      while (i < lines.length && (/^( {4}|\t)/.test(lines[i]) || !lines[i].trim())) body.push(lines[i++].replace(/^( {4}|\t)/, ""));
      out.append(element("pre", element("code", document.createTextNode(body.join("\n").trimEnd()))));
      continue;
    }
    para.push(line.trim());
    i++;
  }
  flush();
  return out;
}
