from django.http import JsonResponse
from django.urls import path
from django.views.decorators.csrf import csrf_exempt

from idp.urls import urlpatterns as idp_urlpatterns


@csrf_exempt
def bare(request):
    return JsonResponse({"ok": True})


urlpatterns = [path("bench/bare", bare), *idp_urlpatterns]
