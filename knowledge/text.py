"""Plain-text helpers shared by ingestion, the offline engine and verification. No Django.

The offline engine's notion of "the same word" (terms) is deliberately small and symmetric: the
question and the sources go through the same normalisation, so a crude stemmer is enough.
"""

from __future__ import annotations

import functools
import re
from dataclasses import dataclass
from typing import Any

# Postgres' English stop words (snowball), plus a few words that carry no topic in questions.
STOPWORDS = frozenset(
    """
    a about above after again against all am an and any are as at be because been before being below
    between both but by can could did do does doing down during each few for from further had has have
    having he her here hers herself him himself his how i if in into is it its itself just me more most
    my myself no nor not now of off on once only or other our ours ourselves out over own same she should
    so some such than that the their theirs them themselves then there these they this those through to
    too under until up very was we were what when where which while who whom why will with would you your
    yours yourself yourselves s t don shouldn isn aren wasn weren hasn haven hadn doesn didn won wouldn
    couldn mustn let get got please thanks thank tell explain know want need way use using also via e g
    e.g i.e etc
    """.split()
)

# A word, or a technical token kept whole: HTTP/2, utf-8, v3.9, x-forwarded-for, LLM_BASE_URL,
# request.url_for. The whole token is a term of its own (rare, so it weighs a lot) and its
# alphabetic parts are terms too, so "HTTP/2" finds pages about HTTP/2 first and HTTP second.
# Postgres' parser keeps most such tokens whole as well (`http/2`, `v3.9`, `x-forwarded-for`);
# its queries are built by that same parser (selectors.full_text_query), so each side agrees
# with itself about what a token is.
_TOKEN = re.compile(r"[a-z0-9]+(?:[./\-_+][a-z0-9]+)*")
_WORD = re.compile(r"[a-z0-9]+")
_SUFFIXES = ("ations", "ation", "ings", "ing", "ies", "ied", "ed", "es", "ly", "s", "e")


# Irregular verb forms, read as their verb ("can I edit a message I sent?" is asked of "sends it
# again"). Not the forms that are words of their own too ("left", "found", "saw", "lead").
_IRREGULAR = {
    form: verb
    for verb, forms in {
        "send": "sent", "write": "wrote written", "make": "made", "take": "took taken", "run": "ran", "go": "went gone",
        "pay": "paid", "say": "said", "see": "seen", "tell": "told", "think": "thought", "build": "built",
        "begin": "began begun", "break": "broke broken", "choose": "chose chosen", "give": "gave given", "keep": "kept",
        "lose": "lost", "hide": "hid hidden", "forget": "forgot forgotten", "buy": "bought", "bring": "brought",
        "teach": "taught", "catch": "caught", "drive": "drove driven", "speak": "spoke spoken", "steal": "stole stolen",
        "freeze": "froze frozen", "wake": "woke woken", "shake": "shook shaken", "hold": "held", "understand": "understood",
    }.items()
    for form in forms.split()
}  # fmt: skip


@functools.lru_cache(maxsize=65_536)
def stem(word: str) -> str:
    if word in _IRREGULAR:
        return stem(_IRREGULAR[word])
    for suffix in _SUFFIXES:
        if word.endswith(suffix) and len(word) - len(suffix) >= 3:
            root = word[: -len(suffix)]
            return root + "y" if suffix in ("ies", "ied") else root
    return word


# Stop words as they look once stemmed: "uses" stems to "use", which is as empty as "use".
_STEMMED_STOPWORDS = frozenset(stem(w) for w in STOPWORDS)
_STOPWORD_FORMS = frozenset(w + ending for w in STOPWORDS for ending in ("s", "d", "ed", "ing", "ly")) | frozenset(
    w[:-1] + ending for w in STOPWORDS if w.endswith("e") for ending in ("ed", "ing")
)


def words(text: str) -> list[str]:
    """Lower-case alphanumeric words, split the way Postgres' parser splits LLM_BASE_URL."""
    return _WORD.findall(text.lower())


@functools.lru_cache(maxsize=65_536)
def _token_terms(token: str) -> tuple[str, ...]:
    out: list[str] = []
    parts = _WORD.findall(token)
    if len(parts) > 1:
        # The whole technical token, unstemmed: "utf-8" is not "utf-8s".
        if token not in STOPWORDS:
            out.append(token)
    for part in parts:
        if len(part) < 2 or (len(parts) > 1 and part.isdigit()) or part in STOPWORDS:
            continue
        stemmed = stem(part)
        if stemmed in _STEMMED_STOPWORDS:
            if part in _STOPWORD_FORMS:
                continue  # "uses", "wanted": a stop word's own forms are as empty as it is
            # "notes", "themes", "duration" only look like a stop word once cut ("not", "them",
            # "dur"): the word is kept, a plural as its singular.
            stemmed = part[:-1] if part.endswith("s") and not part.endswith("ss") else part
        out.append(stemmed)
    return tuple(out)


CASED_TOKEN = re.compile(r"[A-Za-z0-9]+(?:[./\-_+][A-Za-z0-9]+)*")
_CAMEL = re.compile(r"[A-Z]+(?=[A-Z][a-z])|[A-Z]?[a-z]+|[A-Z]+|[0-9]+")


