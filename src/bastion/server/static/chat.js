// Chat ("Web app: chat, administration, sign-in"): conversations kept by the server as files
// of the principal's own area (POST /v1/chat, streamed as Server-Sent Events over fetch),
// citations that open the cited lines, follow-ups within a conversation, a refusal shown as a
// refusal (the answer's own verdict, never the page's words), copy, and feedback (right, wrong,
// missing) kept for the answer evaluation. Contract: see app.js. Route: "#/chat/<id>".

const RATINGS = [["right", "Right"], ["wrong", "Wrong"], ["missing", "Missing"]];

export function mount(section, ctx) {
  const $ = (id) => document.getElementById(id);
  const { el } = ctx;
  let current = null; // the open conversation's id (null: a new one)
  let busy = false;

  const say = (text) => { $("chat-status").textContent = text; };

  // -- one turn -----------------------------------------------------------------------------

  function badge(status, verification) {
    if (status !== "answered") return ["Not answered", "refused"];
    return verification && verification.verified ? ["Verified", "verified"] : ["Not verified", "unverified"];
  }

  function renderAnswer(box, text, citations) {
    box.replaceChildren();
    const byNumber = new Map(citations.map((c) => [String(c.n), c]));
    for (const part of text.split(/(\[\d+\])/)) {
      const m = part.match(/^\[(\d+)\]$/);
      const cited = m && byNumber.get(m[1]);
      if (cited) {
        const ref = el("button", part, {
          type: "button", class: "ref", "aria-label": "citation " + m[1] + ": " + cited.path + " lines " + cited.lines[0] + " to " + cited.lines[1],
        });
        ref.addEventListener("click", () => ctx.open(cited.path, cited.lines));
        box.append(ref);
      } else {
        box.append(document.createTextNode(part));
      }
    }
  }

  function renderCitations(list, citations) {
    list.replaceChildren(...citations.map((c) => {
      const item = el("li");
      const open = el("button", c.path + ":" + c.lines[0] + "-" + c.lines[1], { type: "button", class: "link" });
      open.addEventListener("click", () => ctx.open(c.path, c.lines));
      item.append(open);
      return item;
    }));
    list.hidden = citations.length === 0;
  }

  function feedbackRow(turn, conversation, index) {
    const row = el("div", null, { class: "feedback actions", role: "group", "aria-label": "Rate this answer" });
    const copy = el("button", "Copy", { type: "button", class: "secondary small" });
    copy.addEventListener("click", async () => {
      const text = turn.answer + (turn.citations.length ? "\n\n" + turn.citations.map((c) => "[" + c.n + "] " + c.path + ":" + c.lines[0] + "-" + c.lines[1]).join("\n") : "");
      try { await navigator.clipboard.writeText(text); ctx.toast("Answer copied."); }
      catch (e) { ctx.toast("Copying was refused by the browser.", "error"); }
    });
    row.append(copy, el("span", "Was it right?", { class: "muted" }));
    const buttons = RATINGS.map(([value, label]) => {
      const b = el("button", label, { type: "button", class: "secondary small", "aria-pressed": String(turn.feedback === value), "data-rating": value });
      b.addEventListener("click", () => rate(conversation, index, value, buttons));
      return b;
    });
    row.append(...buttons);
    return row;
  }

  async function rate(conversation, index, rating, buttons) {
    let note = "";
    if (rating !== "right") {
      const given = await ctx.prompt(rating === "wrong" ? "What is wrong?" : "What is missing?", "A note for the evaluation (optional)");
      if (given === null) return;
      note = given;
    }
    try {
      await ctx.postJSON("/v1/feedback", { conversation, turn: index, rating, note });
      for (const b of buttons) b.setAttribute("aria-pressed", String(b.dataset.rating === rating));
      ctx.toast("Thank you: your rating is kept for the answer evaluation.");
    } catch (e) { ctx.toast(e.message, "error"); }
  }

  function turnItem(turn, conversation, index) {
    const item = el("li", null, { class: "turn" });
    item.append(el("p", turn.question, { class: "question" }));
    const answer = el("div", null, { class: "answer" });
    renderAnswer(answer, turn.answer, turn.citations);
    const [label, kind] = badge(turn.status, turn.verification);
    const verdict = el("p", null, { class: "verdict " + kind });
    // the badge says the verdict's first words ("Not answered: ..."); the rest says why
    const why = turn.verification.verdict.replace(/^[^:]*:\s*/, "");
    verdict.append(el("strong", label), document.createTextNode(" " + why));
    const cites = el("ol", null, { class: "citations", "aria-label": "Citations" });
    renderCitations(cites, turn.citations);
    item.append(answer, cites, verdict);
    if (turn.asked && turn.asked !== turn.question) {
      item.append(el("p", "Asked with the previous question as context: " + turn.asked, { class: "muted small" }));
    }
    if (conversation) item.append(feedbackRow(turn, conversation, index));
    return item;
  }

  // -- asking, streamed ---------------------------------------------------------------------

  async function ask(question) {
    if (busy) return;
    busy = true;
    $("ask-button").disabled = true;
    const list = $("turns");
    const item = el("li", null, { class: "turn" });
    const answer = el("div", "…", { class: "answer", "aria-busy": "true" });
    const cites = el("ol", null, { class: "citations", "aria-label": "Citations", hidden: "" });
    const verdict = el("p", null, { class: "verdict" });
    item.append(el("p", question, { class: "question" }), answer, cites, verdict);
    list.append(item);
    item.scrollIntoView({ block: "nearest" });
    say("Asking…");
    const turn = { question, answer: "", citations: [], verification: null, status: "", asked: question, feedback: null };
    let conversation = current;
    let index = 0;
    let failed = null;
    try {
      const body = { question };
      if (current) body.conversation = current;
      const response = await ctx.api("/v1/chat", {
        method: "POST",
        headers: { "Content-Type": "application/json", Accept: "text/event-stream" },
        body: JSON.stringify(body),
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
          if (name === "conversation") { conversation = data.conversation; index = data.turn; }
          if (name === "answer") { turn.answer += data.text; answer.textContent = turn.answer; }
          if (name === "citations") { turn.citations = data.citations; renderCitations(cites, turn.citations); }
          if (name === "verification") { turn.verification = data; turn.status = data.status; }
          if (name === "done") { turn.asked = data.asked; if (!data.kept) ctx.toast(data.notes[data.notes.length - 1] || "This answer was not kept.", "error"); }
          if (name === "error") failed = data.message;
        }
      }
    } catch (e) {
      failed = e.message;
    }
    busy = false;
    $("ask-button").disabled = false;
    if (failed || !turn.verification) {
      item.replaceChildren(el("p", question, { class: "question" }), el("p", failed || "The answer did not arrive.", { class: "error" }));
      say("The question failed: " + (failed || "no answer"));
      return;
    }
    item.replaceWith(turnItem(turn, conversation, index));
    say(badge(turn.status, turn.verification)[0] + ". " + turn.verification.verdict);
    if (conversation !== current) {
      current = conversation;
      history.replaceState(null, "", "#/chat/" + conversation);
    }
    loadList();
  }

  // -- conversations ------------------------------------------------------------------------

  async function loadList() {
    const list = $("conversation-list");
    try {
      const data = await ctx.getJSON("/v1/conversations");
      list.replaceChildren(...data.conversations.map((c) => {
        const item = el("li", null, { class: c.id === current ? "current" : "" });
        const open = el("a", c.title, { href: "#/chat/" + c.id, "aria-current": c.id === current ? "page" : "false" });
        const remove = el("button", "Delete", { type: "button", class: "secondary small", "aria-label": "Delete conversation: " + c.title });
        remove.addEventListener("click", () => removeConversation(c));
        item.append(open, el("span", c.turns + (c.turns === 1 ? " question" : " questions"), { class: "muted small" }), remove);
        return item;
      }));
      $("conversations-note").textContent = data.conversations.length ? "" : "No conversation yet: ask a question.";
    } catch (e) {
      $("conversations-note").textContent = e.message;
    }
  }

  async function removeConversation(c) {
    if (!(await ctx.confirm("Delete this conversation?", "“" + c.title + "” and its " + c.turns + " answers will be deleted, and its ratings with them.", "Delete"))) return;
    try {
      await ctx.postJSON("/v1/conversations/delete", { conversation: c.id });
      ctx.toast("Conversation deleted.");
      if (c.id === current) ctx.go("chat");
      else loadList();
    } catch (e) { ctx.toast(e.message, "error"); }
  }

  async function openConversation(id) {
    current = id;
    $("turns").replaceChildren();
    try {
      const data = await ctx.getJSON("/v1/conversations/read?" + new URLSearchParams({ conversation: id }));
      $("turns").replaceChildren(...data.turns.map((t, i) => turnItem(t, id, i)));
    } catch (e) {
      current = null;
      $("turns").replaceChildren(el("li", e.message, { class: "error" }));
    }
    loadList();
  }

  function fresh() {
    current = null;
    $("turns").replaceChildren();
    loadList();
  }

  // -- wiring -------------------------------------------------------------------------------

  $("ask-form").addEventListener("submit", (event) => {
    event.preventDefault();
    const question = $("question").value.trim();
    if (!question) return;
    $("question").value = "";
    ask(question);
  });
  $("question").addEventListener("keydown", (event) => {
    if (event.key === "Enter" && !event.shiftKey && !event.isComposing) {
      event.preventDefault();
      $("ask-form").requestSubmit();
    }
  });
  $("chat-new").addEventListener("click", () => { ctx.go("chat"); $("question").focus(); });
  return {
    show(route) {
      const id = (route || "").replace(/^\//, "");
      if (/^[0-9a-f]{16}$/.test(id)) { if (id !== current || !$("turns").children.length) openConversation(id); else loadList(); }
      else fresh();
    },
    reset() {
      current = null;
      for (const id of ["turns", "conversation-list"]) $(id).replaceChildren();
      $("conversations-note").textContent = "";
      say("");
    },
  };
}
