"""The offline answer step on the shapes real documentation has and the way people ask."""

from knowledge import offline
from knowledge.ranking import Corpus
from knowledge.text import split_sentences, terms, units

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


CARDS = """# Cards

## How do I answer a card?

To answer a card, click one of its options or press its key.

## What happens if I don't answer a card?

When the countdown ends, the default option is applied for you.
"""


def test_a_question_that_negates_restates_the_heading_that_negates_too():
    def said(question: str) -> str:
        return offline.answer(question=question, sources=[("Cards", CARDS)]).answer

    assert "default option is applied" in said("What happens if I don't answer a card?")
    assert "click one of its options" in said("How do I answer a card?")
    # With no heading that negates, a problem report keeps the heading it restates in full.
    plain = CARDS.replace("## What happens if I don't answer a card?", "## Countdowns")
    assert "click one of its options" in offline.answer(question="I can't answer a card", sources=[("Cards", plain)]).answer


def test_two_pages_that_each_share_a_word_do_not_answer_a_question_about_one_thing():
    tags = "# Tags\n\nTag the current commit before you push it.\n"
    grammar = "# Grammar\n\nContext managers may be wrapped in parentheses.\n"
    draft = offline.answer(question="Who is the current manager?", sources=[("Tags", tags), ("Grammar", grammar)])
    assert not draft.answered_from_sources


# --- what a question asks for, beyond its words ----------------------------------------------------


def answer_from(pages: list[tuple[str, str, str, str]], question: str):
    """The answer step as the pipeline runs it: the build's weights, the pages in the selection's order."""
    corpus = Corpus.build(pages)
    ranked = corpus.rank(question, limit=4, restated_headings=True)
    sources = [corpus.pages[r.source_id][1:4] for r in ranked]
    return offline.answer(question=question, sources=sources, weights=corpus.weights(question))


def page(content: str, name: str = "page.md") -> tuple[str, str, str, str]:
    return (name, content.splitlines()[0].lstrip("# "), content, "markdown")


OTHER = page("# Logging\n\nThe access log has one line per request.\n", "logging.md")


def test_a_question_after_a_number_is_not_answered_by_a_passage_without_one():
    question = "What port number does the server listen on by default?"
    unsaid = page("# Server\n\nThe server listens on the default port when you run `serve`.\n")
    assert not answer_from([unsaid, OTHER], question).answered_from_sources
    said = page("# Server\n\nThe server listens on port 45484 by default when you run `serve`.\n")
    draft = answer_from([said, OTHER], question)
    assert "45484" in draft.answer and draft.citations == [1]


def test_a_question_after_what_a_quantity_means_needs_no_number():
    cards = page("# Cards\n\nEach option shows how likely the guess is, as a percentage of certainty.\n")
    draft = answer_from([cards, OTHER], "What does the percentage on an option mean?")
    assert "as a percentage of certainty" in draft.answer
    assert not answer_from([cards, OTHER], "What percentage does an option show?").answered_from_sources


def test_an_issue_number_is_not_the_number_asked_for():
    notes = page("# Changes\n\n- The compression level of the middleware is now adjustable - #1128.\n")
    assert not answer_from([notes, OTHER], "What compression level does the middleware use?").answered_from_sources


def test_a_question_after_a_default_needs_a_section_that_says_what_the_default_is():
    question = "What is the default number of retries of the client?"
    example = page("# Retries\n\nThe client retries a request `3` times when you pass `retries=3`.\n")
    assert not answer_from([example, OTHER], question).answered_from_sources
    said = page("# Retries\n\nThe client retries a request `3` times by default.\n")
    assert "`3` times by default" in answer_from([said, OTHER], question).answer