# Two words that say one thing are one term. "Log out" and "sign in" are verbs, not the noun "log"
# or "sign": "where are the logs?" is not asked of "How do I log out?" ("the access log in JSON"
# stays the noun), and signing in is logging in. "Not sure" is "unsure", which a stop word alone
# would lose. Each pattern starts with one set of letters, which lets the search skip through long
# pages quickly (an alternation there made reading a page's terms a third slower).
_LOG_IN_OUT = re.compile(
    r"[LlSs](?:(?<![A-Za-z][Ll])[Oo][Gg]|(?<![A-Za-z][Ss])[Ii][Gg][Nn])(?i:s|ged|ging|ed|ing)?[ \t]+"
    r"(?P<way>(?i:out)\b|(?i:in)(?=[ \t]+(?i:as|to|with|again|first|once|here|there)\b|[ \t]*(?:[.,;:!?)]|$)))",
    re.MULTILINE,
)
_NOT_SURE = re.compile(r"(?P<not>[Nn](?:(?<![A-Za-z][Nn])[Oo][Tt]|['’][Tt]))[ \t]+(?P<unsure>[Ss]ure|[Cc]ertain|[Cc]lear)\b")
# Turning or switching a thing on or off ("turn it off") is enabling or disabling it, whichever
# words a page uses: "on" and "off" alone are stop words, and the question would lose its point.
# Found from the "on"/"off" back: "t" and "s" start too many words for a search from the verb.
_ON_OFF = re.compile(r"[ \t](?P<way>[Oo](?:[Nn]|[Ff][Ff]))\b")
_TURNED = re.compile(r"(?<![A-Za-z])(?i:turn|switch)(?i:s|es|ed|ing)?[ \t]+(?:(?i:it|them|this|that|these|those)[ \t]+)?$")


def _enabled_or_disabled(text: str) -> str:
    out: list[str] = []
    done = 0
    for way in _ON_OFF.finditer(text):
        if turned := _TURNED.search(text, max(done, way.start() - 24), way.start() + 1):
            out += [text[done : turned.start()], "disable" if way["way"].lower() == "off" else "enable"]
            done = way.end()
    return "".join([*out, text[done:]]) if out else text


# A box one types in is a thing of its own: "the chat box" is not what "start a new chat" asks about.
# Not "search box": searching is what one does with it ("how do I search my conversations?").
_A_BOX = re.compile(r"\b(?P<what>[Cc]hat|[Tt]ext|[Mm]essage|[Ii]nput|[Cc]heck)[ \t]+[Bb]ox(?P<plural>es)?\b")


def _one_term(text: str) -> str:
    if " box" in text or " Box" in text:  # seldom: the pattern is slow to look for everywhere
        text = _A_BOX.sub(lambda match: f"{match['what'].lower()}box{match['plural'] or ''}", text)
    text = _enabled_or_disabled(_LOG_IN_OUT.sub(lambda match: f"log{match['way'].lower()}", text))
    return _NOT_SURE.sub(r"\g<not> un\g<unsure>", text)


def term_list(text: str) -> list[str]:
    """Every term of a text, repeats included (for term frequencies). A CamelCase name is a
    term and so are its words: `SessionMiddleware` is found by "session middleware"."""
    out: list[str] = []
    text = _one_term(text)
    for token in CASED_TOKEN.findall(text):
        lowered = token.lower()
        out.extend(_token_terms(lowered))
        if token != lowered and token != token.upper() and not token[1:].islower():
            for part in _CAMEL.findall(token):
                if part.lower() != lowered:
                    out.extend(t for t in _token_terms(part.lower()) if t not in out[-8:])
    return out


@functools.lru_cache(maxsize=65_536)
def _terms_of_token(token: str) -> tuple[str, ...]:
    return tuple(term_list(token))


def name_parts(text: str) -> frozenset[str]:
    """Terms a text has only as parts of compound names: "wrap" in `wrap_long_dict_values`,
    "manager" in `TransformerManager` — the text is about the name, not about those words."""
    whole: set[str] = set()
    parts: set[str] = set()
    for token in CASED_TOKEN.findall(text):
        found = _terms_of_token(token)
        if len(found) > 1:
            whole.add(found[0])
            parts.update(found[1:])
        else:
            whole.update(found)
    return frozenset(parts - whole)


def terms(text: str) -> list[str]:
    """Distinct stemmed content terms (technical tokens kept whole too), in order of first appearance."""
    return list(dict.fromkeys(term_list(text)))


def search_words(text: str, *, limit: int = 24) -> list[str]:
    """Distinct non-stop words of a question, for an OR full-text query (Postgres stems them)."""
    seen: dict[str, None] = {}
    for word in words(text):
        if word not in STOPWORDS and len(word) >= 2:
            seen.setdefault(word, None)
    return list(seen)[:limit]


# ---------------------------------------------------------------------------- sentences


_SENTENCE_END = re.compile(r"(?<=[.!?…])\s+(?=[A-Z0-9`\"'(*_]|\[(?!\d{1,3}\]))")
_ABBREVIATION_END = re.compile(r"(?:\b(?:e\.g|i\.e|a\.k\.a|w\.r\.t|etc|vs|cf|approx|incl|Mr|Mrs|Dr|No)\.)$", re.IGNORECASE)
_LINK = re.compile(r"!?\[([^\]]*)\]\([^)]*\)")
_REF_LINK = re.compile(r"\[([^\]]+)\]\[[^\]]*\]")
_HTML_TAG = re.compile(r"</?[a-zA-Z][\w:-]*(?:\s+[^<>]*?)?/?>")
_CODE_SPAN = re.compile(r"(`+)(.+?)\1")


def split_sentences(text: str) -> list[str]:
    """Sentences of a paragraph. A citation marker stays with its sentence, an abbreviation
    ("e.g.") does not end one, and a trailing parenthesis ("(Default 100)") belongs to the
    sentence before it."""
    pieces = [s.strip() for s in _SENTENCE_END.split(text) if s.strip()]
    out: list[str] = []
    for piece in pieces:
        if out and (aside := _TRAILING_ASIDE.match(piece)):
            out[-1] = f"{out[-1]} {aside.group(0).strip()}"
            piece = piece[aside.end() :].strip()
            if not piece:
                continue
        if out and _ABBREVIATION_END.search(out[-1]):
            out[-1] = f"{out[-1]} {piece}"
        else:
            out.append(piece)
    return out


# "(Default 100)", "(optional)": a short parenthesis after a full stop completes that sentence.
_TRAILING_ASIDE = re.compile(r"^\([^()]{1,60}\)[.!?]?(?=\s|$)")


