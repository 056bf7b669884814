"""Markdown → sanitized HTML, for source pages and assistant replies alike. Whatever a source or a
model writes, only this whitelist reaches a page.

CommonMark (markdown-it-py) plus GitHub-style tables and strikethrough: the shapes models emit —
nested lists indented by two spaces, fenced code with a language, tables, links — render as a
reader expects. Code blocks that name their language are highlighted here, on the server, with
Pygments, as spans of a handful of classes. Every fragment then passes the one nh3 allow-list below.
"""

from __future__ import annotations

import posixpath
import re
from typing import Callable, Mapping, Sequence, cast

import nh3
from django.utils.safestring import SafeString, mark_safe
from markdown_it import MarkdownIt
from markdown_it.common.utils import escapeHtml
from markdown_it.renderer import RendererHTML
from markdown_it.rules_core import StateCore
from markdown_it.rules_inline import StateInline
from markdown_it.token import Token
from markdown_it.utils import EnvType, OptionsDict
from pygments import lex
from pygments.lexers import get_lexer_by_name
from pygments.token import Comment, Generic, Keyword, Name, Number, Operator, String
from pygments.util import ClassNotFound

from project.text import BIDI_CONTROLS, bidi_marker, visible_bidi_controls

ALLOWED_TAGS = {
    "p", "br", "strong", "em", "del", "s", "code", "pre", "blockquote", "hr",
    "ul", "ol", "li", "h1", "h2", "h3", "h4", "h5", "h6", "a", "span",
    "table", "thead", "tbody", "tr", "th", "td", "dl", "dt", "dd",
}  # fmt: skip
ALLOWED_ATTRIBUTES = {
    "a": {"href", "title", "class", "target"},
    "span": {"class"},
    "code": {"class"},
    "ol": {"start"},
    "th": {"align", "style"},
    "td": {"align", "style"},
}
_LANGUAGE_CLASS = re.compile(r"^language-[A-Za-z0-9_+#.-]{1,40}$")
_CELL_ALIGN = re.compile(r"^text-align:\s*(left|right|center);?$")
CITATION_CLASS = "citation-ref"
BIDI_CLASS = "bidi-control"
_CLASSES = {"a": CITATION_CLASS, "span": BIDI_CLASS}

# The token kinds a code block colours (first match wins), each as the one class its spans carry.
_TOKEN_CLASSES = (
    (Comment, "hl-comment"),
    (String, "hl-string"),
    (Number, "hl-number"),
    (Keyword, "hl-keyword"),
    (Operator.Word, "hl-keyword"),
    (Name.Tag, "hl-keyword"),
    (Name.Builtin, "hl-builtin"),
    (Name.Function, "hl-name"),
    (Name.Class, "hl-name"),
    (Name.Decorator, "hl-name"),
    (Name.Attribute, "hl-name"),
    (Generic.Inserted, "hl-inserted"),
    (Generic.Deleted, "hl-deleted"),
)
HIGHLIGHT_CLASSES = frozenset(css for _, css in _TOKEN_CLASSES)
# Past this, a block is shown plain: a reply re-renders whole on every streamed piece.
HIGHLIGHT_MAX_CHARS = 20_000


def _token_class(kind: tuple[str, ...]) -> str:
    # A Pygments token type is a tuple of names (Name.Function is ("Name", "Function")); `kind in
    # token` holds for the token type itself and every type under it.
    return next((css for token, css in _TOKEN_CLASSES if kind in token), "")


def highlight_code(code: str, language: str, _attrs: str = "") -> str:
    """A fenced block's code as escaped HTML with its tokens in spans, or "" (markdown-it then
    escapes it plainly) when the language is not named or not known."""
    if not language or len(code) > HIGHLIGHT_MAX_CHARS:
        return ""
    try:
        lexer = get_lexer_by_name(language, stripnl=False, ensurenl=False)
    except ClassNotFound:
        return ""
    runs: list[tuple[str, str]] = []  # (class, text), neighbours of one class merged
    for kind, text in lex(code, lexer):
        css = _token_class(kind)
        if runs and runs[-1][0] == css:
            runs[-1] = (css, runs[-1][1] + text)
        else:
            runs.append((css, text))
    return "".join(f'<span class="{css}">{escapeHtml(text)}</span>' if css else escapeHtml(text) for css, text in runs)


def _attribute_filter(tag: str, attribute: str, value: str) -> str | None:
    """Classes and styles only where they carry meaning: a code block's language and its
    highlighted tokens, a citation marker, a shown bidirectional control, a table column's
    alignment."""
    if attribute == "class":
        if tag == "code":
            return value if _LANGUAGE_CLASS.match(value) else None
        if tag == "span" and value in HIGHLIGHT_CLASSES:
            return value
        return value if value == _CLASSES.get(tag) else None
    if attribute == "target":
        return value if value == "_blank" else None
    if attribute == "style":
        return value if _CELL_ALIGN.match(value) else None
    return value


_CITATION = re.compile(r"\[(\d{1,3})\](?![(:])")


