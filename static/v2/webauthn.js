// WebAuthn ceremonies of the v2 login theme. The page holds its options as JSON
// (#webauthn-options, made by the server) and a form to post the browser's answer under
// Keycloak's field names: #webauth (sign-in) or #register (registration).
(function () {
  "use strict";
  var optionsElement = document.getElementById("webauthn-options");
  if (!optionsElement) return;
  var options = JSON.parse(optionsElement.textContent);

  function fromB64url(text) {
    var b64 = text.replace(/-/g, "+").replace(/_/g, "/");
    var raw = atob(b64 + "===".slice((b64.length + 3) % 4));
    var bytes = new Uint8Array(raw.length);
    for (var i = 0; i < raw.length; i++) bytes[i] = raw.charCodeAt(i);
    return bytes.buffer;
  }

  function toB64url(buffer) {
    var bytes = new Uint8Array(buffer), raw = "";
    for (var i = 0; i < bytes.length; i++) raw += String.fromCharCode(bytes[i]);
    return btoa(raw).replace(/\+/g, "-").replace(/\//g, "_").replace(/=+$/, "");
  }

  function descriptors(list) {
    return (list || []).map(function (d) {
      return {type: d.type, id: fromB64url(d.id), transports: d.transports};
    });
  }

  // The buttons are served disabled: a click before this deferred script has run would do nothing.
  function enable(button, onClick) {
    button.addEventListener("click", onClick);
    button.disabled = false;
    if (button.hasAttribute("autofocus")) button.focus();
  }

  function submit(form, fields) {
    Object.keys(fields).forEach(function (name) { form.querySelector("[name=" + name + "]").value = fields[name]; });
    form.submit();
  }

  var supported = typeof window.PublicKeyCredential !== "undefined";
  if (!supported) {
    var notice = document.getElementById("kc-webauthn-unsupported");
    if (notice) notice.hidden = false;
  }

  var signIn = document.getElementById("webauth");
  if (signIn) {
    var pending = null;  // the conditional request, aborted before a modal one starts

    var authenticate = function (mediation) {
      var publicKey = Object.assign({}, options, {
        challenge: fromB64url(options.challenge), allowCredentials: descriptors(options.allowCredentials)});
      var request = {publicKey: publicKey};
      if (mediation === "conditional") {
        pending = new AbortController();
        request.mediation = "conditional";
        request.signal = pending.signal;
      } else if (pending) {
        pending.abort();
        pending = null;
      }
      return navigator.credentials.get(request).then(function (credential) {
        var response = credential.response;
        submit(signIn, {
          clientDataJSON: toB64url(response.clientDataJSON), authenticatorData: toB64url(response.authenticatorData),
          signature: toB64url(response.signature), credentialId: toB64url(credential.rawId),
          userHandle: response.userHandle ? toB64url(response.userHandle) : ""});
      }).catch(function (err) {
        // An aborted or dismissed autofill request is not an error; anything else is posted.
        if (mediation === "conditional") return;
        submit(signIn, {error: String(err && err.name || err)});
      });
    };

    var button = document.getElementById("authenticateWebAuthnButton");
    if (button && supported) enable(button, function () { authenticate(); });
    var username = document.getElementById("username");
    if (supported && username && /\bwebauthn\b/.test(username.getAttribute("autocomplete") || "") &&
        PublicKeyCredential.isConditionalMediationAvailable) {
      PublicKeyCredential.isConditionalMediationAvailable().then(function (available) {
        if (available) authenticate("conditional");
      });
    }
  }

  var register = document.getElementById("register");
  var registerButton = document.getElementById("registerWebAuthn");
  if (register && registerButton && supported) {
    enable(registerButton, function () {
      var publicKey = Object.assign({}, options, {
        challenge: fromB64url(options.challenge),
        user: Object.assign({}, options.user, {id: fromB64url(options.user.id)}),
        excludeCredentials: descriptors(options.excludeCredentials)});
      navigator.credentials.create({publicKey: publicKey}).then(function (credential) {
        var response = credential.response;
        submit(register, {
          clientDataJSON: toB64url(response.clientDataJSON), attestationObject: toB64url(response.attestationObject),
          publicKeyCredentialId: toB64url(credential.rawId),
          transports: response.getTransports ? response.getTransports().join(",") : ""});
      }).catch(function (err) {
        submit(register, {error: String(err && err.name || err)});
      });
    });
  }
})();