# A footnote's reference ("colorful[^win] output"), shown as a superscript: no words of the sentence.
_FOOTNOTE_REFERENCE = re.compile(r"\[\^[^\]\s]+\](?!:)")


def strip_links(text: str) -> str:
    """Markdown links become their text: a relative link would point nowhere outside its page."""
    text = _FOOTNOTE_REFERENCE.sub("", text)
    return _REF_LINK.sub(lambda m: m.group(1), _LINK.sub(lambda m: m.group(1), text))


def strip_html(text: str) -> str:
    """Inline HTML tags go (outside code spans): `<br>`, `<img …>`, `<kbd>` are not prose."""
    parts = _CODE_SPAN.split(text)
    # split() with one group pair yields [text, ticks, code, text, ticks, code, ...]
    out = []
    for i, part in enumerate(parts):
        if i % 3 == 0:
            out.append(_HTML_TAG.sub("", part))
        elif i % 3 == 1:
            continue
        else:
            out.append(f"{parts[i - 1]}{part}{parts[i - 1]}")
    return re.sub(r"[ \t]{2,}", " ", "".join(out))


# An interpreted-text role, reStructuredText's (:class:`~pkg.Name`) or MyST's ({py:func}`name`):
# written as the code it names ("~" keeps the last part, as Sphinx shows it); ``literal`` too.
# Not inside a code span: "`{today}` (the date) and `{snapshot}`" is two placeholders, no role.
# With an explicit title (:ref:`the options <options>`) it reads as its title, as Sphinx shows
# it; a reference to a page, a section or a glossary term is prose, not code.
_ROLE = re.compile(r"(?<!`)(?::(?P<rst>[\w:.+-]+):|\{(?P<myst>[\w:.+-]+)\})`(?P<tilde>~?)(?P<target>[^`\s][^`]*)`")
_TITLED = re.compile(r"(?P<title>.*?\S)\s*<[^<>]+>")
_PROSE_ROLES = frozenset({"ref", "doc", "term", "numref", "any", "download", "keyword"})
_LITERAL_ROLES = frozenset({"file", "samp", "envvar", "program", "option", "kbd", "command", "code", "literal"})
_RST_LITERAL = re.compile(r"``(?=\S)([^`]+?)``")
# reStructuredText's hyperlinks: `text <address>`_ (a Markdown link from here on, its text alone
# where the address is another page's label), `<address>`_, and a reference to a target defined
# elsewhere, `text`_ (its text).
_RST_LINK = re.compile(r"(?<![`\w])`([^`<]*?)\s*<([^`>]+)>`__?(?!\w)")
_RST_REFERENCE = re.compile(r"(?<![`\w:}])`([^`<]+)`__?(?!\w)")


def _role_text(role: re.Match[str]) -> str:
    name = (role["rst"] or role["myst"]).rsplit(":", 1)[-1]
    if titled := _TITLED.fullmatch(role["target"]):
        return titled["title"] if name in _PROSE_ROLES else f"`{titled['title']}`"
    target = role["target"]
    if role["tilde"]:
        return f"`{target.rsplit('.', 1)[-1]}`"
    # ":meth:`.close`" searches for an object by the end of its name, and shows it without the dot;
    # ":file:`.env`" is the file's name.
    return f"`{target if name in _LITERAL_ROLES else target.lstrip('.') or target}`"


def strip_roles(text: str) -> str:
    text = _ROLE.sub(_role_text, text)
    text = _RST_LINK.sub(lambda m: f"[{m.group(1) or m.group(2)}]({m.group(2)})", text)
    text = _RST_REFERENCE.sub(r"\1", text)
    return _RST_LITERAL.sub(r"`\1`", text)


def inline_text(text: str) -> str:
    """One line of Markdown as plain prose: links as their text, no inline HTML, no emphasis marks
    around whole words (`**bold**` → bold), code spans kept."""
    text = strip_html(strip_links(strip_roles(text)))
    text = re.sub(r"(?<![\w*])(\*\*|__)(?=\S)(.+?)(?<=\S)\1(?![\w*])", r"\2", text)
    return " ".join(text.split())


# ---------------------------------------------------------------------------- document structure


@dataclass(frozen=True)
class Block:
    """A structural piece of a document: a paragraph, a list item, a code block or a table row."""

    kind: str  # "paragraph" | "item" | "code" | "row"
    text: str
    heading: str  # the nearest heading above it ("" before the first)
    section: int  # which section (a heading starts a new one)
    lead: str = ""  # the sentence ending in ":" that introduces a code block or a list
    lang: str = ""  # a code block's language
    header: str = ""  # a table row's header and delimiter lines
    links: tuple[str, ...] = ()  # the text of the links it held (to other pages, mostly)
    parents: tuple[str, ...] = ()  # a nested list item's enclosing items, outermost first
    targets: tuple[tuple[str, str], ...] = ()  # (text, address) of its links to other sites


@dataclass(frozen=True)
class Document:
    title: str
    headings: list[tuple[int, str]]  # (level, text) outside code
    blocks: list[Block]
    section_headings: list[tuple[str, ...]]  # per section: the heading path, outermost first


