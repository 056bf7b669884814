from __future__ import annotations

import gc
import os

from django.core.asgi import get_asgi_application

os.environ.setdefault("DJANGO_SETTINGS_MODULE", "project.settings")
django_http = get_asgi_application()

from channels.auth import AuthMiddlewareStack  # noqa: E402  (needs Django set up)
from channels.routing import ProtocolTypeRouter, URLRouter  # noqa: E402
from django.contrib.staticfiles.handlers import ASGIStaticFilesHandler  # noqa: E402
from django.core.exceptions import SuspiciousFileOperation  # noqa: E402
from django.http import FileResponse, Http404, HttpRequest, HttpResponse  # noqa: E402

from chat.deadlines import ensure_sweeper  # noqa: E402
from chat.routing import websocket_urlpatterns  # noqa: E402
from project.security import ASGIApp, OwnOriginValidator, Receive, Scope, Send  # noqa: E402


class StartsBackgroundWork:
    """Daphne has no startup hook: the first request of any kind starts this process's deadline
    sweep, so questions whose process died expire even if no tab ever opens a websocket here."""

    def __init__(self, app: ASGIApp) -> None:
        self.app = app

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        ensure_sweeper()
        return await self.app(scope, receive, send)


class StaticFiles(ASGIStaticFilesHandler):
    """Daphne serves the vendored static files itself: a one-command install needs no proxy. A
    path that climbs out of the static folders (`/static/../manage.py`) is simply not a static
    file: a 404, not a 500 with a traceback."""

    def serve(self, request: HttpRequest) -> HttpResponse | FileResponse:
        try:
            return super().serve(request)
        except SuspiciousFileOperation as exc:
            raise Http404("No such static file.") from exc


application = ProtocolTypeRouter(
    {
        "http": StartsBackgroundWork(StaticFiles(django_http)),
        "websocket": StartsBackgroundWork(OwnOriginValidator(AuthMiddlewareStack(URLRouter(websocket_urlpatterns)))),
    }
)

# Everything imported so far lives as long as the process. Freezing it keeps the garbage
# collector's full passes off that heap: they were the p99 of the query tools.
gc.collect()
gc.freeze()
