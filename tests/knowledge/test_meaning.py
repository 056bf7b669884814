"""The offline engine's sense of meaning: static embeddings shipped in a wheel, no network."""

from __future__ import annotations

import socket

import numpy as np

from knowledge import embeddings


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
