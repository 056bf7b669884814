"""The knowledge base: sources, the index artifact built from their summaries, the AI policy row.

Sources and the index are written by `rebuild_kb_index`, in one transaction at the end of a
build, so what answers read (index text, source rows) always belongs to one complete build. The
one other writer is an admin disabling or removing an added source: its rows go and the index is
republished without them in one transaction, so answers stop citing it at once.
"""

from __future__ import annotations

import hashlib

from django.conf import settings
from django.contrib.postgres.indexes import GinIndex
from django.contrib.postgres.search import SearchVector, SearchVectorField
from django.core.validators import BaseValidator, MaxValueValidator, MinValueValidator
from django.db import models
from django.db.models.expressions import CombinedExpression
from django.urls import reverse

from knowledge import prompts


def source_search_vector() -> CombinedExpression:
    """The one expression behind the sources' full-text column, its GIN index and every ranking.

    Weighted so a match in a title outranks one in a summary, which outranks one in the body.
    It is stored (a generated column): ranking thousands of candidates must not re-parse their
    content on every query.
    """
    return (
        SearchVector("title", weight="A", config="english")
        + SearchVector("summary", weight="B", config="english")
        + SearchVector("content", weight="C", config="english")
    )


def content_hash(text: str) -> str:
    return hashlib.sha256(text.encode("utf-8")).hexdigest()


class AddedSource(models.Model):
    """A source an admin added in the admin: an uploaded file (its text stored here), a URL or a
    folder on the server. The environment's KNOWLEDGE_SOURCE_DIRS/URLS are the other origin
    ("from configuration"); both are read by every rebuild."""

    class Kind(models.TextChoices):
        UPLOAD = "upload", "Uploaded file"
        URL = "url", "URL"
        FOLDER = "folder", "Folder"

    kind = models.CharField(max_length=16, choices=Kind.choices)
    # The file's name (uploads), the URL, or the folder's absolute path: unique, so the same
    # place cannot be added twice.
    location = models.CharField(max_length=1000, unique=True)
    # Uploads only: the text as uploaded (UTF-8 validated when added), or a PDF's extracted text.
    content = models.TextField(blank=True)
    # Uploads and URLs: the hash of the text when added, to refuse the same content twice.
    content_hash = models.CharField(max_length=64, blank=True)
    enabled = models.BooleanField(default=True, help_text="Disabled: left out of the index and of answers until enabled again.")
    added_by = models.ForeignKey(settings.AUTH_USER_MODEL, null=True, blank=True, on_delete=models.SET_NULL, related_name="+")
    created_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        ordering = ["-created_at", "-id"]
        verbose_name = "added source"

    def __str__(self) -> str:
        return self.location

    @property
    def upload_source_id(self) -> str:
        return f"uploads/{self.location}"


class KnowledgeSource(models.Model):
    class Kind(models.TextChoices):
        MARKDOWN = "markdown", "Markdown"
        TEXT = "text", "Plain text"
        RST = "rst", "reStructuredText"
        HTML = "html", "HTML"

    # A path relative to the project (docs/user-guide/getting-started.md) or an http(s) URL.
    source_id = models.CharField(max_length=1000, unique=True)
    title = models.CharField(max_length=300)
    kind = models.CharField(max_length=16, choices=Kind.choices)
    # Readable text: HTML sources are stored converted to text, Markdown as written.
    content = models.TextField()
    content_hash = models.CharField(max_length=64)
    # One or two sentences for the index: what the source covers and when it is relevant.
    summary = models.TextField(blank=True)
    # The content hash the summary was written for; differs from content_hash while a
    # changed source's new summary keeps failing (the old one is served meanwhile).
    summary_hash = models.CharField(max_length=64, blank=True)
    last_summary_error = models.TextField(blank=True)
    # The admin-added source this page comes from; empty for pages from the configuration.
    origin = models.ForeignKey(AddedSource, null=True, blank=True, on_delete=models.CASCADE, related_name="pages")
    search_vector = models.GeneratedField(expression=source_search_vector(), output_field=SearchVectorField(), db_persist=True)
    created_at = models.DateTimeField(auto_now_add=True)
    updated_at = models.DateTimeField(auto_now=True)

    class Meta:
        ordering = ["source_id"]
        indexes = [GinIndex(fields=["search_vector"], name="kb_source_search_gin")]

    def __str__(self) -> str:
        return self.title or self.source_id

    @property
    def is_url(self) -> bool:
        return self.source_id.startswith(("http://", "https://"))

    @property
    def url(self) -> str:
        """Where a citation of this source leads: the original URL, or its page in the app."""
        return self.source_id if self.is_url else reverse("knowledge:source", args=[self.pk])

    @property
    def index_line(self) -> str:
        return index_line(self.source_id, self.summary, title=self.title)


