"""Top-level routes: pages at the root, the JSON API under api/, admin under admin/."""

from django.contrib import admin
from django.urls import URLPattern, URLResolver, include, path

from jaato_web.api import api

urlpatterns: list[URLPattern | URLResolver] = [
    path("admin/", admin.site.urls),
    path("api/", api.urls),
    path("", include("jaato_web.pages.urls")),
]

# Under /api/ even an unreadable request, a refusal, an unknown address or a failure answers
# JSON, as the API's docs promise; pages answer a page of the dashboard saying why.
handler400 = "jaato_web.api.errors.bad_request"
handler403 = "jaato_web.api.errors.permission_denied"
handler404 = "jaato_web.api.errors.not_found"
handler500 = "jaato_web.api.errors.server_error"