_ATX = re.compile(r"^(#{1,6})\s+(.*?)\s*#*\s*$")
_HEADING = _ATX
_LIST_ITEM = re.compile(r"^(\s*)(?:[-*+]|\d+[.)])\s+(.*)$")
_RST_UNDERLINE = re.compile(r"^([=\-~^\"'#*+:.`])\1{2,}\s*$")
_FENCE = re.compile(r"^(\s*)(```+|~~~+)\s*([\w+#.-]*)")
_ADMONITION = re.compile(r"^(?:!!!|\?\?\?\+?)\s*([\w-]+)(?:\s+\"([^\"]*)\")?\s*$|^===\+?\s+\"([^\"]*)\"\s*$")
_MKDOCSTRINGS = re.compile(r"^:::\s+[\w.]+\s*$")  # an API reference generated at build time
_RST_DIRECTIVE = re.compile(r"^\.\.\s+([\w:-]+)::\s*(.*)$")
_RST_PROSE_DIRECTIVES = {
    "note",
    "warning",
    "tip",
    "important",
    "caution",
    "attention",
    "hint",
    "danger",
    "error",
    "seealso",
    "admonition",
    "versionadded",
    "versionchanged",
    "deprecated",
    "topic",
    "sidebar",
    "container",
    "only",
    "dropdown",
    "tab",
    "group-tab",
    "list-table",
    "glossary",
}
# Sphinx's descriptions of an API object: the signature names a section of its own, and the body
# (its parameters, return value, notes) is prose.
_RST_OBJECT_DIRECTIVES = {
    "class",
    "function",
    "method",
    "attribute",
    "property",
    "data",
    "exception",
    "classmethod",
    "staticmethod",
    "decorator",
    "decoratormethod",
    "coroutinefunction",
    "coroutinemethod",
    "type",
    "envvar",
    "option",
    "cmdoption",
    "confval",
    "describe",
    "object",
}
# A field of a description: ":param int limit: …", ":returns: …", ":raises ValueError: …".
# Not a role at the start of a line (":class:`ContentCoding`." ends a sentence): a field's name is
# followed by a space or the end of the line.
_RST_FIELD = re.compile(r"^:([\w-]+)(?:\s+([^:]+))?:(?:\s+|$)(.*)$")
_RST_CODE_DIRECTIVES = {"code-block", "code", "sourcecode"}
# MyST's directives: ```{note} … ``` or :::{note} … ::: — the same names as reStructuredText's;
# the others (toctree, include, mermaid, eval-rst …) carry no prose of the page.
_MYST_DIRECTIVE = re.compile(r"^(\s*)(`{3,}|~{3,}|:{3,})\{([\w:-]+)\}\s*(.*)$")
_MYST_CODE_DIRECTIVES = _RST_CODE_DIRECTIVES | {"doctest", "testcode", "ipython", "code-cell"}
_TABLE_DELIMITER = re.compile(r"^\|?\s*:?-{3,}:?\s*(\|\s*:?-{3,}:?\s*)*\|?\s*$")
_HTML_BLOCK = re.compile(r"^</?[a-zA-Z][\w:-]*(?:\s[^>]*)?/?>.*$|^<!--")


def _link_texts(raw: str) -> tuple[str, ...]:
    return tuple(inline_text(m.group(1)) for m in re.finditer(r"(?<!!)\[([^\]]{3,})\]\(|\[([^\]]{3,})\]\[", raw) if m.group(1))


_ABSOLUTE_LINK = re.compile(r"(?<!!)\[([^\]]+)\]\((https?://[^)\s]+)(?:\s+\"[^\"]*\")?\)")


def _link_targets(raw: str) -> tuple[tuple[str, str], ...]:
    """(text, address) of the links to other sites: a quote keeps them (a relative link would point
    nowhere outside its page). Not a link whose text is a number, which would read as a citation."""
    found = ((inline_text(m.group(1)), m.group(2)) for m in _ABSOLUTE_LINK.finditer(strip_roles(raw)))
    return tuple((text, url) for text, url in found if text and not text.isdigit())


def with_links(text: str, targets: tuple[tuple[str, str], ...]) -> str:
    """`text` with the first mention of each link's text linked again, as Markdown: a mention
    inside a link made already (its text or its address) is not one."""
    for label, url in targets:
        made = [(m.start(), m.end()) for m in _LINK.finditer(text)]
        at = text.find(label)
        while at >= 0 and any(start <= at < end for start, end in made):
            at = text.find(label, at + 1)
        if at >= 0:
            text = f"{text[:at]}[{label}]({url}){text[at + len(label) :]}"
    return text


# How Sphinx labels a version directive, which it puts at the head of the directive's first paragraph.
_VERSION_LABELS = {"versionadded": "Added in version", "versionchanged": "Changed in version", "deprecated": "Deprecated since version"}


def _prose_directive_lines(name: str, argument: str, body: list[str]) -> list[str]:
    """A prose directive's content as lines to read: its argument first (an admonition's title is
    no part of its text). A version directive's explanation may start on its first line and go on
    in its body — one sentence — so it reads as Sphinx shows it: "Changed in version 1.17.1: This
    recipe is now part of …", not a bare version number and a sentence cut in two."""
    if name not in _VERSION_LABELS:
        return ([argument, ""] if argument and name != "admonition" else []) + body
    version, _, text = argument.partition(" ")
    label = f"{_VERSION_LABELS[name]} {version}".rstrip()
    rest = list(body)
    while rest and not rest[0].strip():
        rest.pop(0)
    if text.strip():
        return [f"{label}: {text.strip()}", *body]
    if rest and not re.match(r"[-*+]\s|\d+[.)]\s|\.\.\s|`{3}", rest[0]):
        return [f"{label}: {rest[0].strip()}", *rest[1:]]
    return [f"{label}.", "", *rest]


def _dedent(lines: list[str], width: int) -> list[str]:
    """Remove up to `width` leading spaces from each line (code keeps its own indentation)."""
    if width <= 0:
        return list(lines)
    return [line[min(width, len(line) - len(line.lstrip(" \t"))) :] for line in lines]


def _myst_body(body: list[str]) -> list[str]:
    """A MyST directive's content without its options (":class: tip" lines or a --- block first)."""
    start = 0
    if body and body[0].strip() == "---":
        start = next((k + 1 for k in range(1, len(body)) if body[k].strip() == "---"), 0)
    while start < len(body) and re.match(r"^\s*:[\w-]+:", body[start]):
        start += 1
    return body[start:]


