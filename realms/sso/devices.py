"""The device a session was started from, as the account console shows it (Keycloak's
DeviceRepresentation: os, osVersion, browser, device, mobile), read from the User-Agent header at
sign-in and kept as a note of the SSO session."""
import re

NOTE = "KC_DEVICE_NOTE"
UNKNOWN = "Other"

_OS = (  # first match wins: Android and iOS user agents also name Linux and Mac OS X
    ("Android", re.compile(r"Android[ /]?([\d.]*)")),
    ("iOS", re.compile(r"(?:iPhone|iPad|iPod).*? OS ([\d_]+)")),
    ("Windows", re.compile(r"Windows NT ([\d.]+)")),
    ("Mac OS X", re.compile(r"Mac OS X ([\d_.]+)")),
    ("Chrome OS", re.compile(r"CrOS \S+ ([\d.]+)")),
    ("Linux", re.compile(r"Linux()")),
)
_BROWSERS = (  # Edge and Opera also say Chrome, Chrome also says Safari
    ("Edge", re.compile(r"Edg(?:e|A|iOS)?/([\d.]+)")),
    ("Opera", re.compile(r"OPR/([\d.]+)")),
    ("Firefox", re.compile(r"(?:Firefox|FxiOS)/([\d.]+)")),
    ("Chrome", re.compile(r"(?:HeadlessChrome|Chrome|CriOS)/([\d.]+)")),
    ("Safari", re.compile(r"Version/([\d.]+).*Safari/")),
)
_MOBILE = re.compile(r"Mobi|iPhone|iPod|Android.*Mobile")


def _first(table, agent):
    for name, pattern in table:
        found = pattern.search(agent)
        if found:
            return name, found.group(1).replace("_", ".")
    return UNKNOWN, ""


def from_user_agent(agent: str) -> dict:
    agent = (agent or "")[:512]
    os_name, os_version = _first(_OS, agent)
    browser, version = _first(_BROWSERS, agent)
    mobile = bool(_MOBILE.search(agent))
    return {"os": os_name, "osVersion": os_version, "browser": f"{browser}/{version}" if version else browser,
            "device": "Mobile" if mobile else UNKNOWN, "mobile": mobile}


def of_request(request) -> dict:
    return from_user_agent(request.META.get("HTTP_USER_AGENT", ""))


def of_session(user_session) -> dict:
    """The session's device; unknown for sessions started without a browser (grants, imports)."""
    return (user_session.notes or {}).get(NOTE) or from_user_agent("")
