from django.db import models
from wagtail.api import APIField
from wagtail.models import Page
try:
    from wagtail.fields import RichTextField
except ImportError:  # pragma: no cover
    from wagtail.core.fields import RichTextField


class StandardPage(Page):
    body = RichTextField(blank=True)
    api_fields = [APIField("body")]


class BlogIndexPage(Page):
    intro = models.CharField(max_length=250, blank=True)
    api_fields = [APIField("intro")]
    subpage_types = ["home.BlogPage"]


class BlogPage(Page):
    date = models.DateField("Post date")
    intro = models.CharField(max_length=250, blank=True)
    body = RichTextField(blank=True)
    api_fields = [APIField("date"), APIField("intro"), APIField("body")]
    parent_page_types = ["home.BlogIndexPage"]