# Joins the name of an object described inside another's description to its parent's
# ("StreamResponse" + "enable_compression(…)"): its section is named with both, and its signature
# is shown as the page writes it, without the parent.
_INSIDE = "\u2063."


def _description_body(body: list[str], *, parent: str) -> list[str]:
    """The body of an API object's description as prose: its fields as list items ("`limit` — …")
    and the objects described inside it named with it ("ClientSession.get")."""
    out: list[str] = []
    for line in body:
        stripped = line.strip()
        nested = _RST_DIRECTIVE.match(stripped) if line[:1] not in (" ", "\t") else None
        if nested and nested.group(1).lower().rsplit(":", 1)[-1] in _RST_OBJECT_DIRECTIVES and parent:
            signature = nested.group(2).strip()
            if not signature.startswith(parent.rsplit(".", 1)[-1] + "."):
                signature = f"{parent.rsplit('.', 1)[-1]}{_INSIDE}{signature}"
            out.append(f".. {nested.group(1)}:: {signature}")
            continue
        field = _RST_FIELD.match(line) if line[:1] not in (" ", "\t") else None
        if field:
            kind, argument, text = field.group(1).lower(), (field.group(2) or "").strip(), field.group(3)
            if kind in ("type", "vartype", "rtype"):
                label = f"`{argument.split()[-1]}` is of type" if argument else "Returns type"
            elif argument:
                label = f"`{argument.split()[-1]}`" + (f" ({' '.join(argument.split()[:-1])})" if len(argument.split()) > 1 else "")
                label = (
                    label
                    if kind in ("param", "parameter", "arg", "argument", "key", "keyword", "kwarg", "var", "ivar", "cvar")
                    else f"{kind.capitalize()} {label}"
                )
            else:
                label = kind.capitalize()
            out.append(f"- {label}: {text}" if text else f"- {label}:")
            continue
        out.append(line)
    return out


def _heading_text(text: str) -> str:
    text = inline_text(text)
    text = re.sub(r"\s*\{#[^}]*\}\s*$", "", text)  # "## Title {#anchor}" (attr_list)
    return text.replace("`", "").strip()


