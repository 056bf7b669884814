"""Pure pieces: citation integrity, selection bounding, the offline decisions, text handling."""

from __future__ import annotations

import subprocess
import sys

import pytest
from django.conf import settings

from knowledge import offline
from knowledge.citations import cite, normalise, truncate
from knowledge.pipeline import bound_selection, clean_history
from knowledge.schemas import DraftAnswer, GateDecision, SourceSelection, VerificationDecision
from knowledge.text import clean_summary, extractive_summary, html_to_text, terms, title_of, units

# ---- citations


def test_markers_outside_the_loaded_range_are_dropped_and_the_rest_renumbered():
    cited = normalise("B is true [3]. A is true [1]. C is made up [9]. D [0].", available=3)
    assert cited.text == "B is true [1]. A is true [2]. C is made up. D."
    assert cited.order == [3, 1] and cited.dropped == [9, 0]


def test_markers_after_the_full_stop_move_before_it_and_repeats_collapse():
    assert normalise("Set it. [1] Then go. [1][2]", available=2).text == "Set it [1]. Then go [1][2]."
    assert normalise("Set it [1] [1].", available=1).text == "Set it [1]."


def test_truncate_cuts_after_the_last_whole_sentence_with_its_markers():
    text = "First sentence is here [1]. Second sentence is longer than the first one [2]. Third [3]."
    assert truncate(text, max_chars=60) == "First sentence is here [1]."
    assert truncate("word " * 50, max_chars=30).endswith("…") and len(truncate("word " * 50, max_chars=30)) <= 30
    assert truncate("short", max_chars=30) == "short"
    # A first sentence too long to fit keeps its citation.
    assert truncate("Set the endpoint, the key and the model name in your environment [1]. More [2].", max_chars=40) == (
        "Set the endpoint, the key and the… [1]"
    )


def test_cite_renumbers_what_survives_the_cut():
    cited = cite("Alpha is first [2]. Beta is second and much longer than alpha [1].", available=2, max_chars=25)
    assert cited.text == "Alpha is first [1]." and cited.order == [2]


# ---- selection


def test_bound_selection_keeps_indexed_ids_in_the_models_order_and_truncates():
    selected, rejected = bound_selection(
        ["b.md", "nope.md", " `a.md` ", "b.md", "c.md — its summary", "d.md"], indexed={"a.md", "b.md", "c.md", "d.md"}, max_sources=3
    )
    assert selected == ["b.md", "a.md", "c.md"] and rejected == ["nope.md"]
    assert bound_selection([], indexed={"a.md"}, max_sources=3) == ([], [])


def test_decision_schemas_parse_the_models_json():
    assert GateDecision.model_validate_json('{"is_question": true, "is_answerable": false, "reason": "off topic"}').rewrite_query is None
    assert SourceSelection.model_validate_json('{"selected_source_ids": ["a.md"]}').selected_source_ids == ["a.md"]
    assert DraftAnswer.model_validate_json('{"answer": "x [1]"}').answered_from_sources is True
    assert VerificationDecision.model_validate_json('{"is_good_enough": false, "issues": ["x"]}').suggested_fix is None
    with pytest.raises(ValueError):
        GateDecision.model_validate_json('{"is_question": "maybe"}')


def test_history_is_cleaned_and_capped():
    history = [{"role": "user", "content": f"m{i}"} for i in range(15)] + [
        {"role": "system", "content": "x"},
        {"role": "assistant", "text": "t"},
    ]
    cleaned = clean_history(history)
    assert len(cleaned) == 10 and cleaned[-1] == {"role": "assistant", "content": "t"} and all(m["role"] != "system" for m in cleaned)


# ---- offline decisions


