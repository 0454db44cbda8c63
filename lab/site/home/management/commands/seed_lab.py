"""Deterministically seed an EMPTY (freshly migrated) lab database: two sites, page trees,
German translations, an alias, drafts, images and documents. Usage: manage.py seed_lab"""
import datetime
import io
import os
import shutil

from django.conf import settings
from django.core.files.base import ContentFile
from django.core.files.images import ImageFile
from django.core.management import call_command
from django.core.management.base import BaseCommand, CommandError
from django.db import transaction
from PIL import Image as PILImage
from wagtail.documents import get_document_model
from wagtail.images import get_image_model
from wagtail.models import Locale, Page
from wagtail.models import Site

from home.models import BlogIndexPage, BlogPage, StandardPage

UTC = datetime.timezone.utc
BASE = datetime.datetime(2024, 1, 1, 9, 0, tzinfo=UTC)
DE = {"Home": "Startseite", "About": "Über uns", "Team": "Team", "Contact": "Kontakt", "Blog": "Blog",
      "Services": "Leistungen", "Design": "Gestaltung", "Build": "Bauen", "Partner Home": "Partner-Startseite",
      "Partner News": "Partner-Neuigkeiten", "Partner About": "Über den Partner", "Products": "Produkte"}

# (title, slug, first_published hour offset or None=draft, show_in_menus)
MAIN_POSTS = [
    ("Alpha post", "alpha-post", 10, False), ("beta post", "beta-post", 11, False),
    ("Émile's notes", "emile-notes", 12, False), ("_underscore title", "underscore-title", 12, False),
    ("Zebra crossing", "zebra-crossing", 12, False), ("apple pie", "apple-pie", 13, False),
    ("Apple Tart", "apple-tart", 14, False), ("10 things", "10-things", 15, False),
    ("2 things", "2-things", 15, False), ("b-side", "b-side", 16, False),
    ("Öl und Wasser", "oel-und-wasser", 17, False), ("Draft post", "draft-post", None, False),
    ("Another draft", "another-draft", None, False),
]
PARTNER_POSTS = [
    ("Partner launch", "partner-launch", 30, False), ("partner update", "partner-update", 31, False),
    ("Zulu news", "zulu-news", 31, False), ("Äpfel", "aepfel", 32, False),
    ("Partner draft", "partner-draft", None, False), ("aardvark", "aardvark", 33, False),
]


