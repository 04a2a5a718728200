"""The dev mode's demo: a sign-in page pair for the demo realm's client, and a demo API.

``/demo/`` starts an authorization-code sign-in with PKCE for the demo client; ``/demo/callback``
(its redirect URI, registered at start) exchanges the code at the token endpoint and shows the
request, the answer and the tokens' claims, so a newcomer sees the whole flow without an
application of their own. Both answer 404 outside dev mode.

The demo API is protected by the resource-server helper: it answers who the bearer is.

The realm and audience come from IDP_DEMO_API_REALM (default ``demo``) and IDP_DEMO_API_AUDIENCE
(default ``demo-api``): a client's tokens reach it once the client has an audience mapper for
that audience. The token is validated locally against the realm's JWKS, fetched over HTTP like
any API would, so the server needs more than one worker (or thread) to answer its own fetch.
"""
import hashlib
import json
import os
import secrets
from urllib.parse import urlencode

import requests
from django.conf import settings
from django.http import Http404, JsonResponse
from django.shortcuts import redirect
from django.views.decorators.http import require_GET

from realms.http import themes
from realms.models import Realm
from realms.representation.bootstrap import DEMO_CALLBACK_PATH, DEMO_CLIENT, DEMO_REALM

from . import jose
from .resource_server import require_bearer

REALM = os.environ.get("IDP_DEMO_API_REALM", "demo")
AUDIENCE = os.environ.get("IDP_DEMO_API_AUDIENCE", "demo-api")


@require_GET
@require_bearer(realm=REALM, audience=AUDIENCE)
def whoami(request):
    claims = request.token
    return JsonResponse({
        "sub": claims.get("sub"),
        "preferred_username": claims.get("preferred_username"),
        "client": claims.get("azp"),
        "scope": claims.get("scope", ""),
        "realm_roles": (claims.get("realm_access") or {}).get("roles", []),
    })


def _demo_realm():
    realm = Realm.objects.filter(name=DEMO_REALM).first() if getattr(settings, "IDP_DEV_MODE", False) else None
    if realm is None:
        raise Http404
    return realm


@require_GET
def sign_in(request):
    _demo_realm()
    verifier, state = secrets.token_urlsafe(48), secrets.token_urlsafe(16)
    request.session["demo_sign_in"] = {"verifier": verifier, "state": state}
    query = urlencode({
        "client_id": DEMO_CLIENT, "redirect_uri": request.build_absolute_uri(DEMO_CALLBACK_PATH),
        "response_type": "code", "scope": "openid", "state": state,
        "code_challenge": jose.b64e(hashlib.sha256(verifier.encode()).digest()), "code_challenge_method": "S256",
    })
    return redirect(f"/realms/{DEMO_REALM}/protocol/openid-connect/auth?{query}")


def _claims(token):
    # Shown, not trusted: the token came straight from our own token endpoint.
    return json.dumps(jose.parse(token)[1], indent=2) if token and token.count(".") == 2 else ""


@require_GET
def callback(request):
    realm = _demo_realm()
    pending = request.session.pop("demo_sign_in", None)
    context = {"sign_in_url": "/demo/"}
    if "error" in request.GET:
        context["error"] = f"{request.GET['error']}: {request.GET.get('error_description', '')}"
    elif pending is None or not secrets.compare_digest(request.GET.get("state", ""), pending["state"]):
        context["error"] = "state"
    else:
        token_url = request.build_absolute_uri(f"/realms/{DEMO_REALM}/protocol/openid-connect/token")
        form = {"grant_type": "authorization_code", "code": request.GET.get("code", ""), "client_id": DEMO_CLIENT,
                "redirect_uri": request.build_absolute_uri(DEMO_CALLBACK_PATH), "code_verifier": pending["verifier"]}
        answer = requests.post(token_url, data=form, timeout=10)
        body = answer.json() if answer.headers.get("Content-Type", "").startswith("application/json") else {}
        context.update({
            "token_url": token_url, "request_body": urlencode(form), "status": answer.status_code,
            "response": json.dumps(body, indent=2),
            "id_claims": _claims(body.get("id_token")), "access_claims": _claims(body.get("access_token")),
        })
    return themes.render(request, realm, "demo-callback.html", context, status=200 if "response" in context else 400)