def test_a_name_the_question_asks_about_must_be_on_the_page_that_answers():
    pages = [
        ("migrations.md", "Migrations", "# Migrations\n\nRun database migrations with Alembic before you start the app.\n", "markdown"),
        ("frameworks.md", "Frameworks", "# Frameworks\n\nThe toolkit was inspired by Django and Flask.\n", "markdown"),
    ]
    assert not answer_from(pages, "How do I run database migrations with Django?").answered_from_sources
    draft = answer_from(pages, "How do I run database migrations with Alembic?")
    assert draft.answer.startswith("Run database migrations with Alembic") and draft.citations == [1]


STRINGS = """# Style

## Strings

The formatter prefers double quotes over single quotes. Having one kind of quotes everywhere reduces
reader distraction. If your project keeps [single quotes for data](https://example.org/quotes), you
can pass `--skip-string-normalization` on the command line.
"""


def test_a_question_after_a_way_to_change_something_gets_the_option_and_a_link_inside_a_sentence_is_no_detour():
    draft = answer_from([page(STRINGS), OTHER], "Is there a way to keep my single quotes?")
    assert "`--skip-string-normalization`" in draft.answer
    assert offline.verify(draft=draft.answer, sources=[STRINGS]).is_good_enough


FORWARDING = """# Advanced

## Forwarding unknown options

Sometimes a command should accept unknown options and pass them on to another program.
Accepting unknown options this way has limits that lie in the nature of the problem.
The support is provided through a parser flag called `ignore_unknown_options`, which collects them as leftover arguments.
Unknown long options are passed on as they are, so an unknown option such as `--foo` reaches the other program.
Unknown short options might be partly handled: in the example an option called `-v` is known, so in `-va` only `-a` is passed on.
Passing unknown options to another program this way is discouraged where a program can avoid it.
Options and arguments of another program mixed with your own options make unknown options hard to pass on reliably.
"""


def test_a_question_after_how_gets_the_sentence_that_names_what_to_use():
    draft = answer_from([page(FORWARDING), OTHER], "How do I accept unknown options and pass them to another program?")
    assert "`ignore_unknown_options`" in draft.answer and draft.citations == [1]
    assert offline.verify(draft=draft.answer, sources=[FORWARDING]).is_good_enough


# --- how the words of a question weigh -------------------------------------------------------------

WORDS = [
    ("style.md", "Style", "# Style\n\nKeep the indentation of nested blocks.\n", "markdown"),
    ("api.md", "API", "# API\n\nThe `total` of a loop is counted by the client.\n", "markdown"),
    ("other.md", "Other", "# Other\n\nNothing about it here.\n", "markdown"),
]


def test_a_plain_word_common_in_english_weighs_less_than_a_rarer_one_the_pages_use_as_often():
    weights = Corpus.build(WORDS).weights("keep indentation")
    assert weights["keep"] < 0.6 * weights[terms("indentation")[0]]


def test_the_askers_own_identifiers_and_scene_setting_words_weigh_less_than_what_is_asked():
    corpus = Corpus.build(WORDS)
    weights = corpus.weights("I set my_total_qty = 0 inside the loop and it stays 0 after it. How do I carry a value out of a loop?")
    assert weights["my_total_qty"] < 0.2 * corpus.idf_of_rarest  # no page uses it, and it is written as code
    assert weights[terms("stays")[0]] < weights[terms("carry")[0]]  # the scene's word, and the asking sentence's
    # A name no page uses is what the pages lack, wherever it is.
    assert corpus.weights("How do I use it with Redis?")[terms("Redis")[0]] > corpus.idf_of_rarest


LOOPS = page(
    "# Assignments\n\n## Scoping\n\nA variable set inside a loop does not show up outside of it once the loop ends. A namespace"
    " object carries a running total out of a loop:\n\n```\n{% set ns = namespace(total=0) %}\n{% for item in items %}{% set"
    " ns.total = ns.total + item %}{% endfor %}\n```\n"
)


