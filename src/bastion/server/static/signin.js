// Sign-in ("Web app: chat, administration, sign-in"): the methods this server offers (its
// identity provider, local accounts, the demo's users, a bearer token), who is signed in (id,
// tenant, roles, clearance), and the end of a session.
// Contract: see app.js. Two additions of this module to the shell, made here so the shell stays
// as it is: ctx.api (and getJSON/postJSON over it) returns to the sign-in page with a message
// when a request is refused with 401 mid-session (an expired or revoked token or session), and
// the header line names the principal's roles beside its tenant and clearance.

const EXPIRED = "Your session has ended (it expired or was signed out elsewhere). Sign in again to go on.";

export function mount(section, ctx) {
  const $ = (id) => document.getElementById(id);
  const { el } = ctx;
  const fail = (e) => { $("signin-error").textContent = e.message; };
  const note = (text) => { $("signin-note").textContent = text; $("signin-note").hidden = !text; };

  // -- a 401 after signing in: back to this page, saying why -------------------------------
  const raw = ctx.api;
  let ending = false;
  ctx.api = async (path, options) => {
    try {
      return await raw(path, options);
    } catch (e) {
      if (e.status === 401 && ctx.me() && !ending) {
        ending = true;
        ctx.signOut();
        note(EXPIRED);
        $("signin-title").focus();
        ending = false;
      }
      throw e;
    }
  };
  ctx.getJSON = async (path) => (await ctx.api(path)).json();
  ctx.postJSON = async (path, body) => (await ctx.api(path, {
    method: "POST", headers: { "Content-Type": "application/json" }, body: JSON.stringify(body),
  })).json();

  // -- "signed in as": the shell writes the line; this names the roles too -----------------
  const who = $("whoami");
  const describe = () => {
    const me = ctx.me();
    if (!me || who.dataset.full === me.id) return;
    who.dataset.full = me.id;
    const roles = me.roles.length ? me.roles.join(", ") : "none";
    who.replaceChildren(
      document.createTextNode("Signed in as "), el("strong", me.id),
      document.createTextNode(" · tenant " + me.tenant + " · roles " + roles + " · clearance " + me.clearance),
    );
  };
  new MutationObserver(() => {
    if (!who.textContent) { delete who.dataset.full; return; }
    describe();
  }).observe(who, { childList: true, characterData: true, subtree: true });
  $("signin-title").tabIndex = -1;

  const done = async (token, viaSession) => {
    try {
      await ctx.signedIn(token, viaSession);
      $("signin-error").textContent = "";
      note("");
      const question = $("question");
      if (question) question.focus();
    } catch (e) { fail(e); }
  };

  // -- the methods this server offers ------------------------------------------------------
  (async () => {
    try {
      const data = await (await fetch("/v1/auth/demo/users")).json();
      if (!data.users) return;
      const select = $("demo-user");
      for (const user of data.users) select.append(el("option", user.id + " (" + user.about + ")", { value: user.id }));
      $("demo-form").hidden = false;
    } catch (e) { /* demo login off */ }
  })();
  (async () => {
    try {
      const methods = await (await fetch("/v1/auth/methods")).json();
      $("account-form").hidden = !methods.accounts;
      $("oidc-sign-in").hidden = !methods.oidc;
      // with no other way in, the token form is the way: open it
      if (!methods.accounts && !methods.oidc && $("demo-form").hidden) $("token-method").open = true;
    } catch (e) { /* neither */ }
  })();

  $("account-form").addEventListener("submit", async (event) => {
    event.preventDefault();
    try {
      await ctx.postJSON("/v1/auth/login", { user: $("account-user").value, password: $("account-password").value });
      await done(null, true);
    } catch (e) { fail(e); }
    $("account-password").value = "";
  });
  $("demo-form").addEventListener("submit", async (event) => {
    event.preventDefault();
    try {
      const data = await ctx.postJSON("/v1/auth/demo", { user: $("demo-user").value });
      await done(data.token, false);
    } catch (e) { fail(e); }
  });
  $("token-form").addEventListener("submit", (event) => {
    event.preventDefault();
    const token = $("token").value.trim();
    $("token").value = "";
    if (!token) { fail(new Error("Paste a token first.")); return; }
    done(token, false);
  });
}
