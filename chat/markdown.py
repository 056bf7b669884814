"""Assistant Markdown → sanitized HTML. Whatever a model writes, only this whitelist reaches a page."""
from __future__ import annotations

import threading

import markdown as markdown_lib
import nh3
from django.utils.safestring import SafeString, mark_safe

ALLOWED_TAGS = {
    "p", "br", "strong", "em", "del", "code", "pre", "blockquote", "hr",
    "ul", "ol", "li", "h1", "h2", "h3", "h4", "a",
    "table", "thead", "tbody", "tr", "th", "td",
}  # fmt: skip
ALLOWED_ATTRIBUTES = {"a": {"href", "title"}, "th": {"align"}, "td": {"align"}}


_converter = threading.local()


def _markdown() -> markdown_lib.Markdown:
    # Building a converter costs more than converting a reply; one per thread, reset per use.
    if not hasattr(_converter, "md"):
        _converter.md = markdown_lib.Markdown(extensions=["fenced_code", "tables", "sane_lists"])
    return _converter.md.reset()


def render_markdown(text: str) -> SafeString:
    html = _markdown().convert(text or "")
    clean = nh3.clean(
        html,
        tags=ALLOWED_TAGS,
        attributes=ALLOWED_ATTRIBUTES,
        url_schemes={"http", "https", "mailto"},
        link_rel="noopener noreferrer nofollow",
    )
    return mark_safe(clean)