def test_a_long_question_with_circumstances_is_answered_and_a_how_gets_the_sections_example():
    question = (
        "I add each price to my_total_qty inside the for loop, and after the loop it still prints 0."
        " How do I carry the running total of prices out of a for loop so I can print it once the loop finishes?"
    )
    draft = answer_from([LOOPS, OTHER], question)
    assert "namespace(total=0)" in draft.answer and draft.citations == [1]
    assert offline.verify(draft=draft.answer, sources=[LOOPS[2]]).is_good_enough
    # Asked alone, a third of the question is not enough.
    assert not answer_from([LOOPS, OTHER], "How do I print prices once it finishes?").answered_from_sources


def test_words_that_frame_a_request_do_not_count_against_the_answer():
    guide = page("# Frameworks\n\n## Django\n\nFor Django, add the middleware of django-structlog to your settings.\n")
    draft = answer_from([guide, OTHER], "Is there any guidance or a best practice for Django?")
    assert "django-structlog" in draft.answer


BUSY = [
    ("Workers", "# Workers\n\n## Bursts\n\nWhen every worker is busy, a request waits for a free connection and then answers try again.\n"),
    ("Links", "# Links\n\nA citation link opens its page without a login for a week after it was given.\n"),
]


def test_a_question_of_two_words_is_answered_only_where_both_are():
    # With two words, the rarer one alone would carry the share a passage must cover.
    corpus = Corpus.build([(t.lower(), t, c, "markdown") for t, c in BUSY])
    silent = offline.answer(question="Is my week busy?", sources=BUSY, weights=corpus.weights("Is my week busy?"))
    assert not silent.answered_from_sources
    answered = offline.answer(
        question="What if every worker is busy?", sources=BUSY, weights=corpus.weights("What if every worker is busy?")
    )
    assert "a request waits for a free connection" in answered.answer and answered.citations == [1]


IMAGES = """# Container images

Official images are available on [Docker Hub](https://hub.docker.com/r/acme/tool "Docker Hub"), see [the tags](tags.md).

- [Nightly builds](https://ci.example.com/nightly) carry the `latest` tag.
- Build [1](https://example.com/one) is the first.
"""


def test_a_quote_keeps_its_links_to_other_sites_and_passes_verification():
    draft = offline.answer(question="Is there an official container image?", sources=[("Container images", IMAGES)])
    assert draft.answer.startswith("Official images are available on [Docker Hub](https://hub.docker.com/r/acme/tool), see the tags [1].")
    assert offline.verify(draft=draft.answer, sources=[IMAGES]).is_good_enough
    # A relative link points nowhere outside its page, and a number in brackets reads as a citation.
    (item, numbered) = [u for u in units(IMAGES) if u.kind == "item"]
    assert item.shown == "[Nightly builds](https://ci.example.com/nightly) carry the `latest` tag."
    assert numbered.shown == "Build 1 is the first."


ASKING = """# Adding tasks

Add a task by asking for it: "remind me to call Bob tomorrow" gives it a due date, and “add a task
called Renew the passport” a title of its own.

## Statuses

A task is "done" once you complete it; the list shows it struck through.

## Errors

"The model endpoint refused Clarion's credentials" means the API key is wrong. Teams that keep
["one task per meeting action item"](https://example.com/actions) add one task for each.
"""


