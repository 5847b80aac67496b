// Sign-in (owned by the "webb" helper): demo users, accounts, OIDC, a bearer token.
// Contract: see app.js. Calls ctx.signedIn(token, viaSession) once the user is known.

export function mount(section, ctx) {
  const $ = (id) => document.getElementById(id);
  const { el } = ctx;
  const fail = (e) => { $("signin-error").textContent = e.message; };
  const done = async (token, viaSession) => {
    try {
      await ctx.signedIn(token, viaSession);
      $("signin-error").textContent = "";
      const question = $("question");
      if (question) question.focus();
    } catch (e) { fail(e); }
  };

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
    done(token, false);
  });
}
