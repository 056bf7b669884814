"""HTML fragments pushed over the websocket. Each is one template partial; htmx swaps by id."""
from __future__ import annotations

from django.template.loader import render_to_string

from chat.models import Conversation, Message


def message_appended(message: Message) -> str:
    return render_to_string("chat/_message_append.html", {"message": message})


def conversation_link(conversation: Conversation) -> str:
    # Every tab that receives this is showing that conversation, so it is the current one.
    return render_to_string(
        "chat/_conversation_link.html", {"conversation": conversation, "current": conversation, "oob": True}
    )


def composer(conversation: Conversation) -> str:
    return render_to_string("chat/_composer.html", {"conversation": conversation, "oob": True})


def composer_error(text: str) -> str:
    return render_to_string("chat/_composer_error.html", {"error": text})
