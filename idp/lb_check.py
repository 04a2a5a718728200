"""``GET /lb-check``, Keycloak's probe for the global load balancer in front of several sites.

It exists only with the feature ``stateless`` (Keycloak enables it with ``stateless`` or
``multi-site``), on the public port, because a global load balancer reaches a site only through
that site's own load balancer, never the management port. As Keycloak's, it answers the text
``UP`` and says nothing about the node's internals: it may be reachable from the internet. It
queries nothing, so a site under heavy load is not taken out of rotation, which would push the
load onto the other site. A site whose nodes are all down answers nothing, or its load
balancer's error, and the global load balancer moves traffic away. Each node's readiness stays
on ``/health/ready`` for the site's own load balancer."""
from django.http import Http404, HttpResponse

from realms import features


def lb_check(request):
    if not features.enabled("stateless"):
        raise Http404
    return HttpResponse("UP", content_type="text/plain; charset=utf-8")