def index_line(source_id: str, summary: str, *, title: str = "") -> str:
    """`source_id — Title: summary`: the selector reads each page's real title (the first
    top-level heading outside code), unless the summary already opens with it."""
    summary = " ".join(summary.split())
    title = " ".join(title.split())
    if title and not summary.lower().startswith(title.lower()):
        return f"{source_id} — {title}: {summary}"
    return f"{source_id} — {summary}"


class SummaryDraft(models.Model):
    """A summary made by a rebuild that has not been published yet.

    Written as each summary arrives, so a rebuild that dies half-way does not pay for the same
    model calls again; the next complete build publishes them and clears this table.
    """

    source_id = models.CharField(max_length=1000)
    content_hash = models.CharField(max_length=64)
    summary = models.TextField()
    created_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        constraints = [models.UniqueConstraint(fields=["source_id", "content_hash"], name="kb_summary_draft_unique")]

    def __str__(self) -> str:
        return f"Draft summary of {self.source_id}"


class KnowledgeIndex(models.Model):
    """One build of the index artifact: a `source_id — summary` line per source."""

    text = models.TextField(blank=True)
    source_count = models.PositiveIntegerField(default=0)
    summarised_count = models.PositiveIntegerField(default=0)
    failed_count = models.PositiveIntegerField(default=0)
    built_at = models.DateTimeField(auto_now_add=True)
    build_seconds = models.FloatField(default=0.0)
    is_current = models.BooleanField(default=False)

    class Meta:
        ordering = ["-built_at", "-id"]
        verbose_name = "knowledge-base index"
        verbose_name_plural = "knowledge-base index"
        constraints = [models.UniqueConstraint(fields=["is_current"], condition=models.Q(is_current=True), name="kb_index_one_current")]

    def __str__(self) -> str:
        return f"Index of {self.source_count} sources, built {self.built_at:%Y-%m-%d %H:%M}"


def _positive(max_value: float) -> list[BaseValidator]:
    return [MinValueValidator(0.1), MaxValueValidator(max_value)]


class AIConfig(models.Model):
    """Prompts and policies of the AI features, one row edited in the admin (the `ai.*` settings)."""

    singleton = models.BooleanField(default=True, unique=True, editable=False)

    # End-to-end limit of one answer (product policy). Each model call's timeout and retries are
    # the environment's LLM_TIMEOUT_SECONDS / LLM_MAX_RETRIES, shared with the chat.
    request_timeout_seconds = models.FloatField(
        default=60.0, validators=_positive(600), help_text="End-to-end limit for one knowledge-base answer."
    )

    # Prompts
    gating_prompt = models.TextField(default=prompts.default_gating_prompt)
    selection_prompt = models.TextField(default=prompts.default_selection_prompt)
    summarization_prompt = models.TextField(default=prompts.default_summarization_prompt)
    answer_prompt = models.TextField(default=prompts.default_answer_prompt)
    verification_prompt = models.TextField(default=prompts.default_verification_prompt)
    answer_scope_prompt = models.TextField(
        default=prompts.default_answer_scope_prompt, help_text="What topics the knowledge base answers (used by the gate)."
    )
    refusal_policy = models.TextField(
        default=prompts.default_refusal_policy, help_text="What to ignore and what to decline (used by the gate)."
    )
    chat_system_prompt = models.TextField(
        default=prompts.default_chat_system_prompt,
        blank=True,
        help_text="The chat agent's system prompt. {today} and {snapshot} (the workspace summary) are filled in. Empty: the built-in prompt.",
    )
    clarification_prompt = models.TextField(
        default=prompts.default_clarification_prompt,
        blank=True,
        help_text="Decides whether a request is clear enough or needs questions first. {threshold}, {context} and {request} "
        "are filled in. Empty: the built-in prompt.",
    )

    # Answer policy
    max_sources = models.PositiveSmallIntegerField(
        default=4, validators=[MinValueValidator(1), MaxValueValidator(20)], help_text="Sources loaded per answer."
    )
    max_source_chars = models.PositiveIntegerField(
        default=12000,
        validators=[MinValueValidator(500), MaxValueValidator(200_000)],
        help_text="Characters of each loaded source shown to the model.",
    )
    max_answer_chars = models.PositiveIntegerField(default=1500, validators=[MinValueValidator(100), MaxValueValidator(20_000)])
    require_citations = models.BooleanField(default=True, help_text="No citation, no reply.")

    # Questions the assistant asks (questions/)
    question_timeout_low_seconds = models.FloatField(default=8, validators=[MinValueValidator(1)])
    question_timeout_medium_seconds = models.FloatField(default=15, validators=[MinValueValidator(1)])
    question_timeout_high_seconds = models.FloatField(default=25, validators=[MinValueValidator(1)])
    ask_timeout_seconds = models.FloatField(
        default=300, validators=[MinValueValidator(1)], help_text="How long a question without a per-question deadline stays open."
    )
    clarification_threshold = models.FloatField(
        default=0.7,
        validators=[MinValueValidator(0.0), MaxValueValidator(1.0)],
        help_text="Below this confidence the assistant asks instead of guessing.",
    )

    updated_at = models.DateTimeField(auto_now=True)

    class Meta:
        verbose_name = "AI configuration"
        verbose_name_plural = "AI configuration"
        # With `singleton` unique, this makes a second row impossible, not just unlikely.
        constraints = [models.CheckConstraint(condition=models.Q(singleton=True), name="ai_config_single_row")]

    def __str__(self) -> str:
        return "AI configuration"


