"""Lab Wagtail project, parametrised by environment variables:
LAB_STATE     directory for this instance (sqlite file, media, generated migrations)   [required]
LAB_DB        sqlite | postgres                                                       [sqlite]
LAB_PG_NAME   PostgreSQL database name (127.0.0.1:5432, user postgres, trust auth)    [cms_lab]
LAB_API       v2 -> /api/v2/ with pages, images, documents; v1cms -> /api/v1/cms/ with pages only  [v2]
LAB_I18N      1 | 0  (WAGTAIL_I18N_ENABLED)                                           [1]
LAB_PORT      port written into the Site records by the seed command                 [8000]
LAB_LIMIT_MAX WAGTAILAPI_LIMIT_MAX if set (Wagtail's default is 20)
LAB_LOCALE_MW 1 | 0  django.middleware.locale.LocaleMiddleware in MIDDLEWARE                [0]
              (with it and i18n_patterns, every 404 under /api/ becomes a 302 to /en/api/...; see FACTS.md)
LAB_PREFIX_DEFAULT_LANGUAGE 1 | 0  i18n_patterns(prefix_default_language=...)          [1]
LAB_PURGE_URL  e.g. http://127.0.0.1:8801: Wagtail's frontend cache sends its PURGEs there (HTTPBackend),
              as a site pointed at cms-shield would; unset: no PURGE is sent
"""
import os, sys
import django
import wagtail

STATE = os.environ["LAB_STATE"]
WAGTAIL_MAJOR = wagtail.VERSION[0]
# per-instance generated migrations for the "home" app (they differ between Wagtail versions)
MIG_ROOT = os.path.join(STATE, "migrations")
os.makedirs(os.path.join(MIG_ROOT, "lab_home_migrations"), exist_ok=True)
open(os.path.join(MIG_ROOT, "lab_home_migrations", "__init__.py"), "a").close()
sys.path.insert(0, MIG_ROOT)
MIGRATION_MODULES = {"home": "lab_home_migrations"}

SECRET_KEY = "lab-not-secret"
DEBUG = False
ALLOWED_HOSTS = ["*"]
USE_TZ = True
TIME_ZONE = "UTC"
USE_I18N = True
LANGUAGE_CODE = "en"

I18N = os.environ.get("LAB_I18N", "1") == "1"
WAGTAIL_I18N_ENABLED = I18N
LANGUAGES = WAGTAIL_CONTENT_LANGUAGES = [("en", "English"), ("de", "German")]
API_LAYOUT = os.environ.get("LAB_API", "v2")
if os.environ.get("LAB_LIMIT_MAX"):
    WAGTAILAPI_LIMIT_MAX = int(os.environ["LAB_LIMIT_MAX"])

INSTALLED_APPS = [
    "home",
    "wagtail.api.v2",
    "rest_framework",
    "wagtail.contrib.simple_translation",
    "wagtail.locales",
    "wagtail.sites",
    "wagtail.users",
    "wagtail.snippets",
    "wagtail.documents",
    "wagtail.images",
    "wagtail.search",
    "wagtail.admin",
    "wagtail",
    "modelcluster",
    "taggit",
    "django.contrib.auth",
    "django.contrib.contenttypes",
    "django.contrib.sessions",
    "django.contrib.messages",
    "django.contrib.staticfiles",
]
if WAGTAIL_MAJOR >= 7:
    INSTALLED_APPS.append("django_filters")
if os.environ.get("LAB_PURGE_URL"):
    INSTALLED_APPS.insert(0, "wagtail.contrib.frontend_cache")
    WAGTAILFRONTENDCACHE = {"shield": {"BACKEND": "wagtail.contrib.frontend_cache.backends.HTTPBackend",
                                       "LOCATION": os.environ["LAB_PURGE_URL"]}}

MIDDLEWARE = [
    "django.middleware.security.SecurityMiddleware",
    "django.contrib.sessions.middleware.SessionMiddleware",
    "django.middleware.common.CommonMiddleware",
    "django.middleware.csrf.CsrfViewMiddleware",
    "django.contrib.auth.middleware.AuthenticationMiddleware",
    "django.contrib.messages.middleware.MessageMiddleware",
    "django.middleware.clickjacking.XFrameOptionsMiddleware",
]
if os.environ.get("LAB_LOCALE_MW", "0") == "1":
    MIDDLEWARE.insert(2, "django.middleware.locale.LocaleMiddleware")
PREFIX_DEFAULT_LANGUAGE = os.environ.get("LAB_PREFIX_DEFAULT_LANGUAGE", "1") == "1"
ROOT_URLCONF = "labsite.urls"
WSGI_APPLICATION = "labsite.wsgi.application"
TEMPLATES = [{
    "BACKEND": "django.template.backends.django.DjangoTemplates",
    "DIRS": [], "APP_DIRS": True,
    "OPTIONS": {"context_processors": [
        "django.template.context_processors.debug", "django.template.context_processors.request",
        "django.contrib.auth.context_processors.auth", "django.contrib.messages.context_processors.messages"]},
}]

if os.environ.get("LAB_DB", "sqlite") == "postgres":
    DATABASES = {"default": {"ENGINE": "django.db.backends.postgresql", "NAME": os.environ.get("LAB_PG_NAME", "cms_lab"),
                             "USER": "postgres", "HOST": "127.0.0.1", "PORT": "5432"}}
else:
    DATABASES = {"default": {"ENGINE": "django.db.backends.sqlite3", "NAME": os.path.join(STATE, "db.sqlite3")}}
DEFAULT_AUTO_FIELD = "django.db.models.AutoField"

STATIC_URL = "/static/"
STATIC_ROOT = os.path.join(STATE, "static")
MEDIA_URL = "/media/"
MEDIA_ROOT = os.path.join(STATE, "media")

WAGTAIL_SITE_NAME = "cms-shield lab"
WAGTAILADMIN_BASE_URL = "http://localhost:%s" % os.environ.get("LAB_PORT", "8000")
WAGTAILSEARCH_BACKENDS = {"default": {"BACKEND": "wagtail.search.backends.database"}}
WAGTAILDOCS_EXTENSIONS = ["csv", "pdf", "txt"]
# serve documents directly from MEDIA_URL-less view (default 'serve_view'); keep default
LOGGING = {"version": 1, "disable_existing_loggers": False,
           "handlers": {"console": {"class": "logging.StreamHandler"}},
           "loggers": {"django.request": {"handlers": ["console"], "level": "ERROR"}}}
SILENCED_SYSTEM_CHECKS = ["wagtailadmin.W001"]
