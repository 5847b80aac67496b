// Chat (owned by the "webb" helper): ask a question, stream the answer, open its citations.
// Contract: see app.js.

export function mount(section, ctx) {
  const $ = (id) => document.getElementById(id);
  const { el } = ctx;

  function renderAnswer(text, citations) {
    const box = $("answer");
    box.replaceChildren();
    const byNumber = new Map(citations.map((c) => [String(c.n), c]));
    for (const part of text.split(/(\[\d+\])/)) {
      const m = part.match(/^\[(\d+)\]$/);
      const cited = m && byNumber.get(m[1]);
      if (cited) {
        const ref = el("button", part, { type: "button", class: "ref", "aria-label": "citation " + m[1] + ": " + cited.path });
        ref.addEventListener("click", () => ctx.open(cited.path, cited.lines));
        box.append(ref);
      } else {
        box.append(document.createTextNode(part));
      }
    }
  }

  function renderCitations(citations) {
    $("citations").replaceChildren(...citations.map((c) => {
      const item = el("li");
      const open = el("button", c.path + ":" + c.lines[0] + "-" + c.lines[1], { type: "button" });
      open.addEventListener("click", () => ctx.open(c.path, c.lines));
      item.append(open);
      return item;
    }));
  }

  async function ask(question) {
    const answer = $("answer");
    answer.textContent = "…";
    $("citations").replaceChildren();
    $("verdict").textContent = "";
    let text = "";
    let citations = [];
    try {
      const response = await ctx.api("/v1/ask", {
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
          if (name === "verification") $("verdict").textContent = data.verdict;
          if (name === "error") answer.textContent = data.message;
        }
      }
      renderAnswer(text, citations);
    } catch (e) {
      answer.textContent = e.message;
    }
  }

  $("ask-form").addEventListener("submit", (event) => { event.preventDefault(); ask($("question").value); });
  return {
    show() {},
    reset() { for (const id of ["answer", "citations", "verdict"]) $(id).replaceChildren(); },
  };
}
