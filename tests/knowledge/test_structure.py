"""The knowledge base reads documents by their structure: each numbered defect of the
knowledge-quality issue has a test here (pure functions, no database)."""

from __future__ import annotations

from knowledge import offline
from knowledge.citations import cite, normalise
from knowledge.ranking import Corpus
from knowledge.text import extractive_summary, split_sentences, terms, title_of, units, with_links

# ---- 1. a quoted sentence ending in "..." keeps its citation, and verification accepts it

ELLIPSIS_DOC = "# Streaming\n\n## Iterating\n\nThe response body can be consumed in chunks, and the client waits for more...\n"


def test_a_sentence_ending_in_dots_keeps_its_marker_and_passes_verification():
    draft = offline.answer(question="How is the response body consumed in chunks?", sources=[("Streaming", ELLIPSIS_DOC)])
    assert draft.answered_from_sources
    assert draft.answer.endswith("waits for more [1]...")
    cited = cite(draft.answer, available=1, max_chars=1500)
    assert cited.text.endswith("[1]...")
    assert offline.verify(draft=cited.text, sources=[ELLIPSIS_DOC]).is_good_enough
    # A marker written after the dots moves before all of them, never between them.
    assert normalise("It waits for more... [1]", available=1).text == "It waits for more [1]..."
    assert split_sentences("It waits for more [1]... Then it stops [1].") == ["It waits for more [1]...", "Then it stops [1]."]


# ---- 2. technical tokens are kept whole, the same way in questions and pages


def test_technical_tokens_are_terms_of_their_own():
    assert {"http/2", "oauth2", "utf-8", "v3.9", "llm_base_url"} <= set(terms("HTTP/2, OAuth2, utf-8, v3.9 and LLM_BASE_URL"))
    # Their words are terms too, so "HTTP" still finds a page about HTTP/2.
    assert {"http", "utf", "llm", "url"} <= set(terms("HTTP/2 utf-8 LLM_BASE_URL"))


def test_a_question_naming_a_technical_token_finds_the_page_that_does():
    pages = [
        ("http2.md", "Protocols", "# Protocols\n\nHTTP/2 support is enabled with the http2 flag. HTTP is the default.\n", "markdown"),
        ("http.md", "HTTP basics", "# HTTP basics\n\nHTTP requests and HTTP responses. HTTP headers. HTTP methods.\n", "markdown"),
        ("enc.md", "Encodings", "# Encodings\n\nText is decoded as utf-8 unless the response says otherwise.\n", "markdown"),
        ("ver.md", "Versions", "# Versions\n\nPython v3.9 is the oldest version supported.\n", "markdown"),
    ]
    corpus = Corpus.build(pages)
    assert corpus.rank("Does it support HTTP/2?", limit=4)[0].source_id == "http2.md"
    assert corpus.rank("what is the default encoding, utf-8?", limit=4)[0].source_id == "enc.md"
    assert corpus.rank("is v3.9 supported", limit=4)[0].source_id == "ver.md"


def test_postgres_reads_a_questions_tokens_with_its_own_parser(db, tmp_path):
    from knowledge.selectors import full_text_query, rank_sources
    from tests.knowledge.conftest import build_kb

    build_kb(tmp_path / "kb", {
        "http2.md": "# Protocols\n\nHTTP/2 is enabled with a flag.\n",
        "http.md": "# Basics\n\nHTTP requests, HTTP responses and HTTP headers. Support is broad.\n",
    })  # fmt: skip
    assert [r.source_id.rsplit("/", 1)[-1] for r in rank_sources(query="Does it support HTTP/2?", limit=2)][0] == "http2.md"
    assert full_text_query("the of and") is None


# ---- 3. MkDocs admonitions: markers gone, bodies kept as prose

ADMONITION_DOC = """# Clients

!!! warning "Connection pools"
    A client keeps a pool of connections open, so close it when you are done with it.

!!! note
    Timeouts apply to every request the client sends.

??? tip "Collapsed"
    Reuse one client across requests for connection pooling.
"""


def test_admonition_markers_leave_and_their_bodies_are_quotable_prose():
    found = units(ADMONITION_DOC)
    texts = [u.text for u in found]
    assert "A client keeps a pool of connections open, so close it when you are done with it." in texts
    assert "Timeouts apply to every request the client sends." in texts
    assert all(u.kind == "sentence" for u in found)
    assert not any("!!!" in t or "???" in t or "warning" in t.lower() for t in texts)
    draft = offline.answer(question="Should I close the connection pool?", sources=[("Clients", ADMONITION_DOC)])
    assert "!!!" not in draft.answer and "close it when you are done" in draft.answer