class Command(BaseCommand):
    help = __doc__

    def handle(self, *args, **options):
        if Page.objects.filter(depth__gt=2).exists() or Site.objects.exclude(hostname="localhost", port=80).exists():
            raise CommandError("database is not fresh; recreate it first")
        port = int(os.environ.get("LAB_PORT", "8000"))
        shutil.rmtree(settings.MEDIA_ROOT, ignore_errors=True)
        with transaction.atomic():
            self.seed(port)
        call_command("update_index", verbosity=0)
        self.stdout.write("seeded: %d pages, %d sites" % (Page.objects.count(), Site.objects.count()))

    # --- helpers -------------------------------------------------------------------------
    def add(self, parent, cls, title, slug, hour, menus=False, **fields):
        page = parent.add_child(instance=cls(title=title, slug=slug, live=False, show_in_menus=menus, **fields))
        rev = page.save_revision()
        if hour is not None:
            rev.publish()
            self.stamp(page, hour)
        page.refresh_from_db()
        return page

    def stamp(self, page, hour):
        t = BASE + datetime.timedelta(hours=hour)
        Page.objects.filter(pk=page.pk).update(first_published_at=t, last_published_at=t, latest_revision_created_at=t)
        page.first_published_at = page.last_published_at = page.latest_revision_created_at = t

    # --- the seed --------------------------------------------------------------------------
    def seed(self, port):
        root = Page.objects.get(depth=1)
        Site.objects.all().delete()
        for p in Page.objects.filter(depth=2):
            p.delete()
        root.refresh_from_db()
        en = Locale.objects.get(language_code="en")
        pages = []  # (english page, hour) in tree order for translation

        def add(parent, cls, title, slug, hour, menus=False, translate=True, **fields):
            p = self.add(parent, cls, title, slug, hour, menus, **fields)
            if hour is not None and translate:
                pages.append((p, hour))
            return p

        # main site
        home = add(root, StandardPage, "Home", "home", 0, body="<p>Welcome to the main site.</p>")
        about = add(home, StandardPage, "About", "about", 1, True, body="<p>About us.</p>")
        team = add(about, StandardPage, "Team", "team", 2, body="<p>The team.</p>")
        add(about, StandardPage, "Contact", "contact", 2, True, body="<p>Contact.</p>")
        blog = add(home, BlogIndexPage, "Blog", "blog", 3, True, intro="All posts")
        for i, (title, slug, hour, menus) in enumerate(MAIN_POSTS):
            add(blog, BlogPage, title, slug, hour, menus, translate=(i % 5 != 4),
                date=datetime.date(2024, 2, 1) + datetime.timedelta(days=i % 7),
                intro="Intro of %s" % title, body="<p>Body of %s.</p>" % title)
        services = add(home, StandardPage, "Services", "services", 4, True, body="<p>Services.</p>")
        add(services, StandardPage, "Design", "design", 5, body="<p>Design.</p>")
        add(services, StandardPage, "Build", "build", 5, body="<p>Build.</p>")
        add(home, StandardPage, "Upcoming", "upcoming", None, body="<p>Not yet published.</p>")
        alias = team.create_alias(parent=services, update_slug="team-alias")
        self.stamp(alias, 6)

        # partner site (second child of the tree root)
        phome = add(root, StandardPage, "Partner Home", "partner-home", 20, body="<p>Partner.</p>")
        pnews = add(phome, BlogIndexPage, "Partner News", "news", 21, True, intro="Partner posts")
        for i, (title, slug, hour, menus) in enumerate(PARTNER_POSTS):
            add(pnews, BlogPage, title, slug, hour, menus, translate=(i != 5),
                date=datetime.date(2024, 3, 1) + datetime.timedelta(days=i % 3),
                intro="Intro of %s" % title, body="<p>Body of %s.</p>" % title)
        add(phome, StandardPage, "Partner About", "about", 22, True, body="<p>About the partner.</p>")
        products = add(phome, StandardPage, "Products", "products", 23, True, body="<p>Products.</p>")
        for j, name in enumerate(["Widget", "gadget", "Gizmo"]):
            add(products, StandardPage, name, name.lower(), 24 + (j > 0), body="<p>%s.</p>" % name)

        Site.objects.create(hostname="localhost", port=port, root_page=home, is_default_site=True, site_name="Main")
        Site.objects.create(hostname="partner.localhost", port=port, root_page=phome, site_name="Partner")

        # German translations (parents first; tree order guarantees it)
        if settings.WAGTAIL_I18N_ENABLED:
            de = Locale.objects.create(language_code="de")
            for page, hour in pages:
                page = page.specific
                copy = page.copy_for_translation(de)
                copy.title = DE.get(page.title, page.title + " (DE)")
                copy.save_revision().publish()
                self.stamp(copy, hour + 100)

        self.media()

    def media(self):
        Image = get_image_model()
        Document = get_document_model()
        specs = [("Red square", "red.png", (16, 16), (255, 0, 0), ["red", "square"]),
                 ("Green banner", "green.png", (64, 16), (0, 128, 0), ["green", "banner"]),
                 ("blue tall", "blue.png", (10, 40), (0, 0, 255), ["blue"]),
                 ("Alpha logo", "logo.png", (32, 32), (10, 20, 30), ["logo", "red"]),
                 ("Ümlaut image", "umlaut.png", (20, 20), (200, 200, 0), [])]
        for i, (title, name, size, color, tags) in enumerate(specs):
            buf = io.BytesIO()
            PILImage.new("RGB", size, color).save(buf, "PNG")
            img = Image(title=title, file=ImageFile(io.BytesIO(buf.getvalue()), name=name))
            img.save()
            img.tags.add(*tags)
            Image.objects.filter(pk=img.pk).update(created_at=BASE + datetime.timedelta(days=i))
        pdf = (b"%PDF-1.1\n1 0 obj<</Type/Catalog/Pages 2 0 R>>endobj\n2 0 obj<</Type/Pages/Kids[3 0 R]/Count 1>>endobj\n"
               b"3 0 obj<</Type/Page/Parent 2 0 R/MediaBox[0 0 72 72]>>endobj\ntrailer<</Root 1 0 R>>\n%%EOF\n")
        docs = [("Annual report", "report.pdf", pdf, ["report", "pdf"]),
                ("readme", "readme.txt", b"Read me.\n", ["text"]),
                ("Price list", "prices.csv", b"item,price\nwidget,1\n", ["text", "report"]),
                ("Zeitplan", "zeitplan.txt", b"Plan.\n", [])]
        for i, (title, name, data, tags) in enumerate(docs):
            doc = Document(title=title, file=ContentFile(data, name=name))
            doc.save()
            doc.tags.add(*tags)
            Document.objects.filter(pk=doc.pk).update(created_at=BASE + datetime.timedelta(days=i))
