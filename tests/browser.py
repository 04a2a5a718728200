"""What the browser tests share: headless Chromium's flags here, and a navigation that may go on
by itself."""
from playwright.sync_api import Error as PlaywrightError

# As root, on a machine whose only network is loopback: no sandbox, and none of Chromium's own
# background connections.
CHROMIUM_ARGS = ["--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
                 "--disable-background-networking", "--disable-component-update", "--disable-sync"]


def open_page(page, url, **options):
    """``page.goto`` to a page that navigates on by itself: a form that posts itself on load (a
    SAML answer), a challenge page posted back or retried with a token. On a fast machine that
    next navigation can start before Playwright has seen the first through, and Playwright then
    reports the first as interrupted. Where the browser lands is what the tests check."""
    try:
        page.goto(url, **options)
    except PlaywrightError as error:
        if "interrupted by another navigation" not in str(error):
            raise
