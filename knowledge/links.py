"""Links to a cited source section that work without a session, for adapters (Discord, Slack bots):
signed with the project's SECRET_KEY (django.core.signing) and expiring after
KNOWLEDGE_LINK_MAX_AGE_SECONDS. Absolute with PUBLIC_BASE_URL (or the request's own host)."""

from __future__ import annotations

from django.conf import settings
from django.core import signing
from django.urls import reverse
from django.utils.text import slugify

SALT = "knowledge.shared-source-link"


def heading_anchor(heading: str) -> str:
    """The id the source page gives a heading (see rendering.render_source)."""
    return slugify(heading) or "section"


def signed_source_path(*, pk: int, section: str = "") -> str:
    token = signing.dumps({"s": pk}, salt=SALT, compress=True)
    path = reverse("knowledge:shared_source", args=[token])
    return f"{path}#{heading_anchor(section)}" if section else path


def source_pk_from_token(token: str) -> int:
    """The source a link names; signing.SignatureExpired or signing.BadSignature otherwise."""
    data = signing.loads(token, salt=SALT, max_age=settings.KNOWLEDGE_LINK_MAX_AGE_SECONDS)
    if not isinstance(data, dict) or not isinstance(data.get("s"), int):
        raise signing.BadSignature("malformed link")
    return data["s"]


def absolute(path: str, *, request_base: str = "") -> str:
    base = (settings.PUBLIC_BASE_URL or request_base).rstrip("/")
    return f"{base}{path}" if base else path