@pytest.mark.parametrize(
    "message, is_question, is_answerable",
    [
        ("How do I connect my own model?", True, True),
        ("explain the knowledge index", True, True),
        ("where can I find the admin", True, True),
        ("thanks!", False, False),
        ("The build is green.", False, False),
        # Asking for help without a question: a need, or a problem report.
        ("aiohttp doesn't use the system proxy settings: I set http_proxy and it is ignored.", True, True),
        ("I need to pass the client my own SSLContext.", True, True),
        ("certificate verify failed: unable to get local issuer certificate", True, True),
        ("link IP of requester between nginx and gunicorn so flask logs have IP", True, True),
        # A request to do what the docs explain, and a loss.
        ("reset my password", True, True),
        ("turn off the access log", True, True),
        ("I forgot my password", True, True),
        ("The password is set.", False, False),
        ("how?", True, False),
        ("", False, False),
    ],
)
def test_offline_gate(message, is_question, is_answerable):
    decision = offline.gate(message)
    assert (decision.is_question, decision.is_answerable) == (is_question, is_answerable)
    assert decision.reason


SOURCE = """# Connecting a model

To connect a model, set `LLM_BASE_URL` to the endpoint. Clarion reads `.env` files too.

```bash
LLM_BASE_URL=http://127.0.0.1:11434/v1
```

## Ollama

- Ollama listens on port 11434 and needs no key at all.
- Pull a model that supports tool calls first.
"""


def test_offline_answer_quotes_matching_sentences_with_citations_in_reading_order():
    draft = offline.answer(question="Which port does Ollama listen on?", sources=[("Connecting a model", SOURCE)])
    # The section is short: quoted whole, list items as a list.
    assert draft.answer == "- Ollama listens on port 11434 and needs no key at all [1].\n- Pull a model that supports tool calls first [1]."
    assert draft.citations == [1]
    assert offline.answer(question="How do I bake bread?", sources=[("Connecting a model", SOURCE)]).answered_from_sources is False


def test_offline_verification_accepts_quotes_and_rejects_unsupported_or_uncited_sentences():
    assert offline.verify(draft="Ollama listens on port 11434 and needs no key at all [1].", sources=[SOURCE]).is_good_enough
    rejected = offline.verify(draft="Ollama listens on port 8080 behind nginx with a key [1]. It is fast.", sources=[SOURCE])
    assert not rejected.is_good_enough and len(rejected.issues) == 2
    assert "not supported" in rejected.issues[0] and "cites no source" in rejected.issues[1]
    assert not offline.verify(draft="Ollama is on port 11434 [2].", sources=[SOURCE]).is_good_enough
    assert not offline.verify(draft="", sources=[SOURCE]).is_good_enough


def test_offline_verification_reads_no_citation_inside_code():
    page = "# Unions\n\nThe union `Literal[10] | A | B` cannot be handled directly.\n"
    assert offline.verify(draft="The union `Literal[10] | A | B` cannot be handled directly [1].", sources=[page]).is_good_enough
    assert not offline.verify(draft="The union cannot be handled directly [10].", sources=[page]).is_good_enough


# ---- text


def test_units_keep_code_blocks_whole_and_apart_from_prose_and_keep_list_items():
    found = [u.text for u in units(SOURCE) if u.kind != "code"]
    assert "LLM_BASE_URL=http://127.0.0.1:11434/v1" not in " ".join(found)
    assert [u.text for u in units(SOURCE) if u.kind == "code"] == ["LLM_BASE_URL=http://127.0.0.1:11434/v1"]
    assert "Ollama listens on port 11434 and needs no key at all." in found
    assert next(u for u in units(SOURCE) if u.text.startswith("Ollama")).heading == "Ollama"


def test_rst_headings_and_literal_blocks():
    rst = "Install guide\n=============\n\nRun the installer from the command line::\n\n    ./install --all\n\nThen restart the service and check the logs.\n"
    assert title_of(rst, kind="rst", fallback="x") == "Install guide"
    found = units(rst, kind="rst")
    assert [(u.kind, u.text, u.lead) for u in found] == [
        ("code", "./install --all", "Run the installer from the command line:"),
        ("sentence", "Then restart the service and check the logs.", ""),
    ]


def test_terms_are_stemmed_symmetrically():
    assert terms("Connecting your own models") == terms("connect a model") == ["connect", "model"]


