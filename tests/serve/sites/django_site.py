"""A minimal Django project in one module (settings configured in code, no database, no file
written), with a ToolServer's MCP endpoint mounted at /mcp next to its own view by
:func:`raider_sync.serve.mount.mount` around Django's WSGI handler.

    gunicorn 'serve.sites.django_site:application'
    python -m waitress serve.sites.django_site:application
"""
from django.conf import settings

settings.configure(
    DEBUG=False, SECRET_KEY="a key for tests only", ALLOWED_HOSTS=["127.0.0.1", "localhost"],
    ROOT_URLCONF=__name__, INSTALLED_APPS=[], DATABASES={},
    MIDDLEWARE=["django.middleware.common.CommonMiddleware"])

from django.core.wsgi import get_wsgi_application  # noqa: E402 - needs the settings
from django.http import HttpResponse  # noqa: E402
from django.urls import path  # noqa: E402

from raider_sync.serve.mount import mount  # noqa: E402
from raider_sync.serve.serving_http import wsgi_app  # noqa: E402

from serve.sites.site_tools import site_tools  # noqa: E402


def hello(request) -> HttpResponse:
    return HttpResponse("hello from django")


urlpatterns = [path("hello", hello)]

# fewer long-lived streams than the server has threads (8), so calls are never starved; a
# comment on a silent stream every second, so that gunicorn (which does not tell an app that
# a client went) finds the streams of the clients gone within a second, and stops as soon
mcp_app = wsgi_app(site_tools(), path="/", max_streams=4, keepalive=1.0)
application = mount(get_wsgi_application(), "/mcp", mcp_app)