def parse(content: str, *, kind: str = "markdown") -> Document:
    """The structure of a Markdown (CommonMark/GFM/MkDocs), reStructuredText or plain-text page.

    Headings outside code (ATX, setext and RST underlines) open sections; admonition bodies
    (`!!! note "Title"` + an indented body, `.. note::`) are prose; fenced, indented and RST
    literal blocks are code; GFM table rows are rows; HTML blocks are left out.
    """
    lines = content.replace("\r\n", "\n").replace("\r", "\n").split("\n")
    blocks: list[Block] = []
    headings: list[tuple[int, str]] = []
    section_paths: list[tuple[str, ...]] = [()]
    stack: list[tuple[int, str]] = []
    front_title = ""
    rst_levels: list[str] = []
    para: list[str] = []
    item: list[str] | None = None
    # The open items of the current list, (indent, text): a nested item keeps its parents.
    open_items: list[tuple[int, str]] = []
    item_indent = 0
    lead = ""
    i = 0

    if lines and lines[0].strip() == "---":  # YAML front matter
        for j in range(1, min(len(lines), 200)):
            if lines[j].strip() in ("---", "..."):
                for meta in lines[1:j]:
                    if m := re.match(r"^title:\s*[\"']?(.*?)[\"']?\s*$", meta):
                        front_title = m.group(1)
                i = j + 1
                break

    def section() -> int:
        return len(section_paths) - 1

    def heading() -> str:
        return stack[-1][1] if stack else ""

    def add(kind_: str, text: str, **extra: Any) -> None:
        blocks.append(Block(kind_, text, heading(), section(), **extra))

    def flush() -> None:
        nonlocal para, item, lead
        if item is not None:
            raw = " ".join(item)
            text = inline_text(raw)
            if text:
                parents = tuple(t for indent, t in open_items if indent < item_indent)
                add("item", text, lead=lead, links=_link_texts(raw), parents=parents, targets=_link_targets(raw))
                open_items[:] = [(indent, t) for indent, t in open_items if indent < item_indent] + [(item_indent, text)]
            item = None
        if para:
            open_items.clear()
            raw = " ".join(para)
            text = inline_text(raw)
            para = []
            if text:
                add("paragraph", text, links=_link_texts(raw), targets=_link_targets(raw))
                last = split_sentences(text)[-1] if text else ""
                lead = last if last.endswith(":") else ""
                return

    # The level of the page's own last heading: API objects described under it are one deeper,
    # each a sibling of the others (a method's name carries its class's).
    page_level = 0

    def object_level() -> int:
        return page_level + 1

    def open_heading(level: int, text: str, *, describes: bool = False) -> None:
        nonlocal lead, page_level
        flush()
        lead = ""
        text = _heading_text(text)
        if not text:
            return
        if not describes:
            page_level = level
        headings.append((level, text))
        while stack and stack[-1][0] >= level:
            stack.pop()
        stack.append((level, text))
        section_paths.append(tuple(t for _, t in stack))

    while i < len(lines):
        line = lines[i]
        stripped = line.strip()
        following = lines[i + 1].strip() if i + 1 < len(lines) else ""

        if myst := _MYST_DIRECTIVE.match(line):
            flush()
            marker, name, argument = myst.group(2), myst.group(3).lower().rsplit(":", 1)[-1], myst.group(4).strip()
            closing = re.compile(re.escape(marker[0]) + "{%d,}" % len(marker))
            j = i + 1
            while j < len(lines) and not closing.fullmatch(lines[j].strip()):
                j += 1
            body = _myst_body(lines[i + 1 : j])
            width = min((len(b) - len(b.lstrip()) for b in body if b.strip()), default=0)
            if name in _RST_PROSE_DIRECTIVES or name in _RST_OBJECT_DIRECTIVES:
                lines[i + 1 : j + 1] = _prose_directive_lines(name, argument, _dedent(body, width))
                i += 1
                continue
            if name in _MYST_CODE_DIRECTIVES:
                code = "\n".join(_dedent(body, width)).strip("\n")
                if code.strip():
                    add("code", code, lead=lead, lang=argument.split()[0] if argument and name != "doctest" else "python")
                lead = ""
            i = j + 1
            continue

        if stripped.startswith(": ") and not para and item is None and blocks and blocks[-1].kind == "paragraph":
            # A MyST definition list: the term, then ": its definition" — one item, read together.
            term = blocks.pop().text.rstrip(":").strip()
            item, item_indent, lead = [f"{term}: {stripped[2:]}"], 0, ""
            i += 1
            continue

        if fence := _FENCE.match(line):
            flush()
            indent, marker, lang = len(fence.group(1)), fence.group(2), fence.group(3)
            body = []
            i += 1
            while i < len(lines) and not lines[i].strip().startswith(marker):
                body.append(lines[i])
                i += 1
            code = "\n".join(_dedent(body, indent)).strip("\n")
            if code.strip():
                add("code", code, lead=lead, lang=lang)
            lead = ""
            i += 1
            continue

        if not stripped:
            if item is not None and following and (lines[i + 1][:2].isspace() and not _LIST_ITEM.match(lines[i + 1])):
                i += 1  # a blank line inside a list item
                continue
            flush()
            i += 1
            continue

        if _ADMONITION.match(stripped):
            flush()
            # The indented body is prose: parse it in place, dedented.
            j = i + 1
            body = []
            while j < len(lines) and (not lines[j].strip() or lines[j][:1].isspace()):
                body.append(lines[j])
                j += 1
            lines[i + 1 : j] = _dedent(body, 4)
            i += 1
            continue

        if _MKDOCSTRINGS.match(stripped):
            flush()
            j = i + 1
            while j < len(lines) and (not lines[j].strip() or lines[j][:1].isspace()):
                j += 1  # its indented options
            i = j
            continue

        if directive := _RST_DIRECTIVE.match(stripped):
            flush()
            name = directive.group(1).lower().rsplit(":", 1)[-1]  # "py:class" is "class"
            signature_lines = [directive.group(2).strip()]
            j = i + 1
            while signature_lines[-1].endswith("\\") and j < len(lines):  # a signature continued on the next line
                signature_lines.append(lines[j].strip())
                j += 1
            written = [signature_lines[0].split(_INSIDE, 1)[-1], *signature_lines[1:]]  # as the page writes it
            signature = " ".join(line.removesuffix("\\").strip() for line in signature_lines).replace(_INSIDE, ".")
            body = []
            while j < len(lines) and (not lines[j].strip() or lines[j][:1].isspace()):
                body.append(lines[j])
                j += 1
            width = min((len(b) - len(b.lstrip()) for b in body if b.strip()), default=0)
            if name in _RST_OBJECT_DIRECTIVES and signature:
                object_name = re.match(r"[^\s(=\[]+", signature)
                open_heading(object_level(), object_name.group(0) if object_name else signature, describes=True)
                if re.search(r"[(=]", signature):
                    add("code", "\n".join(written), lang="python")  # as written, so it is found in the page
                lines[i + 1 : j] = _description_body(_dedent(body, width), parent=object_name.group(0) if object_name else "")
                i += 1
                continue
            if name in _RST_PROSE_DIRECTIVES:
                lines[i + 1 : j] = _prose_directive_lines(name, directive.group(2).strip(), _dedent(body, width))
                i += 1
                continue
            if name in _RST_CODE_DIRECTIVES:
                code = "\n".join(_dedent([b for b in body if not b.strip().startswith(":")], width)).strip("\n")
                if code.strip():
                    add("code", code, lead=lead, lang=directive.group(2).strip())
                lead = ""
            i = j
            continue

        if stripped.startswith("..") and not stripped.startswith("..."):  # an RST comment or target
            flush()
            j = i + 1
            while j < len(lines) and lines[j].strip() and lines[j][:1].isspace():
                j += 1
            i = j
            continue

        if (m := _ATX.match(stripped)) and not line.startswith(("    ", "\t")):
            open_heading(len(m.group(1)), m.group(2))
            i += 1
            continue

        if re.fullmatch(r"(?:-\s*){3,}|(?:\*\s*){3,}|(?:_\s*){3,}", stripped) and not (para and kind == "rst"):
            if para and kind != "rst" and stripped.startswith("-"):
                # "Some text\n---" is a setext heading in Markdown.
                text = " ".join(para)
                para = []
                open_heading(2, text)
            else:
                flush()
            i += 1
            continue

        # RST over+underlined heading
        if _RST_UNDERLINE.match(stripped) and following and i + 2 < len(lines) and lines[i + 2].strip() == stripped and not para:
            char = "o" + stripped[0]
            if char not in rst_levels:
                rst_levels.append(char)
            open_heading(rst_levels.index(char) + 1, following)
            i += 3
            continue

        # Setext (Markdown) or RST underlined heading: this line is the heading text.
        if (
            following
            and _RST_UNDERLINE.match(following)
            and not para
            and item is None
            and not _LIST_ITEM.match(line)
            and len(following) >= min(3, len(stripped))
        ):
            char = following[0]
            if kind == "rst":
                if char not in rst_levels:
                    rst_levels.append(char)
                level = rst_levels.index(char) + 1
            else:
                level = 1 if char == "=" else 2 if char == "-" else 3
            if char in "=-" or kind == "rst":
                open_heading(level, stripped)
                i += 2
                continue

        if stripped.startswith("|") or (stripped.count("|") >= 2 and _TABLE_DELIMITER.match(following)):
            flush()
            header_lines: list[str] = []
            if _TABLE_DELIMITER.match(following):
                header_lines = [stripped, following]
                i += 2
            while i < len(lines) and lines[i].strip().count("|") >= 1 and lines[i].strip():
                row = lines[i].strip()
                if not _TABLE_DELIMITER.match(row):
                    add("row", row, header="\n".join(header_lines))
                i += 1
            continue

        if _HTML_BLOCK.match(stripped):
            flush()
            if stripped.startswith("<!--"):
                while i < len(lines) and "-->" not in lines[i]:
                    i += 1
            i += 1
            continue

        if m := _LIST_ITEM.match(line):
            if para:
                flush()
            elif item is not None:
                flush_lead = lead
                flush()
                lead = flush_lead  # items of one list share the list's lead-in
            else:
                open_items.clear()
            item = [m.group(2)]
            item_indent = len(m.group(1).expandtabs(4))
            i += 1
            continue

        if item is not None and line[:1].isspace():
            item.append(stripped)
            i += 1
            continue

        if (line.startswith(("    ", "\t"))) and not para:
            # Indented code (after "Paragraph::" in RST, or a plain indented block).
            flush()
            body = []
            while i < len(lines) and (not lines[i].strip() or lines[i].startswith(("    ", "\t"))):
                body.append(lines[i])
                i += 1
            code = "\n".join(_dedent(body, 4)).strip("\n")
            if code.strip():
                add("code", code, lead=lead)
            lead = ""
            continue

        if item is not None:
            if not _RST_UNDERLINE.match(stripped):
                item.append(stripped)  # a lazy continuation line of the item
                i += 1
                continue
            flush()
        if stripped.endswith("::") and kind in ("rst", "text", "markdown"):
            # RST "Paragraph::" introduces a literal block and reads as "Paragraph:".
            para.append(stripped[:-1] if not stripped.endswith(" ::") else stripped[:-3])
            flush()
            i += 1
            continue
        para.append(re.sub(r"^>\s?", "", stripped))
        i += 1
    flush()

    title = _title(headings, front_title=front_title)
    return Document(title=title, headings=headings, blocks=blocks, section_headings=section_paths)