def _citation_rule(state: StateInline, silent: bool) -> bool:
    """`[1]` becomes a link to the source numbered 1, when the renderer was given that source."""
    citations = state.env.get("citations") if isinstance(state.env, dict) else None
    if not citations or state.src[state.pos] != "[":
        return False
    match = _CITATION.match(state.src, state.pos)
    if not match or int(match.group(1)) not in citations:
        return False
    if not silent:
        n = int(match.group(1))
        url, title = citations[n]
        token = state.push("link_open", "a", 1)
        token.attrs = {"href": url, "class": CITATION_CLASS, "title": title, "target": "_blank"}
        state.push("text", "", 0).content = f"[{n}]"
        state.push("link_close", "a", -1)
    state.pos = match.end()
    return True


# Bidirectional controls are shown, not obeyed (see project.text): in text as a styled marker.


def _visible_controls_in_attributes(state: StateCore) -> None:
    """Attributes (a link's title, a code block's language) cannot hold the marker's markup: their
    controls become the marker's text. The URL is percent-encoded by the parser already."""
    stack = list(state.tokens)
    while stack:
        token = stack.pop()
        stack.extend(token.children or [])
        token.info = visible_bidi_controls(token.info)
        for name, value in (token.attrs or {}).items():
            if isinstance(value, str):
                token.attrs[name] = visible_bidi_controls(value)


def _marking_controls(default: Callable[..., str]) -> Callable[..., str]:
    """A render rule whose output (text escaped by `default`) shows each control as a marker."""

    def render(self: RendererHTML, tokens: Sequence[Token], idx: int, options: OptionsDict, env: EnvType) -> str:
        html = default(tokens, idx, options, env)
        return BIDI_CONTROLS.sub(lambda m: f'<span class="{BIDI_CLASS}">{_escape(bidi_marker(m.group()))}</span>', html)

    return render


def _parser(*, raw_html: bool) -> MarkdownIt:
    md = MarkdownIt("commonmark", {"html": raw_html, "highlight": highlight_code}).enable(["table", "strikethrough"])
    # Every link becomes a link and the sanitizer alone decides which URLs survive, so a
    # "[click](javascript:…)" reads as the word "click", not as raw Markdown.
    md.validateLink = lambda url: True  # type: ignore[method-assign]  # markdown-it-py's documented hook
    md.inline.ruler.before("link", "citation", _citation_rule)
    md.core.ruler.push("visible_bidi_controls", _visible_controls_in_attributes)
    # The rules that write text (escaped); attributes were taken care of above.
    renderer = cast(RendererHTML, md.renderer)  # MarkdownIt's default renderer
    for rule in ("text", "code_inline", "code_block", "fence"):
        md.add_render_rule(rule, _marking_controls(renderer.rules[rule]))
    return md


# Parsers are stateless between calls (render takes its own env), so one of each is shared.
_MODEL_TEXT = _parser(raw_html=False)
_SOURCE_TEXT = _parser(raw_html=True)


def markdown_html(text: str, *, raw_html: bool = False, citations: Mapping[int, tuple[str, str]] | None = None) -> str:
    """`raw_html`: pass HTML inside the text on to the sanitizer (documents); otherwise it is shown
    as written (a model's "<div>" is text). `citations`: n → (url, title) for `[n]` markers."""
    parser = _SOURCE_TEXT if raw_html else _MODEL_TEXT
    return parser.render(text or "", {"citations": dict(citations or {})})


def sanitized(html: str) -> SafeString:
    return mark_safe(
        nh3.clean(
            html,
            tags=ALLOWED_TAGS,
            attributes=ALLOWED_ATTRIBUTES,
            attribute_filter=_attribute_filter,
            url_schemes={"http", "https", "mailto"},
            link_rel="noopener noreferrer nofollow",
        )
    )


def render_markdown(text: str, *, citations: Mapping[int, tuple[str, str]] | None = None) -> SafeString:
    """A model's (or a person's) Markdown, as sanitized HTML."""
    return sanitized(markdown_html(text, citations=citations))


def render_source(content: str, *, kind: str, title: str = "") -> SafeString:
    """Markdown (and the Markdown-ish text HTML pages are stored as) rendered; other text as-is.

    A leading "# <title>" is left out: the page shows the title already.
    """
    content = content or ""
    first, _, rest = content.lstrip().partition("\n")
    if title and first.strip().lstrip("#").strip() == title.strip() and first.lstrip().startswith("#"):
        content = rest
    if kind in ("markdown", "html"):
        return _with_heading_ids(sanitized(markdown_html(content, raw_html=True)))
    # Plain text and reStructuredText are shown as written, paragraphs kept.
    return sanitized("".join(f"<p>{_escape(p).replace(chr(10), '<br>')}</p>" for p in content.split("\n\n") if p.strip()))


_HEADING_TAG = re.compile(r"<h([1-6])>(.*?)</h\1>", re.DOTALL)


def _with_heading_ids(html: str) -> SafeString:
    """Headings get ids (the slug of their text), so a citation link can open its section."""
    from django.utils.html import strip_tags
    from django.utils.text import slugify

    seen: dict[str, int] = {}

    def add_id(match: re.Match) -> str:
        slug = slugify(strip_tags(match.group(2))) or "section"
        seen[slug] = seen.get(slug, 0) + 1
        if seen[slug] > 1:
            slug = f"{slug}-{seen[slug]}"
        return f'<h{match.group(1)} id="{slug}">{match.group(2)}</h{match.group(1)}>'

    return mark_safe(_HEADING_TAG.sub(add_id, str(html)))


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
