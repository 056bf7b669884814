from __future__ import annotations

from typing import TYPE_CHECKING, TypedDict

from django.contrib import admin
from django.db.models import Count, QuerySet
from django.http import HttpRequest
from django.template.loader import render_to_string

from chat.models import Conversation, Message

if TYPE_CHECKING:
    from django_stubs_ext import WithAnnotations


class _MessageTotal(TypedDict):
    message_total: int


@admin.register(Conversation)
class ConversationAdmin(admin.ModelAdmin):
    """A conversation reads as its transcript: who said what, when, and what the agent looked up."""

    list_display = ["title", "owner", "message_count", "created_at", "updated_at"]
    search_fields = ["title", "owner__username", "messages__content"]
    list_select_related = ["owner"]
    raw_id_fields = ["owner"]
    fields = ["title", "owner", "created_at", "updated_at", "transcript"]
    readonly_fields = ["owner", "created_at", "updated_at", "transcript"]

    class Media:
        css = {"all": ["css/admin_transcript.css"]}

    def get_queryset(self, request: HttpRequest) -> QuerySet[Conversation]:
        return super().get_queryset(request).annotate(message_total=Count("messages"))

    @admin.display(description="messages", ordering="message_total")
    def message_count(self, obj: WithAnnotations[Conversation, _MessageTotal]) -> int:
        return obj.message_total

    @admin.display(description="transcript")
    def transcript(self, obj: Conversation) -> str:
        messages = list(obj.messages.order_by("created_at", "id"))
        return render_to_string("chat/admin_transcript.html", {"messages": messages})


@admin.register(Message)
class MessageAdmin(admin.ModelAdmin):
    list_display = ["conversation", "role", "short_content", "created_at"]
    list_filter = ["role"]
    list_select_related = ["conversation"]
    raw_id_fields = ["conversation"]

    @admin.display(description="content")
    def short_content(self, obj: Message) -> str:
        return obj.content[:80]