def _title(headings: list[tuple[int, str]], *, front_title: str) -> str:
    if front_title:
        return front_title
    # Only a top-level heading names the page; a page that starts at "##" has sections, not a title.
    return next((text for level, text in headings if level == 1), "")


# Large enough that the parses a build's statistics made are still there when a request first
# quotes from those pages (a few thousand sources).
@functools.lru_cache(maxsize=4096)
def parse_cached(content: str, kind: str = "markdown") -> Document:
    return parse(content, kind=kind)


@dataclass(frozen=True)
class Unit:
    """One quotable piece of a source: a sentence, a list item, a code block or a table row,
    with the heading it sits under."""

    text: str
    heading: str
    position: int
    linked: bool = False  # it pointed to another page: navigation more often than an answer
    kind: str = "sentence"  # "sentence" | "item" | "code" | "row"
    section: int = 0
    lead: str = ""  # the sentence that introduces it ("To install it, run:")
    lang: str = ""
    header: str = ""
    link_text: str = ""  # the text of the links in it: words there name another page
    parents: tuple[str, ...] = ()  # a nested list item's enclosing items, outermost first
    targets: tuple[tuple[str, str], ...] = ()  # (text, address) of its links to other sites

    @property
    def shown(self) -> str:
        """The text as quoted: its links to other sites stay links."""
        return with_links(self.text, self.targets)


def units(content: str, *, kind: str = "markdown") -> list[Unit]:
    """Quotable pieces of a document; headings, HTML and introductions on their own are not."""
    return list(_units(content, kind))


@functools.lru_cache(maxsize=512)
def _units(content: str, kind: str) -> tuple[Unit, ...]:
    out: list[Unit] = []
    for block in parse_cached(content, kind).blocks:
        if block.kind == "paragraph":
            for sentence in _with_short_answers(split_sentences(block.text)):
                inside = " ".join(link for link in block.links if link in sentence)
                if _quotable(sentence):
                    out.append(
                        Unit(
                            sentence,
                            block.heading,
                            len(out),
                            linked=_points_elsewhere(sentence, inside),
                            kind="sentence",
                            section=block.section,
                            link_text=inside,
                            targets=tuple((label, url) for label, url in block.targets if label in sentence),
                        )
                    )
        elif block.kind == "item":
            if len(block.text) >= 3 and len(words(block.text)) >= 1:
                linked = bool(block.links) and _is_link_only(block.text)
                inside = " ".join(block.links)
                out.append(
                    Unit(
                        block.text,
                        block.heading,
                        len(out),
                        linked=linked,
                        kind="item",
                        section=block.section,
                        lead=block.lead,
                        link_text=inside,
                        parents=block.parents,
                        targets=block.targets,
                    )
                )
        elif block.kind == "code":
            if len(block.text) <= 1200:
                out.append(Unit(block.text, block.heading, len(out), kind="code", section=block.section, lead=block.lead, lang=block.lang))
        elif block.kind == "row":
            out.append(Unit(block.text, block.heading, len(out), kind="row", section=block.section, header=block.header))
    return tuple(out)


def _points_elsewhere(sentence: str, link_text: str) -> bool:
    """A sentence that is mostly its links ("See [Configuration](...)") sends the reader elsewhere; a
    link inside a sentence that says something of its own does not."""
    return bool(link_text) and 2 * len(words(link_text)) >= len(words(sentence))


def _is_link_only(text: str) -> bool:
    return len(words(text)) <= 6 and not text.rstrip().endswith((".", "!", "?"))


def _with_short_answers(sentences: list[str]) -> list[str]:
    """A paragraph's short opening ("Not yet.", "Yes.") is an answer: it stays with the sentence after it."""
    if len(sentences) > 1 and len(words(sentences[0])) < 4 and not sentences[0].endswith(":"):
        return [f"{sentences[0]} {sentences[1]}", *sentences[2:]]
    return sentences


def _quotable(sentence: str) -> bool:
    # An introduction to a list or code block reads as a dangling half-thought out of context.
    return len(sentence) >= 20 and not sentence.endswith(":") and len(words(sentence)) >= 4