def test_an_irregular_verb_form_is_its_verb():
    assert terms("a message I sent") == terms("a message it sends")
    assert terms("written") == terms("writes") and terms("made") == terms("making")
    assert terms("left") != terms("leave") and terms("found") != terms("find")  # words of their own too


def test_two_words_that_say_one_thing_are_one_term():
    assert terms("How do I log out?") == terms("Logged out, it signs out") == ["logout"]
    assert terms("where are the logs?") == ["log"]  # the noun is not the verb
    assert terms("How do I Log Out?") == ["logout"] and terms("catalog out") == ["catalog"]
    assert terms("Log in as demo") == ["login", "demo"] and terms("Sign in to the admin.") == ["login", "admin"]
    assert terms("the access log in JSON") == terms("access log JSON")  # "log in" followed by a noun stays the noun
    assert terms("when it isn't sure") == terms("when it is not sure") == terms("when it is unsure") == ["unsur"]
    assert "unsur" not in terms("make sure it runs")
    # A box one types in is a thing of its own, not what it is named after; a search box still searches.
    assert terms("the chat box") == terms("Chat boxes") == ["chatbox"] and "chat" not in terms("in the chat box")
    assert terms("its search box finds") == ["search", "box", "find"]
    # Turning or switching a thing off is disabling it, whichever words the page uses.
    assert terms("how do I turn it off?") == terms("Switched off") == terms("disable") == ["disabl"]
    assert terms("turning on the detector") == terms("enable the detector") == ["enabl", "detector"]
    assert terms("in turn, on the other hand") == ["turn", "hand"] and terms("return on investment") == ["return", "investment"]


def test_a_word_that_only_looks_like_a_stop_word_once_cut_is_kept():
    # "note" cut to "not", "theme" to "them": the word stays, and finds its plural and itself.
    assert terms("my notes") == terms("a note") == ["note"]
    assert terms("dark themes") == terms("a dark theme") == ["dark", "theme"]
    assert terms("duration") == ["duration"]
    assert terms("it uses what he wanted") == []  # a stop word's own forms stay out


def test_html_becomes_markdownish_text_without_scripts_or_navigation():
    title, text = html_to_text(
        "<html><head><title> Proxy  guide </title><script>alert(1)</script></head><body><nav>Home | Docs</nav>"
        "<h1>Proxy</h1><p>Put Clarion behind <b>nginx</b>.</p><ul><li>Set TLS.</li></ul><pre>server {\n  listen 443;\n}</pre></body></html>"
    )
    assert title == "Proxy guide"
    assert text.startswith("# Proxy\n\nPut Clarion behind nginx.")
    assert "- Set TLS." in text and "```\nserver {\n  listen 443;\n}\n```" in text
    assert "alert" not in text and "Home | Docs" not in text


def test_summaries_are_short_plain_text():
    assert clean_summary("**Summary:** Explains `LLM_BASE_URL`.\n- and more") == "Explains LLM_BASE_URL. and more"
    long = extractive_summary(title="T", content="# T\n\nA long opening sentence about " + "many things and " * 40 + "more.")
    assert len(long) <= 300 and long.endswith("…")
    assert extractive_summary(title="Connecting a model", content=SOURCE) == extractive_summary(title="Connecting a model", content=SOURCE)
    assert extractive_summary(title="Connecting a model", content=SOURCE).endswith("Sections: Ollama.")


def test_a_build_reads_the_english_word_frequencies_so_the_first_question_does_not():
    # In a fresh interpreter: word frequencies any earlier test looked up stay cached in this one.
    script = (
        "import wordfreq\n"
        "from knowledge.ranking import Corpus\n"
        "Corpus.build([('a.md', 'A', '# A\\n\\nSome text.\\n', 'markdown')])\n"
        "print(wordfreq.get_frequency_dict.cache_info().currsize)\n"
    )
    done = subprocess.run([sys.executable, "-c", script], cwd=settings.BASE_DIR, capture_output=True, text=True, timeout=120, check=True)
    assert int(done.stdout.strip()) >= 1
