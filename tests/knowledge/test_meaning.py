"""The offline engine's sense of meaning: static embeddings shipped in a wheel, no network, and
where they count — which passage answers and in which order the selected pages come — and where
they do not: whether to answer at all."""

from __future__ import annotations

import socket

import numpy as np
import pytest

from knowledge import embeddings, offline
from knowledge.ranking import Corpus


def _no_network(*args: object, **kwargs: object) -> None:
    raise AssertionError("the embedding model tried to reach the network")


def test_the_embedding_model_loads_from_the_installed_package_without_the_network(monkeypatch):
    for name in ("create_connection", "getaddrinfo"):
        monkeypatch.setattr(socket, name, _no_network)
    monkeypatch.setattr(socket.socket, "connect", _no_network)
    embeddings._model.cache_clear()
    try:
        vectors = embeddings.embed(["cap the line length", "limit the line length", "install the docker image"])
    finally:
        embeddings._model.cache_clear()  # the next caller loads it again, with the network as it is

    assert vectors is not None and vectors.shape == (3, 256)
    assert np.allclose(np.linalg.norm(vectors, axis=1), 1.0, atol=1e-4)
    # The same request in other words is closer than another request.
    assert vectors[0] @ vectors[1] > vectors[0] @ vectors[2] + 0.3


OPTIONS = """# Command line options

## --pyi

Format all input files like typing stubs regardless of file extension.

## --line-ranges

When specified, the formatter will try its best to only format these lines of a file.

## --check

Don't write the files back, just return the status.
"""


def test_of_the_passages_that_cover_most_of_the_question_the_closest_in_meaning_is_quoted():
    corpus = Corpus.build([("options.md", "Command line options", OPTIONS, "markdown")])
    # On words alone "--pyi" wins ("format", "file"); "only what I changed" is what --line-ranges does.
    question = "can it format just a few lines of a file, like only what I changed?"
    draft = offline.answer(question=question, sources=[("Command line options", OPTIONS)], weights=corpus.weights(question))

    assert draft.answer.startswith("**--line-ranges** — When specified, the formatter will try its best")
    assert offline.verify(draft=draft.answer, sources=[OPTIONS]).is_good_enough


def test_meaning_does_not_make_an_unanswered_question_answered():
    # Close in meaning to --check, but no passage covers the question's words: silence, as before.
    question = "How do I run it in CI so the build fails on unformatted code?"
    corpus = Corpus.build([("options.md", "Command line options", OPTIONS, "markdown")])
    draft = offline.answer(question=question, sources=[("Command line options", OPTIONS)], weights=corpus.weights(question))

    assert not draft.answered_from_sources


def test_without_the_embedding_model_the_passage_is_chosen_on_words_alone(monkeypatch):
    monkeypatch.setattr(embeddings, "_model", lambda: None)  # the wheel missing or broken
    embeddings.forget_passages()
    try:
        question = "can it format just a few lines of a file, like only what I changed?"
        corpus = Corpus.build([("options.md", "Command line options", OPTIONS, "markdown")])
        draft = offline.answer(question=question, sources=[("Command line options", OPTIONS)], weights=corpus.weights(question))
    finally:
        embeddings.forget_passages()

    assert draft.answer.startswith("**--pyi** — Format all input files like typing stubs")


QUOTES = [
    ("changelog.md", "Changelog", "# Changelog\n\nSingle quotes in the changelog have a grey background.\n", "markdown"),
    ("strings.md", "Strings", "# Strings\n\nSingle quotes are left alone when string normalization is off.\n", "markdown"),
    ("install.md", "Install", "# Install\n\nInstall it with pip.\n", "markdown"),
]


@pytest.mark.parametrize("by_meaning, order", [(False, ["changelog.md", "strings.md"]), (True, ["strings.md", "changelog.md"])])
def test_the_pages_selected_on_words_are_ordered_by_meaning_as_well(by_meaning, order):
    corpus = Corpus.build(QUOTES)
    ranked = corpus.rank("How do I keep my single quotes?", limit=3, restated_headings=True, by_meaning=by_meaning)

    # The same pages either way (the words decide which); the nearly tied pair swaps.
    assert [r.source_id for r in ranked] == order
