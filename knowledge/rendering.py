"""Markdown → sanitized HTML, for source pages and assistant replies alike. Whatever a source or a
model writes, only this whitelist reaches a page."""
from __future__ import annotations

import posixpath
import re
import threading
from typing import Callable

import markdown as markdown_lib
import nh3
from django.utils.safestring import SafeString, mark_safe

ALLOWED_TAGS = {
    "p", "br", "strong", "em", "del", "code", "pre", "blockquote", "hr",
    "ul", "ol", "li", "h1", "h2", "h3", "h4", "h5", "h6", "a",
    "table", "thead", "tbody", "tr", "th", "td", "dl", "dt", "dd",
}  # fmt: skip
ALLOWED_ATTRIBUTES = {"a": {"href", "title"}, "th": {"align"}, "td": {"align"}}


_converter = threading.local()


def markdown_html(text: str) -> str:
    # Building a converter costs more than converting a reply; one per thread, reset per use.
    if not hasattr(_converter, "md"):
        _converter.md = markdown_lib.Markdown(extensions=["fenced_code", "tables", "sane_lists"])
    return _converter.md.reset().convert(text or "")


def sanitized(html: str) -> SafeString:
    return mark_safe(
        nh3.clean(
            html,
            tags=ALLOWED_TAGS,
            attributes=ALLOWED_ATTRIBUTES,
            url_schemes={"http", "https", "mailto"},
            link_rel="noopener noreferrer nofollow",
        )
    )


def render_markdown(text: str) -> SafeString:
    return sanitized(markdown_html(text))


def render_source(content: str, *, kind: str, title: str = "") -> SafeString:
    """Markdown (and the Markdown-ish text HTML pages are stored as) rendered; other text as-is.

    A leading "# <title>" is left out: the page shows the title already.
    """
    content = content or ""
    first, _, rest = content.lstrip().partition("\n")
    if title and first.strip().lstrip("#").strip() == title.strip() and first.lstrip().startswith("#"):
        content = rest
    if kind in ("markdown", "html"):
        return render_markdown(content)
    # Plain text and reStructuredText are shown as written, paragraphs kept.
    return sanitized("".join(f"<p>{_escape(p).replace(chr(10), '<br>')}</p>" for p in content.split("\n\n") if p.strip()))


def _escape(text: str) -> str:
    return text.replace("&", "&amp;").replace("<", "&lt;").replace(">", "&gt;")


_RELATIVE_LINK = re.compile(r"(\]\()([^)\s#:]+\.(?:md|markdown|txt|rst|html?))(#[^)\s]*)?(\))")


def relative_link_targets(content: str, *, source_id: str) -> dict[str, str]:
    """Links to sibling documents ("other-page.md") → the source ids they name."""
    folder = posixpath.dirname(source_id)
    return {m.group(2): posixpath.normpath(posixpath.join(folder, m.group(2))) for m in _RELATIVE_LINK.finditer(content or "")}


def resolve_relative_links(content: str, *, targets: dict[str, str], url_for: Callable[[str], str | None]) -> str:
    """Point links between indexed documents at their source pages; leave the others alone."""

    def replace(match: re.Match) -> str:
        url = url_for(targets.get(match.group(2), ""))
        return f"{match.group(1)}{url}{match.group(3) or ''}{match.group(4)}" if url else match.group(0)

    return _RELATIVE_LINK.sub(replace, content or "")

