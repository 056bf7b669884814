import uuid

from django.conf import settings
from django.db import models


class QuestionGroup(models.Model):
    """Questions asked together (one tool call, one confirmation, one clarification round).

    The group — not the coroutine that asked — is what waits for the person. When its last
    question resolves, exactly one resolver completes the group (a conditional UPDATE on
    `completed_at`) and continues the conversation.
    """

    class Kind(models.TextChoices):
        ASK = "ask", "Question"
        CONFIRM = "confirm", "Confirmation"
        CLARIFY = "clarify", "Clarification"
        DETECTED = "detected", "Question from a reply"

    id = models.UUIDField(primary_key=True, default=uuid.uuid4, editable=False)
    # A string reference keeps this app free of imports from chat (chat imports questions).
    conversation = models.ForeignKey("chat.Conversation", on_delete=models.CASCADE, related_name="question_groups")
    user = models.ForeignKey(settings.AUTH_USER_MODEL, on_delete=models.CASCADE, related_name="question_groups")
    kind = models.CharField(max_length=16, choices=Kind.choices, default=Kind.ASK)
    # The tool call these questions answer (ask_user / propose_operations); blank for clarification
    # and detected questions, which continue the conversation with a user message instead.
    tool_call_id = models.CharField(max_length=200, blank=True)
    tool_name = models.CharField(max_length=100, blank=True)
    # Kind-specific data: the operations of a confirmation, the analysis of a clarification…
    payload = models.JSONField(default=dict, blank=True)
    created_at = models.DateTimeField(auto_now_add=True)
    completed_at = models.DateTimeField(null=True, blank=True)
    # Raised by every write to the group or its questions, under the group's lock. A card carries
    # it, so a tab shown a newer card drops an older render that reaches it late.
    revision = models.PositiveIntegerField(default=0)

    class Meta:
        ordering = ["created_at"]
        indexes = [
            models.Index(fields=["conversation", "completed_at"], name="qgroup_conversation_open"),
            models.Index(fields=["conversation", "-created_at"], name="qgroup_conversation_recent"),
        ]

    def __str__(self) -> str:
        return f"{self.get_kind_display()} in {self.conversation_id}"


class PendingQuestion(models.Model):
    class Status(models.TextChoices):
        PENDING = "pending", "Pending"
        ANSWERED = "answered", "Answered"
        TIMED_OUT = "timed_out", "Timed out"
        CANCELLED = "cancelled", "Cancelled"

    class Complexity(models.TextChoices):
        LOW = "low", "Low"
        MEDIUM = "medium", "Medium"
        HIGH = "high", "High"

    class ResolvedVia(models.TextChoices):
        OPTION = "option", "Picked an option"
        OPTIONS = "options", "Picked several options"
        CUSTOM = "custom", "Typed an answer"
        CHAT_TEXT = "chat_text", "Typed in the chat box"
        SHORTHAND = "shorthand", "Shorthand in the chat box"
        TIMEOUT_DEFAULT = "timeout_default", "Timed out, default applied"
        TIMEOUT_NONE = "timeout_none", "Timed out, no default"
        SKIPPED = "skipped", "Skipped"

    id = models.UUIDField(primary_key=True, default=uuid.uuid4, editable=False)
    group = models.ForeignKey(QuestionGroup, on_delete=models.CASCADE, related_name="questions")
    position = models.PositiveSmallIntegerField(default=0)
    conversation = models.ForeignKey("chat.Conversation", on_delete=models.CASCADE, related_name="pending_questions")
    user = models.ForeignKey(settings.AUTH_USER_MODEL, on_delete=models.CASCADE, related_name="pending_questions")
    tool_call_id = models.CharField(max_length=200, blank=True)

    question = models.CharField(max_length=500)
    header = models.CharField(max_length=40, blank=True)  # the short chip above the question
    # [{"label", "description", "confidence"?, "reasoning"?, "maps_to"?}]
    options = models.JSONField(default=list)
    allow_custom = models.BooleanField(default=True)
    placeholder = models.CharField(max_length=100, blank=True)
    multi_select = models.BooleanField(default=False)
    complexity = models.CharField(max_length=8, choices=Complexity.choices, blank=True)
    # A confirmation of something destructive: its default is never the "yes" option.
    destructive = models.BooleanField(default=False)

    timeout_seconds = models.FloatField(null=True, blank=True)
    # Set when the question becomes the one on screen; a reload shows what is left of it.
    deadline = models.DateTimeField(null=True, blank=True)
    paused_at = models.DateTimeField(null=True, blank=True)
    remaining_at_pause = models.FloatField(null=True, blank=True)
    pause_seconds_used = models.FloatField(default=0)
    # Option indexes applied on timeout (the guesser's top option); empty → none.
    default_indexes = models.JSONField(default=list, blank=True)
    guessed_at = models.DateTimeField(null=True, blank=True)

    status = models.CharField(max_length=16, choices=Status.choices, default=Status.PENDING)
    answer = models.TextField(blank=True)
    is_custom = models.BooleanField(default=False)
    selected_indexes = models.JSONField(default=list, blank=True)
    resolved_via = models.CharField(max_length=20, choices=ResolvedVia.choices, blank=True)
    created_at = models.DateTimeField(auto_now_add=True)
    resolved_at = models.DateTimeField(null=True, blank=True)

    class Meta:
        ordering = ["group", "position"]
        indexes = [
            models.Index(fields=["user", "status"], name="question_user_status"),
            models.Index(fields=["status", "deadline"], name="question_status_deadline"),
            models.Index(fields=["conversation", "status"], name="question_conversation_status"),
        ]

    def __str__(self) -> str:
        return self.question

    @property
    def is_pending(self) -> bool:
        return self.status == self.Status.PENDING

    @property
    def option_keys(self) -> str:
        return "abcdefghij"[: len(self.options)]
