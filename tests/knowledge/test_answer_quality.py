"""The offline answer step on the shapes real documentation has and the way people ask."""

from knowledge import offline
from knowledge.ranking import Corpus
from knowledge.text import split_sentences

HIERARCHY = """# Exceptions

The exception hierarchy is:

- HTTPError
  - RequestError
    - TimeoutException
  - HTTPStatusError
- InvalidURL
"""


def test_a_nested_list_item_is_quoted_under_its_parents():
    draft = offline.answer(question="What is the hierarchy of TimeoutException?", sources=[("Exceptions", HIERARCHY)])
    assert "- HTTPError [1]\n  - RequestError [1]\n    - TimeoutException [1]" in draft.answer
    assert offline.verify(draft=draft.answer, sources=[HIERARCHY]).is_good_enough


def test_a_k_a_does_not_end_a_sentence():
    assert split_sentences("The transport a.k.a. The Adapter sends requests. It is pluggable.") == [
        "The transport a.k.a. The Adapter sends requests.",
        "It is pluggable.",
    ]


PROXY = """# Proxies

Clarion can route the client's traffic.

## Proxy setup

For example:

```python
client = Client(proxy="http://localhost:8030")
```
"""


def test_code_is_quoted_when_the_question_asks_how_later_on():
    draft = offline.answer(question="I need a proxy setup for the client. How do I do that?", sources=[("Proxies", PROXY)])
    assert 'client = Client(proxy="http://localhost:8030")' in draft.answer
    assert offline.verify(draft=draft.answer, sources=[PROXY]).is_good_enough


LIMITS = """# Pool limits

You can change the default pool limits:

```python
limits = Limits(keepalive_expiry=30)
```
"""


def test_an_example_that_sets_a_value_is_not_quoted_as_its_default():
    draft = offline.answer(question="What is the default keepalive expiry?", sources=[("Pool limits", LIMITS)])
    assert not draft.answered_from_sources


PAGES = [
    ("pool.md", "Connection pool", "# Connection pool\n\nThe max_connections setting limits the connections a pool opens.\n", "markdown"),
    ("auth.md", "Authentication", "# Authentication\n\nDigest authentication uses a challenge from the server.\n", "markdown"),
    ("proxy.md", "Proxies", "# Proxies\n\nA proxy forwards the connections of the client.\n", "markdown"),
]


def test_a_plain_word_the_docs_never_use_does_not_outweigh_the_words_they_do():
    corpus = Corpus.build(PAGES)
    question = "How do I cap the connections a pool opens?"  # the docs say "limits", never "cap"
    draft = offline.answer(question=question, sources=[(t, c) for _, t, c, _ in PAGES], weights=corpus.weights(question))
    assert draft.answer.startswith("The max_connections setting limits the connections a pool opens") and draft.citations == [1]


def test_a_name_the_docs_never_use_still_keeps_them_silent():
    corpus = Corpus.build(PAGES)
    question = "How do I cap the connections a Redis pool opens?"
    draft = offline.answer(question=question, sources=[(t, c) for _, t, c, _ in PAGES], weights=corpus.weights(question))
    assert not draft.answered_from_sources


def test_an_answer_is_composed_from_two_sources_whose_headings_name_the_parts():
    timeouts = "# Timeouts\n\nRequests give up after 5 seconds unless you say otherwise.\n"
    retries = "# Retries\n\nA failed request is attempted 3 times before it fails.\n"
    sources = [("Timeouts", timeouts), ("Retries", retries)]
    draft = offline.answer(question="What are the timeouts and the retries?", sources=sources)
    assert "5 seconds" in draft.answer and "3 times" in draft.answer and draft.citations == [1, 2]
    assert offline.verify(draft=draft.answer, sources=[timeouts, retries]).is_good_enough


def test_a_number_with_its_unit_finds_the_number_the_docs_write_apart():
    pages = [
        ("timeouts.md", "Timeouts", "# Timeouts\n\nThe pool waits 60 seconds.\n", "markdown"),
        ("retries.md", "Retries", "# Retries\n\nRequests are retried three times.\n", "markdown"),
    ]
    corpus = Corpus.build(pages)
    question = "What waits 60s?"
    draft = offline.answer(question=question, sources=[(t, c) for _, t, c, _ in pages], weights=corpus.weights(question))
    assert draft.answer == "The pool waits 60 seconds [1]." and draft.citations == [1]


FAQ = [
    (
        "testing.md",
        "Testing",
        "# Testing\n\n## Matrix\n\nThe test matrix runs every Python version the tool supports. Each supported Python version "
        "runs the tool's tests, and a new Python version is supported when the tool's tests pass on it. Python versions, "
        "Python versions: the tool's support for Python versions is tested.\n",
        "markdown",
    ),
    (
        "faq.md",
        "FAQ",
        "# FAQ\n\n## Which Python versions does the tool support?\n\nCurrently the runtime requires Python 3.8 or newer.\n\n"
        "## Why spaces?\n\nTabs are not supported.\n",
        "markdown",
    ),
]


def test_a_section_whose_heading_the_question_restates_is_selected_first():
    corpus = Corpus.build(FAQ)
    question = "Which Python versions does the tool support?"
    assert corpus.rank(question, limit=2)[0].source_id == "testing.md"  # plain BM25: the words, repeated
    ranked = corpus.rank(question, limit=2, restated_headings=True)
    assert ranked[0].source_id == "faq.md"
    draft = offline.answer(
        question=question,
        sources=[(corpus.pages[r.source_id][1], corpus.pages[r.source_id][2]) for r in ranked],
        weights=corpus.weights(question),
    )
    assert "Python 3.8 or newer" in draft.answer and draft.citations == [1]


def test_two_pages_that_each_share_a_word_do_not_answer_a_question_about_one_thing():
    tags = "# Tags\n\nTag the current commit before you push it.\n"
    grammar = "# Grammar\n\nContext managers may be wrapped in parentheses.\n"
    draft = offline.answer(question="Who is the current manager?", sources=[("Tags", tags), ("Grammar", grammar)])
    assert not draft.answered_from_sources
