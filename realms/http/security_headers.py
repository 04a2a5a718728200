"""The realm's ``browserSecurityHeaders`` on every page the realm shows (sign-in, consent,
errors, logout, form posts), with Keycloak 26's defaults for the keys a realm does not set; an
empty value sends no header, as in Keycloak.

``Strict-Transport-Security`` goes with HTTPS answers only (browsers ignore it on plain HTTP).
A ``Referrer-Policy`` of ``no-referrer`` is sent as ``same-origin``: under ``no-referrer``
browsers send ``Origin: null`` with the page's own form post, which the CSRF check must refuse;
``same-origin`` gives other sites exactly as little (nothing). An empty ``referrerPolicy`` or
``xContentTypeOptions`` leaves the site-wide ``same-origin`` / ``nosniff`` of Django's security
middleware in place.
"""
DEFAULTS = {
    "contentSecurityPolicy": "frame-src 'self'; frame-ancestors 'self'; object-src 'none';",
    "contentSecurityPolicyReportOnly": "",
    "xContentTypeOptions": "nosniff",
    "referrerPolicy": "no-referrer",
    "xRobotsTag": "none",
    "xFrameOptions": "SAMEORIGIN",
    "strictTransportSecurity": "max-age=31536000; includeSubDomains",
}
HEADERS = {
    "contentSecurityPolicy": "Content-Security-Policy",
    "contentSecurityPolicyReportOnly": "Content-Security-Policy-Report-Only",
    "xContentTypeOptions": "X-Content-Type-Options",
    "referrerPolicy": "Referrer-Policy",
    "xRobotsTag": "X-Robots-Tag",
    "xFrameOptions": "X-Frame-Options",
    "strictTransportSecurity": "Strict-Transport-Security",
}


def apply(request, realm, response):
    configured = (realm.browser_security_headers or {}) if realm is not None else {}
    for key, header in HEADERS.items():
        value = str(configured.get(key, DEFAULTS[key]) or "").strip()
        if key == "strictTransportSecurity" and not request.is_secure():
            continue
        if key == "referrerPolicy" and value == "no-referrer":
            value = "same-origin"
        if value:
            response[header] = value
        elif header in response:
            del response[header]
        if key == "xFrameOptions" and not value:
            response.xframe_options_exempt = True  # or Django's middleware would add DENY
    return response