# ---- 4. titles from the first top-level heading outside code; no raw HTML in summaries

CODE_COMMENT_DOC = """Some opening words about configuration that precede every heading here.

```python
# Config will be read from environment variables
config = Config(".env")
```

## Secrets

Secrets are hidden in tracebacks.
"""

HTML_DOC = """<p align="center"><img width="320" src="logo.png" alt="logo"></p>
<p align="center"><em>A fast toolkit.</em></p>

# Toolkit

The toolkit is a lightweight framework for building services.
"""


def test_a_comment_in_a_code_block_is_not_a_title_and_sections_are_not_titles():
    assert title_of(CODE_COMMENT_DOC, kind="markdown", fallback="config") == "Config"
    assert title_of("## Only a section\n\nText here.\n", kind="markdown", fallback="my-page") == "My page"
    assert title_of("---\ntitle: From front matter\n---\n\n# Other\n", kind="markdown", fallback="x") == "From front matter"
    assert title_of("Setext title\n============\n\nBody text.\n", kind="markdown", fallback="x") == "Setext title"


def test_summaries_and_units_hold_no_raw_html():
    summary = extractive_summary(title="Toolkit", content=HTML_DOC)
    assert summary.startswith("Toolkit. The toolkit is a lightweight framework")
    assert "<" not in summary and "img" not in summary
    assert title_of(HTML_DOC, kind="markdown", fallback="x") == "Toolkit"


# ---- 5. spaces before punctuation are only removed where a dropped marker left them, never in code


def test_code_keeps_its_spaces_and_brackets_through_citation_normalising():
    text = "Call it like this [1]:\n\n```python\ndef .iter_raw(self) :\n    return items[2] , x\n```\n\nThen `a [3] .b` works [1]."
    cited = normalise(text, available=1)
    assert "def .iter_raw(self) :" in cited.text and "items[2] , x" in cited.text and "`a [3] .b`" in cited.text
    assert cited.order == [1] and cited.dropped == []
    assert normalise("It works [7] .", available=1).text == "It works."


# ---- 6. a trailing "(Default 100)" stays with its sentence

DEFAULT_DOC = (
    "# Limits\n\n## Connections\n\nThe pool limits how many connections stay open. (Default 100) Idle ones are closed after a while.\n"
)


def test_a_trailing_parenthesis_belongs_to_the_sentence_before_it():
    assert split_sentences("The pool limits how many connections stay open. (Default 100) Idle ones are closed.") == [
        "The pool limits how many connections stay open. (Default 100)",
        "Idle ones are closed.",
    ]
    draft = offline.answer(question="What is the limit on connections that stay open in the pool?", sources=[("Limits", DEFAULT_DOC)])
    assert "(Default 100)" in draft.answer


# ---- 7. quotes carry their subject; code blocks, list items and table rows are quotable

HOWTO_DOC = """# Proxies

## Environment variables

If this environment variable is set, every request goes through the proxy.

## Configuring a proxy

To route requests through a proxy, pass its URL when creating the client:

```python
client = Client(proxy="http://localhost:8030")
```

## Supported schemes

| Scheme | Supported |
|---|---|
| http | yes |
| socks5 | with the socks extra |

The following options are accepted:

- `trust_env` - read HTTPS_PROXY from the environment.
- `verify` - check the proxy's certificate.
"""


def test_a_quote_gets_the_heading_that_gives_it_its_subject():
    draft = offline.answer(question="What happens if the proxy environment variable is set?", sources=[("Proxies", HOWTO_DOC)])
    assert draft.answer.startswith("**Environment variables** — If this environment variable is set")
    assert offline.verify(draft=draft.answer, sources=[HOWTO_DOC]).is_good_enough


def test_a_how_to_question_is_answered_with_the_code_block_and_its_lead_in():
    draft = offline.answer(question="How do I configure a proxy for the client?", sources=[("Proxies", HOWTO_DOC)])
    assert "To route requests through a proxy, pass its URL when creating the client [1]:" in draft.answer
    assert '```python\nclient = Client(proxy="http://localhost:8030")\n```' in draft.answer
    assert offline.verify(draft=draft.answer, sources=[HOWTO_DOC]).is_good_enough
    # A code block that is not in the cited source is rejected.
    forged = draft.answer.replace("8030", "9999")
    assert not offline.verify(draft=forged, sources=[HOWTO_DOC]).is_good_enough