# The label a version directive's text starts with: shown, but no words of the page's own to
# match a question by ("how do I add --version?" is not about what changed in which version).
VERSION_LABEL = re.compile(rf"^(?:{'|'.join(_VERSION_LABELS.values())}) \S+?[:.](?=\s|$)")
# A version directive in a source, read with the label a quote of it carries ("Added in version").
_VERSION_DIRECTIVE = re.compile(
    rf"^[ \t]*(?:\.\.\s+(?P<rst>{'|'.join(_VERSION_LABELS)})::|(?:`{{3,}}|~{{3,}}|:{{3,}})\{{(?P<myst>{'|'.join(_VERSION_LABELS)})\}})",
    re.MULTILINE,
)


def normalise_for_match(text: str) -> str:
    """Lower-cased words joined by single spaces: markup, punctuation and markers do not count."""
    text = _VERSION_DIRECTIVE.sub(lambda m: _VERSION_LABELS[m["rst"] or m["myst"]], text)
    return " ".join(words(strip_html(strip_links(strip_roles(text)))))


def squash(text: str) -> str:
    """Whitespace-insensitive form of code, for checking a quoted block is in its source."""
    return "".join(text.split())


# ---------------------------------------------------------------------------- titles and summaries


def title_of(content: str, *, kind: str, fallback: str) -> str:
    """The first top-level heading outside code (front-matter `title:` first); a `#` comment in a
    fenced block is not a heading."""
    title = parse_cached(content, kind).title
    if title:
        return title[:300]
    if kind == "text":
        first = next((line.strip() for line in content.splitlines() if line.strip()), "")
        if first and len(first) <= 120:
            return first
    return fallback.replace("-", " ").replace("_", " ").strip().capitalize()[:300] or "Untitled"


def headings_of(content: str, *, kind: str = "markdown") -> list[str]:
    """Section headings below the title, outside code."""
    document = parse_cached(content, kind)
    return [text for level, text in document.headings if text != document.title]


SUMMARY_MAX_CHARS = 300


def clip(text: str, limit: int) -> str:
    text = " ".join(text.split())
    if len(text) <= limit:
        return text
    cut = text[: limit - 1].rsplit(" ", 1)[0].rstrip(",;:-— ")
    return cut + "…"


def extractive_summary(*, title: str, content: str, kind: str = "markdown") -> str:
    """The offline engine's index entry: the title, the opening sentence, the section headings."""
    opening = next((u.text for u in units(content, kind=kind) if u.kind == "sentence"), "")
    sections = [h for h in headings_of(content, kind=kind) if h.lower() != title.lower()][:8]
    summary = f"{title}."
    if opening:
        summary += f" {opening}"
    if not summary.endswith((".", "!", "?")):
        summary += "."
    if sections:
        summary += f" Sections: {', '.join(sections)}."
    return clip(summary, SUMMARY_MAX_CHARS)


def clean_summary(text: str) -> str:
    """One line of plain text: what a model wrote for the index, without quotes or Markdown."""
    # Markdown emphasis and code marks go; underscores inside names (LLM_BASE_URL) stay.
    text = strip_html(text)
    text = re.sub(r"`+|\*\*|__(?=\w)|(?<=\w)__|^#+\s*|^>\s*", "", text.strip(), flags=re.MULTILINE)
    text = text.strip().strip('"').strip("'")
    text = re.sub(r"^(summary|index entry)\s*:\s*", "", text, flags=re.IGNORECASE)
    text = re.sub(r"^\s*[-•]\s*", "", text, flags=re.MULTILINE)
    return clip(text, SUMMARY_MAX_CHARS)


# ---------------------------------------------------------------------------- HTML


# Page furniture rather than content, by tag and by the class/id names documentation themes use.
_HTML_DROP_TAGS = ["script", "style", "noscript", "svg", "nav", "footer", "form", "template", "iframe", "button", "aside", "link", "meta"]
_HTML_DROP_NAMES = re.compile(
    r"(?:^|[-_ ])(?:sidebar|breadcrumbs?|headerlink|toc|skip-link|md-nav|md-header|md-footer|navbar|cookie|banner)(?:$|[-_ ])", re.I
)


def html_to_text(html: str) -> tuple[str, str]:
    """(title, Markdown) of an HTML page: its main content (`<main>`, `role=main`, `<article>` or
    the body) converted by a real HTML parser and Markdown converter (BeautifulSoup +
    markdownify), headings as ATX headings, lists as lists, `<pre>` as fenced code, tables as
    GFM tables; navigation, scripts and page furniture left out."""
    from bs4 import BeautifulSoup
    from markdownify import MarkdownConverter

    soup = BeautifulSoup(html, "html.parser")
    title = " ".join(soup.title.get_text().split()) if soup.title else ""
    for tag in soup(_HTML_DROP_TAGS):
        tag.decompose()
    for tag in soup.find_all(True):
        if tag.decomposed or tag.attrs is None:
            continue
        names = " ".join([str(tag.get("id") or ""), *(str(c) for c in tag.get("class") or [])])
        if names.strip() and _HTML_DROP_NAMES.search(names):
            tag.decompose()
    main = soup.find("main") or soup.find(role="main") or soup.find("article") or soup.body or soup
    for header in main.find_all("header"):
        if not header.find(["h1", "h2", "h3"]):
            header.decompose()  # a site header inside the content column; an article's own header stays
    converter = MarkdownConverter(
        heading_style="ATX",
        bullets="-",
        strip=["img", "a", "b", "strong", "i", "em", "span"],
        escape_underscores=False,
        escape_asterisks=False,
    )
    text = converter.convert_soup(main)
    lines = [line.rstrip() for line in text.splitlines()]
    cleaned = re.sub(r"\n{3,}", "\n\n", "\n".join(lines)).strip()
    return title, cleaned
