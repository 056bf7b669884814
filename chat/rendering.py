"""HTML fragments pushed over the websocket. Each is one template partial; htmx swaps by id."""
from __future__ import annotations

from django.template.loader import render_to_string

from chat.models import Conversation, Message


def message_appended(message: Message) -> str:
    return render_to_string("chat/_message_append.html", {"message": message})


def message_removed(message_id: int) -> str:
    return f'<div id="message-{int(message_id)}" hx-swap-oob="delete"></div>'


def conversation_link(conversation: Conversation) -> str:
    # Every tab that receives this is showing that conversation, so it is the current one.
    return render_to_string(
        "chat/_conversation_link.html", {"conversation": conversation, "current": conversation, "oob": True}
    )


def composer(conversation: Conversation) -> str:
    return render_to_string("chat/_composer.html", {"conversation": conversation, "oob": True})


def composer_error(text: str) -> str:
    return render_to_string("chat/_composer_error.html", {"error": text})


def stream_started(stream_id: str) -> str:
    return render_to_string("chat/_stream_started.html", {"stream_id": stream_id})


def stream_delta(stream_id: str, text: str) -> str:
    return render_to_string("chat/_stream_delta.html", {"stream_id": stream_id, "text": text})


def stream_reset(stream_id: str) -> str:
    return render_to_string("chat/_stream_reset.html", {"stream_id": stream_id})


def stream_finished(stream_id: str, message: Message) -> str:
    """The streamed placeholder becomes the saved message (rendered Markdown, or the error)."""
    return render_to_string("chat/_message.html", {"message": message, "replaces": f"stream-{stream_id}"})