def test_words_only_quoted_as_an_example_of_asking_are_not_what_a_page_says():
    for question in ("Who is Bob?", "Where is my passport?"):
        draft = offline.answer(question=question, sources=[("Adding tasks", ASKING)])
        assert not draft.answered_from_sources, (question, draft.answer)
    # The page still answers what it says outside its examples, and quotes them whole.
    draft = offline.answer(question="How do I add a task with a due date?", sources=[("Adding tasks", ASKING)])
    assert draft.answered_from_sources and '"remind me to call Bob tomorrow"' in draft.answer
    # A single quoted word names a value or a term, and counts.
    draft = offline.answer(question="When is a task done?", sources=[("Adding tasks", ASKING)])
    assert draft.answered_from_sources and "struck through" in draft.answer
    # How to ask is what the examples show.
    reminders = '# Reminders\n\nSay "remind me to call Bob tomorrow" in the chat, and the task is due tomorrow.\n'
    draft = offline.answer(question="How do I get reminded to call Bob?", sources=[("Reminders", reminders)])
    assert draft.answered_from_sources and '"remind me to call Bob tomorrow"' in draft.answer
    assert not offline.answer(question="Who do I call tomorrow?", sources=[("Reminders", reminders)]).answered_from_sources
    # A quoted message the page explains, and a link's quoted text, are what the page says.
    draft = offline.answer(question='What does "The model endpoint refused credentials" mean?', sources=[("Adding tasks", ASKING)])
    assert draft.answered_from_sources and "API key is wrong" in draft.answer
    draft = offline.answer(question="One task per meeting action item?", sources=[("Adding tasks", ASKING)])
    assert draft.answered_from_sources and "add one task for each" in draft.answer


CONFIRMING = """# Confirming changes

## What does the confirmation card show?

One card can hold several changes, confirmed together. The card counts the changes and lists
every one of them; a long list shows the first 10 and the rest behind "more". Destructive
changes, such as deleting, are marked in red.

## What happens if I don't answer a confirmation?

A confirmation waits 5 minutes, so there is time to read the list. It never defaults to yes.

## Keyboard

Enter applies the changes on a confirmation card and Escape cancels them.
"""


def test_a_fact_the_next_section_of_the_answering_page_gives_is_quoted_with_its_heading():
    draft = offline.answer(question="How long does a confirmation card wait?", sources=[("Confirming changes", CONFIRMING)])
    assert draft.answered_from_sources and draft.citations == [1]
    assert "lists every one of them" in draft.answer
    assert "**What happens if I don't answer a confirmation?** — A confirmation waits 5 minutes" in draft.answer
    # A section that brings no word of the question the quote lacks is left out.
    assert "Escape cancels" not in draft.answer
    assert offline.verify(draft=draft.answer, sources=[CONFIRMING]).is_good_enough


CACHING = """# Caching

## The response cache

The response cache stores every successful response in memory, keyed by its URL and headers.
Entries are kept for 300 seconds unless the response sets a shorter max-age.
Responses to POST requests are never stored, because repeating them is not safe.
A full cache drops its least recently used entries first.
Nothing is written to disk, so the cache is empty after a restart.
The size limit is 512 entries, set with `CACHE_SIZE`.
Logging shows a hit or a miss for every request at debug level.
"""


def test_a_long_section_is_quoted_down_to_its_weaker_pieces_that_still_name_the_question():
    draft = offline.answer(question="What does the response cache store?", sources=[("Caching", CACHING)])
    assert draft.answered_from_sources
    assert "stores every successful response in memory" in draft.answer and "never stored" in draft.answer
    # Weaker, but about the cache: quoted too.
    assert "The size limit is 512 entries" in draft.answer
    # Nothing of the question in it: left out.
    assert "Logging shows" not in draft.answer


SESSIONS_RST = """Sessions
========

Closing
-------

Call :meth:`ClientSession.close` when done, or use the session as an async context manager.
"""


def test_verification_reads_a_page_in_its_own_format_from_the_analysis_the_answer_made():
    # A reference page takes a few milliseconds a kilobyte to analyse: verifying reuses the
    # answer step's analysis of the page, in the page's format, instead of a second one as Markdown.
    draft = offline.answer(question="How do I close a ClientSession?", sources=[("Sessions", SESSIONS_RST, "rst")])
    assert draft.answered_from_sources and "`ClientSession.close`" in draft.answer
    misses = offline._analyse.cache_info().misses
    assert offline.verify(draft=draft.answer, sources=[SESSIONS_RST], kinds=["rst"]).is_good_enough
    assert offline._analyse.cache_info().misses == misses
