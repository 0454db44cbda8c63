"""The editor scenario on a freshly seeded lab database (seed_lab's ids): a retitle, a move, a slug
change of a parent, an unpublish, a delete and a create, each published as an editor would. With
LAB_PURGE_URL set, Wagtail's frontend cache sends its PURGEs (it purges on publish and unpublish,
never on a move or a slug change). Prints one line per edit. Usage: manage.py edit_lab"""
from django.core.management.base import BaseCommand
from wagtail.models import Page

from home.models import StandardPage


def publish(page):
    page.save_revision().publish()


class Command(BaseCommand):
    help = "Run the editor scenario against the seeded lab tree"

    def handle(self, *args, **options):
        about = Page.objects.get(id=4).specific
        about.title = "About us (edited)"
        publish(about)
        self.stdout.write("retitle: page 4")

        # Page 22 (a Services child) below About.
        moved = Page.objects.get(id=22)
        moved.move(Page.objects.get(id=4), pos="last-child")
        self.stdout.write("move: page 22 below page 4")

        blog = Page.objects.get(id=7).specific
        blog.slug = "journal"
        publish(blog)
        self.stdout.write("slug change of a parent: page 7 -> journal")

        Page.objects.get(id=8).specific.unpublish()
        self.stdout.write("unpublish: page 8")

        Page.objects.get(id=9).specific.delete()
        self.stdout.write("delete: page 9")

        services = Page.objects.get(id=21)
        created = services.add_child(instance=StandardPage(title="New service", slug="new-service"))
        publish(created)
        self.stdout.write(f"create: page {created.id} below page 21")