def test_list_items_and_table_rows_are_quotable():
    kinds = {u.kind for u in units(HOWTO_DOC)}
    assert {"sentence", "code", "row", "item"} <= kinds
    rows = [u for u in units(HOWTO_DOC) if u.kind == "row"]
    assert rows[1].text == "| socks5 | with the socks extra |" and rows[1].header.startswith("| Scheme | Supported |")
    draft = offline.answer(question="Is socks5 a supported scheme?", sources=[("Proxies", HOWTO_DOC)])
    assert "| socks5 | with the socks extra |" in draft.answer
    assert offline.verify(draft=draft.answer, sources=[HOWTO_DOC]).is_good_enough
    draft = offline.answer(question="What does the trust_env option do?", sources=[("Proxies", HOWTO_DOC)])
    assert "- `trust_env` - read HTTPS_PROXY from the environment [1]." in draft.answer


def test_answers_respect_max_chars_and_quote_two_sources_when_one_is_not_enough():
    first = "# Timeouts\n\nThe connect timeout defaults to five seconds for every client.\n"
    second = "# Retries\n\nRetries happen three times on connection errors before giving up.\n"
    draft = offline.answer(
        question="What are the default connect timeout and the retries on connection errors?",
        sources=[("Timeouts", first), ("Retries", second)],
    )
    assert draft.citations == [1, 2] and "[1]" in draft.answer and "[2]" in draft.answer
    short = offline.answer(question="How do I configure a proxy for the client?", sources=[("Proxies", HOWTO_DOC)], max_chars=120)
    assert len(short.answer) <= 120


# ---- 8. rare terms weigh more than frequent ones; sections match as a whole

WEIGHTED = [
    (
        "auth.md",
        "Authentication",
        "# Authentication\n\n## Digest\n\nDigest authentication uses a challenge from the server. HTTP clients send it.\n",
        "markdown",
    ),
    ("http1.md", "Requests", "# Requests\n\nHTTP requests use HTTP methods. HTTP clients send HTTP requests.\n", "markdown"),
    ("http2.md", "Responses", "# Responses\n\nHTTP responses use HTTP status codes. HTTP clients read HTTP responses.\n", "markdown"),
]


def test_a_rare_term_outweighs_frequent_ones_in_ranking_and_answering():
    corpus = Corpus.build(WEIGHTED)
    question = "Which HTTP clients use digest?"
    assert corpus.rank(question, limit=3)[0].source_id == "auth.md"
    weights = corpus.weights(question)
    assert weights["digest"] > 2 * weights["http"]
    draft = offline.answer(question=question, sources=[(t, c) for _, t, c, _ in WEIGHTED], weights=weights)
    assert draft.answer.startswith("Digest authentication uses a challenge") and draft.citations == [1]
    # A page that only shares the frequent words does not answer.
    silent = offline.answer(
        question="Which HTTP clients use kerberos?",
        sources=[(t, c) for _, t, c, _ in WEIGHTED[1:]],
        weights=corpus.weights("Which HTTP clients use kerberos?"),
    )
    assert not silent.answered_from_sources


# ---- 9. stop words are removed after stemming


def test_stop_words_are_removed_after_stemming():
    assert terms("It uses the client") == ["client"]
    assert terms("using uses") == []


# ---- reStructuredText headings and directives


def test_rst_sections_and_note_directives():
    rst = "=======\nGuide\n=======\n\nIntro text for the whole guide goes here.\n\nInstall\n-------\n\n.. note:: Install it in a virtual environment first.\n\n.. code-block:: bash\n\n    pip install thing\n"
    assert title_of(rst, kind="rst", fallback="x") == "Guide"
    found = units(rst, kind="rst")
    assert ("sentence", "Install it in a virtual environment first.", "Install") in [(u.kind, u.text, u.heading) for u in found]
    assert ("code", "pip install thing") in [(u.kind, u.text) for u in found]


# ---- HTML pages through a real extractor


