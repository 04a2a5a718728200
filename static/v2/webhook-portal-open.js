// The webhook consumer portal's link carries its key in the fragment (#...), which browsers never
// send, so no access log records it. Take it out of the address (and so out of the history), put
// it in the page's form and post the form: the server answers with the key in an HttpOnly cookie.
// Every portal page does so: a new link opened in a tab that shows the portal changes only the
// fragment, and the browser loads nothing.
(function () {
  "use strict";
  function open() {
    var form = document.getElementById("open-form");
    var key = window.location.hash.slice(1);
    if (!form || !key) return;
    history.replaceState(null, "", window.location.pathname + window.location.search);
    form.elements.token.value = decodeURIComponent(key);
    form.submit();
  }
  window.addEventListener("hashchange", open);
  open();
})();
