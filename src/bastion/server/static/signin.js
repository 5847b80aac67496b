// Sign-in ("Web app: chat, administration, sign-in"): the methods this server offers (its
// identity provider, local accounts, the demo's users, a bearer token), and why a session
// ended. (The shell writes who is signed in and signs out on a 401 mid-session.)
// Contract: see app.js; this module's mount returns { shown(message) }: the shell signed out
// (a 401 mid-session: `message` says why; the Sign out button: no message).

export function mount(section, ctx) {
  const $ = (id) => document.getElementById(id);
  const { el } = ctx;
  const fail = (e) => { $("signin-error").textContent = e.message; };
  const note = (text) => { $("signin-note").textContent = text; $("signin-note").hidden = !text; };
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

  return {
    shown(message) {
      note(message);
      if (message) $("signin-title").focus();
    },
  };
}