class AdapterToken(models.Model):
    """A bearer token for `POST /api/v1/reply`; only its SHA-256 is stored."""

    name = models.CharField(max_length=100, unique=True, help_text="Who uses it, e.g. 'discord-bot'.")
    token_hash = models.CharField(max_length=64, unique=True, editable=False)
    prefix = models.CharField(max_length=12, editable=False, help_text="The token's first characters, to tell tokens apart.")
    is_active = models.BooleanField(default=True)
    created_at = models.DateTimeField(auto_now_add=True)
    last_used_at = models.DateTimeField(null=True, blank=True, editable=False)

    class Meta:
        ordering = ["name"]

    def __str__(self) -> str:
        return f"{self.name} ({self.prefix}…)"


class RebuildJob(models.Model):
    """One requested rebuild of the index, durable across processes.

    The admin and `manage.py rebuild_kb_index` both create one and a runner in some process
    claims it; while it runs, that runner writes its progress and a heartbeat here, so any
    process can report it, and a job whose process died (no heartbeat, rebuild lock free) is
    seen as such instead of looking forever busy.
    """

    class Status(models.TextChoices):
        QUEUED = "queued", "queued"
        RUNNING = "running", "running"
        SUCCEEDED = "succeeded", "finished"
        FAILED = "failed", "failed"

    status = models.CharField(max_length=16, choices=Status.choices, default=Status.QUEUED)
    force = models.BooleanField(default=False, help_text="Summarise every source again.")
    force_source_ids = models.JSONField(default=list, blank=True, help_text="Sources summarised again even if unchanged.")
    requested_by = models.ForeignKey(settings.AUTH_USER_MODEL, null=True, blank=True, on_delete=models.SET_NULL, related_name="+")
    requested_via = models.CharField(max_length=16, default="admin")
    total = models.PositiveIntegerField(default=0, help_text="Sources to summarise in this build.")
    done = models.PositiveIntegerField(default=0)
    failed = models.PositiveIntegerField(default=0)
    current_source = models.CharField(max_length=1000, blank=True)
    worker = models.CharField(max_length=200, blank=True, help_text="host:pid of the process running it.")
    created_at = models.DateTimeField(auto_now_add=True)
    started_at = models.DateTimeField(null=True, blank=True)
    heartbeat_at = models.DateTimeField(null=True, blank=True)
    finished_at = models.DateTimeField(null=True, blank=True)
    outcome = models.TextField(blank=True)
    error = models.TextField(blank=True)

    class Meta:
        ordering = ["-created_at", "-id"]
        verbose_name = "index rebuild"
        indexes = [models.Index(fields=["status"], name="kb_rebuild_job_status")]

    def __str__(self) -> str:
        return f"Rebuild #{self.pk} ({self.get_status_display()})"

    @property
    def is_active(self) -> bool:
        return self.status in (self.Status.QUEUED, self.Status.RUNNING)

    @property
    def percent(self) -> int:
        return 100 * self.done // self.total if self.total else 0
