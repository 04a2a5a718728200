"""A realm's ``displayNameHtml`` made safe to show: Keycloak renders it as HTML in the login
theme's header (its default is ``<div class="kc-logo-text"><span>Keycloak</span></div>``). Only
text-formatting tags pass, each with at most a ``class``; every other tag is dropped (its text
kept, except inside script, style and the like, dropped whole), attributes, comments and
entities never reach the page as markup, and every tag opened is closed."""
from html import escape
from html.parser import HTMLParser

from django.utils.safestring import mark_safe

ALLOWED = {"b", "strong", "i", "em", "u", "s", "small", "sub", "sup", "span", "div", "p", "br"}
_VOID = {"br"}
# Their content is not text for a person: dropped with them.
_DROPPED = {"script", "style", "template", "iframe", "object", "embed", "noscript", "textarea", "title", "svg",
            "math", "select"}


class _Sanitiser(HTMLParser):
    def __init__(self):
        super().__init__(convert_charrefs=True)
        self.out, self.open, self.dropping = [], [], 0

    def handle_starttag(self, tag, attrs):
        if tag in _DROPPED:
            self.dropping += 1
        if self.dropping or tag not in ALLOWED:
            return
        css = next((value for name, value in attrs if name == "class" and value), "")
        self.out.append(f'<{tag} class="{escape(css)}">' if css else f"<{tag}>")
        if tag not in _VOID:
            self.open.append(tag)

    def handle_startendtag(self, tag, attrs):
        self.handle_starttag(tag, attrs)
        if tag not in _VOID:
            self.handle_endtag(tag)

    def handle_endtag(self, tag):
        if tag in _DROPPED:
            self.dropping = max(0, self.dropping - 1)
            return
        if self.dropping or tag not in self.open:
            return
        while self.open:
            opened = self.open.pop()
            self.out.append(f"</{opened}>")
            if opened == tag:
                break

    def handle_data(self, data):
        if not self.dropping:
            self.out.append(escape(data))

    def result(self):
        self.close()
        return "".join(self.out) + "".join(f"</{tag}>" for tag in reversed(self.open))


def safe_html(text):
    """``text`` reduced to the allowed tags, marked safe for a template."""
    sanitiser = _Sanitiser()
    sanitiser.feed(text)
    return mark_safe(sanitiser.result())  # noqa: S308 (built above from escaped text and allowed tags only)