def test_html_pages_keep_their_main_content_as_markdown():
    from knowledge.text import html_to_text

    html = """<html><head><title>Timeouts - Docs</title></head><body>
    <header><a href="/">Site</a> <nav><a href="/a">A</a></nav></header>
    <div class="md-sidebar sidebar">Table of contents</div>
    <main><article><h1>Timeouts<a class="headerlink" href="#t">¶</a></h1>
    <p>The default timeout is <code>5.0</code> seconds.</p>
    <h2>Pool timeout</h2><ul><li>Raised as <code>PoolTimeout</code> when no connection frees up.</li></ul>
    <pre><code class="language-python">client = Client(timeout=10.0)
</code></pre>
    <table><thead><tr><th>Kind</th><th>Default</th></tr></thead><tbody><tr><td>connect</td><td>5.0</td></tr></tbody></table>
    </article></main><footer>© 2026</footer></body></html>"""
    title, text = html_to_text(html)
    assert title == "Timeouts - Docs"
    assert text.startswith("# Timeouts\n\nThe default timeout is `5.0` seconds.")
    assert "## Pool timeout" in text and "- Raised as `PoolTimeout`" in text
    assert "client = Client(timeout=10.0)" in text and "| connect | 5.0 |" in text
    assert "Table of contents" not in text and "©" not in text and "Site" not in text and "¶" not in text
    found = units(text)
    assert {u.kind for u in found} >= {"sentence", "item", "code", "row"}
    assert title_of(text, kind="markdown", fallback="x") == "Timeouts"


def test_content_tabs_are_prose_and_generated_api_references_are_skipped():
    doc = (
        '# Install\n\n=== "pip"\n\n    Install it with pip into a virtual environment.\n\n    ```shell\n    pip install thing\n    ```\n\n'
        '=== "conda"\n\n    Conda users install it from conda-forge instead.\n\n::: thing.Client\n    options:\n      show_source: false\n\nThe end of the page is here.\n'
    )
    found = [(u.kind, u.text) for u in units(doc)]
    assert ("sentence", "Install it with pip into a virtual environment.") in found
    assert ("code", "pip install thing") in found
    assert ("sentence", "Conda users install it from conda-forge instead.") in found
    assert not any("===" in t or ":::" in t or "show_source" in t for _, t in found)


# ---- Sphinx's descriptions of API objects are sections of their own, their fields list items

REFERENCE = """Client reference
================

.. class:: Session(base_url=None, *, \\
                   timeout=300)

   The class for making requests, with :class:`~pool.ConnectionPool` underneath.

   :param str base_url: Base part of the URL (optional)
      joined to relative URLs.

   :param timeout: seconds before a request gives up, ``300`` by default.

   .. method:: get(url)

      Send a GET request to the given URL, with the headers of a
      :class:`Request`.

   .. attribute:: closed

      ``True`` once the session is closed.

      .. versionadded:: 3.1
"""


def test_rst_object_descriptions_are_sections_and_their_fields_are_items():
    found = units(REFERENCE, kind="rst")
    assert [(u.kind, u.heading, u.text) for u in found] == [
        ("code", "Session", "Session(base_url=None, *, \\\ntimeout=300)"),
        ("sentence", "Session", "The class for making requests, with `ConnectionPool` underneath."),
        ("item", "Session", "`base_url` (str): Base part of the URL (optional) joined to relative URLs."),
        ("item", "Session", "`timeout`: seconds before a request gives up, `300` by default."),
        ("code", "Session.get", "get(url)"),  # as the page writes it
        ("sentence", "Session.get", "Send a GET request to the given URL, with the headers of a `Request`."),
        ("sentence", "Session.closed", "`True` once the session is closed."),
        ("sentence", "Session.closed", "Added in version 3.1."),
    ]
    corpus = Corpus.build([("client.rst", "Client reference", REFERENCE, "rst")])
    question = "What is the default timeout of a Session?"
    draft = offline.answer(question=question, sources=[("Client reference", REFERENCE, "rst")], weights=corpus.weights(question))
    assert "`300` by default" in draft.answer
    assert offline.verify(draft=draft.answer, sources=[REFERENCE]).is_good_enough
    question = "How do I send a GET request to a URL with headers?"
    draft = offline.answer(question=question, sources=[("Client reference", REFERENCE, "rst")], weights=corpus.weights(question))
    assert "```python\nget(url)\n```" in draft.answer and "headers of a `Request` [1]" in draft.answer
    assert offline.verify(draft=draft.answer, sources=[REFERENCE]).is_good_enough


def test_placeholders_in_code_spans_are_not_read_as_roles():
    """`{today}` followed by a code span is two spans, not MyST's {role}`target`."""
    page = "# Prompts\n\n## Chat prompts\n\nThe chat prompt fills in `{today}` (the person's date) and `{snapshot}` (the workspace).\n"
    assert [u.text for u in units(page)] == ["The chat prompt fills in `{today}` (the person's date) and `{snapshot}` (the workspace)."]
    assert [u.text for u in units("Call {py:func}`~pkg.run` or :class:`Session`.\n", kind="md")] == ["Call `run` or `Session`."]


