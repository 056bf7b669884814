"""Thin views: the source page a citation opens, and Prometheus' /metrics."""

from __future__ import annotations

import hmac

from django.conf import settings
from django.contrib.auth.decorators import login_not_required
from django.core import signing
from django.http import Http404, HttpRequest, HttpResponse
from django.shortcuts import render
from django.views.decorators.http import require_GET
from prometheus_client import CONTENT_TYPE_LATEST

from knowledge import links, selectors
from knowledge import metrics as _metrics
from knowledge.models import KnowledgeSource
from knowledge.rendering import relative_link_targets, render_source, resolve_relative_links
from project.users import AuthenticatedHttpRequest


@require_GET
def source_page(request: AuthenticatedHttpRequest, pk: int) -> HttpResponse:
    try:
        source = selectors.source_for_page(pk=pk)
    except KnowledgeSource.DoesNotExist:
        raise Http404("No such knowledge-base source.") from None
    return _render_source(request, source)


@login_not_required  # the signature is the permission: adapters' users have no Clarion session
@require_GET
def shared_source_page(request: HttpRequest, token: str) -> HttpResponse:
    try:
        pk = links.source_pk_from_token(token)
    except signing.SignatureExpired:
        return HttpResponse("This knowledge-base link has expired; ask again for a fresh one.\n", status=403, content_type="text/plain")
    except signing.BadSignature:
        raise Http404("No such knowledge-base link.") from None
    try:
        source = selectors.source_for_page(pk=pk)
    except KnowledgeSource.DoesNotExist:
        raise Http404("No such knowledge-base source.") from None
    return _render_source(request, source)


def _render_source(request: HttpRequest, source: KnowledgeSource) -> HttpResponse:
    content = source.content
    if not source.is_url and (targets := relative_link_targets(content, source_id=source.source_id)):
        pages = selectors.page_urls_by_source_ids(source_ids=list(targets.values()))
        content = resolve_relative_links(content, targets=targets, url_for=pages.get)
    body = render_source(content, kind=source.kind, title=source.title)
    return render(request, "knowledge/source_page.html", {"source": source, "body": body})


def bearer_token(request: HttpRequest) -> str:
    scheme, _, token = request.headers.get("Authorization", "").partition(" ")
    return token.strip() if scheme.lower() == "bearer" else ""


@login_not_required  # a scraper has no session: METRICS_TOKEN, or a staff login
@require_GET
def metrics(request: HttpRequest) -> HttpResponse:
    token = bearer_token(request)
    allowed = bool(settings.METRICS_TOKEN) and hmac.compare_digest(token.encode(), settings.METRICS_TOKEN.encode())
    if not allowed and not (request.user.is_authenticated and request.user.is_staff):
        return HttpResponse(
            "Forbidden: log in as staff or send Authorization: Bearer <METRICS_TOKEN>.\n", status=403, content_type="text/plain"
        )
    return HttpResponse(_metrics.exposition(), content_type=CONTENT_TYPE_LATEST)
