from django.conf import settings
from django.conf.urls.i18n import i18n_patterns
from django.urls import include, path
from django.views.static import serve
from wagtail import urls as wagtail_urls
from wagtail.api.v2.router import WagtailAPIRouter
from wagtail.api.v2.views import PagesAPIViewSet
from wagtail.documents import urls as wagtaildocs_urls
from wagtail.documents.api.v2.views import DocumentsAPIViewSet
from wagtail.images.api.v2.views import ImagesAPIViewSet

api_router = WagtailAPIRouter("wagtailapi")
api_router.register_endpoint("pages", PagesAPIViewSet)
if settings.API_LAYOUT == "v2":
    api_router.register_endpoint("images", ImagesAPIViewSet)
    api_router.register_endpoint("documents", DocumentsAPIViewSet)
    api_prefix = "api/v2/"
else:
    api_prefix = "api/v1/cms/"

urlpatterns = [
    path(api_prefix, api_router.urls),
    path("documents/", include(wagtaildocs_urls)),
    path("media/<path:path>", serve, {"document_root": settings.MEDIA_ROOT}),
]
if settings.I18N:
    urlpatterns += i18n_patterns(path("", include(wagtail_urls)), prefix_default_language=settings.PREFIX_DEFAULT_LANGUAGE)
else:
    urlpatterns += [path("", include(wagtail_urls))]