# ---- MyST's directives and definition lists

MYST = """# Standard library

```{versionadded} 23.1.0
The `ExtraAdder` processor copies the extra attributes of log records into the event dictionary.
```

:::{important}
Since you call `get_logger` in module scope, it runs at import time, before any configuration.
:::

```{toctree}
getting-started
```

```{doctest}
>>> print("hello")
hello
```

{func}`~structlog.stdlib.add_log_level`:

: Adds the log level to the event dictionary under the key `level`.
  Levels are lower-cased.
"""


def test_myst_directives_are_prose_or_code_and_definition_lists_are_items():
    assert [(u.kind, u.text) for u in units(MYST)] == [
        (
            "sentence",
            "Added in version 23.1.0: The `ExtraAdder` processor copies the extra attributes of log records into the event dictionary.",
        ),
        ("sentence", "Since you call `get_logger` in module scope, it runs at import time, before any configuration."),
        ("code", '>>> print("hello")\nhello'),
        ("item", "`add_log_level`: Adds the log level to the event dictionary under the key `level`. Levels are lower-cased."),
    ]


def test_a_version_directive_reads_as_sphinx_shows_it_with_its_explanation_in_one_piece():
    page = """Checking the head
=================

.. versionchanged:: 1.17.1  This recipe is now part of the ``current``
   command, available from the command line as ``--check-heads``.

.. deprecated:: 2.0

   Use ``check`` instead.
"""
    assert [u.text for u in units(page, kind="rst")] == [
        "Changed in version 1.17.1: This recipe is now part of the `current` command, available from the command line as `--check-heads`.",
        "Deprecated since version 2.0: Use `check` instead.",
    ]


def test_a_quote_of_a_version_directive_is_verified_against_its_source():
    page = "Checking\n========\n\n.. versionadded:: 3.1\n\n.. versionchanged:: 1.17.1  Now part of the ``current``\n   command.\n"
    quoted = " ".join(f"{u.text} [1]" for u in units(page, kind="rst"))
    assert quoted == "Added in version 3.1. [1] Changed in version 1.17.1: Now part of the `current` command. [1]"
    assert offline.verify(draft=quoted, sources=[page]).is_good_enough
    assert not offline.verify(draft="Added in version 4.0. [1]", sources=[page]).is_good_enough


def test_a_footnote_reference_is_no_part_of_the_sentence():
    page = "# Output\n\nIt offers colorful[^win] console output.\n\n[^win]: Requires Colorama on Windows.\n"
    assert [u.text for u in units(page)][0] == "It offers colorful console output."


def test_a_role_with_an_explicit_title_reads_as_its_title():
    text = "Like :ref:`options <options>`, see {doc}`the tutorial <tutorial>` and :class:`the session <pkg.Session>`.\n"
    assert [u.text for u in units(text, kind="md")] == ["Like options, see the tutorial and `the session`."]
    text = "Use :paramref:`.command.current.check_heads`, :meth:`.close` or {py:meth}`~pkg.Session.close`; keep :file:`.env`.\n"
    assert [u.text for u in units(text, kind="md")] == ["Use `command.current.check_heads`, `close` or `close`; keep `.env`."]


RST_LINKS = """Installing
==========

Install it from `PyPI <https://pypi.org/project/tool/>`_ and read `the tutorial`_, or `<https://example.com/faq>`__ and `Other page <other>`_.

.. _the tutorial: https://example.com/tutorial
"""


def test_rst_hyperlinks_read_as_their_text_and_a_quote_keeps_those_to_other_sites():
    (unit,) = units(RST_LINKS, kind="rst")
    assert unit.text == "Install it from PyPI and read the tutorial, or https://example.com/faq and Other page."
    assert unit.shown == (
        "Install it from [PyPI](https://pypi.org/project/tool/) and read the tutorial, "
        "or [https://example.com/faq](https://example.com/faq) and Other page."
    )


def test_a_link_is_not_made_again_inside_another():
    targets = (("GitHub", "https://github.com/acme"), ("github", "https://github.com/other"), ("Hub", "https://hub.example.com"))
    assert with_links("On GitHub, see the github page.", targets) == (
        "On [GitHub](https://github.com/acme), see the [github](https://github.com/other) page."
    )
