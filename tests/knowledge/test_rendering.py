"""Markdown as models write it, rendered by CommonMark (markdown-it-py) through the one nh3 allow-list."""

from __future__ import annotations

import re

from knowledge.rendering import HIGHLIGHT_CLASSES, render_markdown, render_source


def test_nested_lists_indented_by_two_spaces_stay_nested():
    html = render_markdown("- Atlas\n  - design\n  - build\n- Harbor")
    assert html.replace("\n", "") == "<ul><li>Atlas<ul><li>design</li><li>build</li></ul></li><li>Harbor</li></ul>"


def test_ordered_list_inside_a_bulleted_list():
    html = render_markdown("1. Plan\n   - book the venue\n2. Ship")
    assert "<ol>" in html and html.index("<ul>") > html.index("<ol>") and "<li>book the venue</li>" in html


def test_fenced_code_keeps_its_language_and_escapes_its_text():
    html = render_markdown("```python\nif a < b:\n    print('<b>')\n```")
    assert html.startswith('<pre><code class="language-python">')
    # Highlighted on the server: the code's text is unchanged, its tokens sit in spans.
    assert (
        re.sub(r"</?span[^>]*>", "", html).strip()
        == "<pre><code class=\"language-python\">if a &lt; b:\n    print('&lt;b&gt;')\n</code></pre>"
    )
    assert '<span class="hl-keyword">if</span>' in html and "<span class=\"hl-string\">'&lt;b&gt;'</span>" in html


def test_code_blocks_are_highlighted_with_only_the_allowed_span_classes():
    html = render_markdown('```js\n// note\nconst n = 42; let s = "x";\n```\n\n```diff\n+ added\n- removed\n```')
    classes = set(re.findall(r'<span class="([^"]*)"', html))
    assert classes == {"hl-comment", "hl-keyword", "hl-number", "hl-string", "hl-inserted", "hl-deleted"}
    assert classes <= HIGHLIGHT_CLASSES
    assert "<span>" not in html  # untyped tokens are plain text, not empty spans


def test_code_without_a_known_language_is_plain_escaped_text():
    for fence in ("```\n", "```no-such-language\n"):
        html = render_markdown(fence + "if a < b: <span class=x>\n```")
        assert "<span" not in html and "if a &lt; b: &lt;span class=x&gt;" in html


def test_spans_from_a_source_keep_only_the_highlight_classes():
    html = render_source('<span class="hl-keyword">kept</span> <span class="evil" style="color:red" onclick="x()">text</span>', kind="html")
    assert '<span class="hl-keyword">kept</span>' in html
    assert "evil" not in html and "style" not in html and "onclick" not in html and "<span>text</span>" in html


def test_tables_with_alignment():
    html = render_markdown("| Task | Due |\n|:--|--:|\n| Book venue | Fri |")
    assert "<table>" in html and '<th style="text-align:left">Task</th>' in html
    assert '<td style="text-align:right">Fri</td>' in html


def test_links_are_kept_and_unsafe_ones_lose_their_target():
    html = render_markdown("[docs](https://example.com/docs) [click](javascript:alert(1)) <https://auto.example>")
    assert '<a href="https://example.com/docs" rel="noopener noreferrer nofollow">docs</a>' in html
    assert "javascript:" not in html and ">click</a>" in html
    assert 'href="https://auto.example"' in html


def test_raw_html_from_a_model_is_shown_as_text_and_never_runs():
    html = render_markdown('<img src=x onerror="alert(1)"> <script>alert(2)</script> **ok**')
    assert "<img" not in html and "<script" not in html and "&lt;script&gt;" in html and "<strong>ok</strong>" in html


def test_only_meaningful_classes_and_styles_survive():
    html = render_source('<p class="evil" style="color:red">x</p>\n\n```js onload\ny\n```', kind="markdown")
    assert "evil" not in html and "color:red" not in html and 'class="language-js"' in html


def test_citation_markers_link_to_their_sources():
    citations = {1: ("/kb/sources/7/", "Models"), 2: ("/kb/sources/9/", "Install")}
    html = render_markdown("Set `LLM_BASE_URL` [1]. Also [2][1], not [3], not `[1]`, not [1](http://x).", citations=citations)
    assert html.count('class="citation-ref"') == 3
    assert '<a href="/kb/sources/7/" class="citation-ref" title="Models" target="_blank" rel="noopener noreferrer nofollow">[1]</a>' in html
    assert "not [3]" in html and "<code>[1]</code>" in html and '<a href="http://x"' in html
    # Without citations the markers stay text.
    assert "citation-ref" not in render_markdown("Plain [1].")
