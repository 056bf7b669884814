"""Static sentence embeddings for the offline engine, from the weights the `wordllama` wheel ships.

No model server and no network: the package carries its 256-dimension token embeddings and its
tokenizer, and loading reads them from the package's own folder with downloads disabled. A sentence
is the average of its tokens' vectors, so a question and a passage that say the same thing in other
words ("only what I changed" and "format only the given line ranges") end up close where a word
match finds nothing. When the package cannot be loaded the offline engine works on words alone.
"""

from __future__ import annotations

import functools
import logging
import threading
from collections import OrderedDict
from pathlib import Path
from typing import Any

import numpy as np
from numpy.typing import NDArray

log = logging.getLogger("clarion.knowledge")


@functools.cache
def _model() -> Any | None:
    try:
        import wordllama
        from wordllama import WordLlama
    except ImportError:
        return None
    # The wheel has the weights under wordllama/weights/ and the tokenizer under
    # wordllama/tokenizers/, which is the layout of its cache folder: pointing the cache there
    # finds both, and disable_download turns a missing file into an error instead of a download.
    try:
        return WordLlama.load(cache_dir=Path(wordllama.__file__).parent, disable_download=True)
    except Exception:  # a broken install must not take the knowledge base down: words alone then
        log.exception("wordllama could not be loaded; the offline engine answers on words alone")
        return None


def load() -> bool:
    """Reads the model now (a few hundred ms, once per process) rather than on a first question."""
    return _model() is not None


def embed(texts: list[str]) -> NDArray[np.float32] | None:
    """Unit-length vectors, one row per text; None when no embedding model is available."""
    model = _model()
    if model is None or not texts:
        return None
    vectors: NDArray[np.float32] = model.embed(texts, norm=True)
    return vectors


# The passages a question's answer is chosen among are a few per request, and the same ones come
# back (a page's options, its FAQ): each is embedded once and kept, not once per request.
PASSAGE_CACHE = 16_384
_passages: OrderedDict[str, NDArray[np.float32]] = OrderedDict()
_passages_lock = threading.Lock()


def passage_vectors(texts: list[str]) -> NDArray[np.float32] | None:
    """embed(texts), each text embedded once and then kept (the least recently used go first)."""
    with _passages_lock:
        known = {t: _passages[t] for t in texts if t in _passages}
        for t in known:
            _passages.move_to_end(t)
    if missing := [t for t in dict.fromkeys(texts) if t not in known]:
        made = embed(missing)  # one call for all of them: a call costs more than a text
        if made is None:
            return None
        known.update(zip(missing, made, strict=True))
        with _passages_lock:
            _passages.update(zip(missing, made, strict=True))
            while len(_passages) > PASSAGE_CACHE:
                _passages.popitem(last=False)
    return np.stack([known[t] for t in texts]) if texts else None


def forget_passages() -> None:
    with _passages_lock:
        _passages.clear()
