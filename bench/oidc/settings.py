"""Production settings plus one bare view (the baseline the token endpoint is compared with)."""
from idp.settings.prod import *  # noqa: F401,F403

ROOT_URLCONF = "bench.oidc.urls"
