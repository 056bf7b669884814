import uuid

from django.conf import settings
from django.db import models


class Conversation(models.Model):
    DEFAULT_TITLE = "New conversation"
    TITLE_MAX_CHARS = 120

    # UUIDs: conversation ids appear in URLs and websocket paths; they should not be enumerable.
    id = models.UUIDField(primary_key=True, default=uuid.uuid4, editable=False)
    owner = models.ForeignKey(settings.AUTH_USER_MODEL, on_delete=models.CASCADE, related_name="conversations")
    title = models.CharField(max_length=TITLE_MAX_CHARS, default=DEFAULT_TITLE)
    created_at = models.DateTimeField(auto_now_add=True)
    updated_at = models.DateTimeField(auto_now=True)
    # Set by "Stop generating"; a turn whose stream started before it stops and keeps its text.
    stop_requested_at = models.DateTimeField(null=True, blank=True)
    # Pinned conversations head the list, most recently pinned first.
    pinned_at = models.DateTimeField(null=True, blank=True)

    class Meta:
        ordering = ["-updated_at"]
        indexes = [models.Index(fields=["owner", "-updated_at"], name="conversation_owner_updated")]

    def __str__(self) -> str:
        return self.title

    @property
    def group_name(self) -> str:
        """The channel-layer group every open tab of this conversation listens on."""
        return group_name_of(self.pk)


def group_name_of(conversation_id: uuid.UUID) -> str:
    """`Conversation.group_name` from the id alone (no instance to build on the hot path)."""
    return f"conversation-{conversation_id.hex}"


def user_group_name(user_id: int) -> str:
    """The channel-layer group every open tab of one user listens on (their conversation list)."""
    return f"user-{int(user_id)}"


# Tools whose call is shown as a question card rather than as a "looked up" line.
CARD_TOOLS = {"ask_user", "propose_operations"}


class Message(models.Model):
    class Role(models.TextChoices):
        USER = "user", "User"
        ASSISTANT = "assistant", "Assistant"
        TOOL = "tool", "Tool result"
        # A failed turn, shown in the thread with a Retry button; never sent to the model.
        ERROR = "error", "Error"

    conversation = models.ForeignKey(Conversation, on_delete=models.CASCADE, related_name="messages")
    role = models.CharField(max_length=16, choices=Role.choices)
    content = models.TextField(blank=True)
    # Assistant messages that call tools: [{"id", "name", "arguments"}] exactly as the model sent them.
    tool_calls = models.JSONField(default=list, blank=True)
    # Tool results: which call they answer.
    tool_call_id = models.CharField(max_length=200, blank=True)
    tool_name = models.CharField(max_length=100, blank=True)
    # For rows a turn writes (assistant, tool, error): the newest user message that turn answers.
    # A message sent while a turn runs is newer than its in_reply_to, so it still gets a turn.
    in_reply_to = models.ForeignKey("self", null=True, blank=True, on_delete=models.CASCADE, related_name="replies")
    # Token usage, engine, latency: whatever the turn wants to remember about this message.
    metadata = models.JSONField(default=dict, blank=True)
    created_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        ordering = ["created_at", "id"]
        indexes = [
            models.Index(fields=["conversation", "created_at", "id"], name="message_conversation_created"),
            # The thread's pages are read newest first by id (keyset pagination), as is a turn's history.
            models.Index(fields=["conversation", "id"], name="message_conversation_id"),
        ]

    def __str__(self) -> str:
        return f"{self.role}: {self.content[:60]}"
