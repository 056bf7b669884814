from __future__ import annotations

from collections.abc import Sequence
from typing import Any, cast

from django import forms
from django.conf import settings
from django.contrib import admin, messages
from django.core.exceptions import PermissionDenied
from django.db.models import Count, Model, QuerySet
from django.http import HttpRequest, HttpResponse, HttpResponseRedirect
from django.template.defaultfilters import pluralize
from django.template.response import TemplateResponse
from django.urls import URLPattern, path, reverse
from django.utils.html import format_html, format_html_join
from django.utils.safestring import mark_safe
from django.utils.text import Truncator
from django.views.decorators.http import require_GET, require_POST

from knowledge import prompts, selectors, services
from knowledge.models import AdapterToken, AddedSource, AIConfig, KnowledgeIndex, KnowledgeSource, RebuildJob
from knowledge.sources import SourceRejected
from project.users import User


class ReadOnlyAdmin(admin.ModelAdmin):
    """Rows the app writes (rebuilds, pipelines): admins look, they don't edit."""

    def has_add_permission(self, request: HttpRequest) -> bool:
        return False

    def has_change_permission(self, request: HttpRequest, obj: Model | None = None) -> bool:
        return False

    def has_delete_permission(self, request: HttpRequest, obj: Model | None = None) -> bool:
        return False


# Settings that belong to the deployment (where the model is, transport limits, feature switches)
# come from the environment and are shown read-only; product policy is edited on this page.
ENVIRONMENT_SETTINGS = [
    ("LLM_BASE_URL", "Model endpoint (empty: the offline engine)"),
    ("LLM_MODEL", "Model name"),
    ("LLM_API_KEY", "API key"),
    ("LLM_TIMEOUT_SECONDS", "Timeout of each model call, in seconds"),
    ("LLM_MAX_RETRIES", "Retries after a transient model failure"),
    ("AGENT_MAX_LLM_CALLS", "Model calls per chat turn"),
    ("CHAT_MESSAGE_MAX_CHARS", "Longest message a person may send"),
    ("CLARIFICATION_ENABLED", "Ask clarifying questions before acting"),
    ("QUESTION_DETECTOR_ENABLED", "Turn questions in replies into cards"),
    ("QUESTION_GUESSER_ENABLED", "Rank a question's options with the model"),
    ("QUESTION_PAUSE_CAP_SECONDS", "Longest a countdown may stay paused while typing"),
    ("QUESTIONS_MAX_PENDING_PER_USER", "Open questions per person"),
    ("QUESTIONS_MIN_INTERVAL_SECONDS", "Minimum seconds between new questions in a conversation"),
]
SECRET_SETTINGS = {"LLM_API_KEY"}


class AIConfigForm(forms.ModelForm):
    """Prompt fields get a "reset to default" box; prompts the code fills in are checked for
    placeholders it does not know (an unknown {name} would break every turn)."""

    class Meta:
        model = AIConfig
        fields = "__all__"  # noqa: DJ007  (the admin's fieldsets choose which fields show)

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        for field, default in prompts.defaults_by_field().items():
            if field in self.fields and self.instance.pk and not getattr(self.instance, field):
                self.initial[field] = default  # an empty prompt means the built-in one: show it

    def clean(self) -> dict[str, Any]:
        super().clean()  # returns cleaned_data, typed as possibly None
        cleaned = self.cleaned_data
        defaults = prompts.defaults_by_field()
        for field, default in defaults.items():
            if cleaned.get(f"reset_{field}"):
                cleaned[field] = default
                self.errors.pop(field, None)
                continue
            built_in = prompts.BUILT_IN_PROMPTS.get(field)
            text = cleaned.get(field)
            if built_in is not None and text:
                try:
                    text.format(**{name: "" for name in built_in.placeholders})
                except (KeyError, IndexError, ValueError) as exc:
                    allowed = ", ".join("{" + name + "}" for name in built_in.placeholders)
                    problem = f"unknown placeholder {{{exc.args[0]}}}" if isinstance(exc, KeyError) else "a stray { or }"
                    self.add_error(field, f"This prompt has {problem}. It may use {allowed}; write {{{{ and }}}} for literal braces.")
        return cleaned


def _reset_box() -> forms.BooleanField:
    return forms.BooleanField(
        required=False, label="Reset to default", help_text="Replace the text above with the built-in prompt when saving."
    )


PROMPT_FIELDS = [
    "gating_prompt", "selection_prompt", "summarization_prompt", "answer_prompt", "verification_prompt",
    "answer_scope_prompt", "refusal_policy", "chat_system_prompt", "clarification_prompt",
]  # fmt: skip
for _field in PROMPT_FIELDS:
    AIConfigForm.base_fields[f"reset_{_field}"] = AIConfigForm.declared_fields[f"reset_{_field}"] = _reset_box()


@admin.register(AIConfig)
class AIConfigAdmin(admin.ModelAdmin):
    """One row: the list page goes straight to it."""

    form = AIConfigForm
    fieldsets = [
        (
            "From the environment (read-only)",
            {
                "fields": ["environment_settings"],
                "description": "Deployment settings are read from environment variables (or .env) when Clarion starts; "
                "change them there and restart. Everything below this box is stored in the database and edited here; "
                "it applies from the next request.",
            },
        ),
        (
            "Knowledge-base answers",
            {
                "fields": ["request_timeout_seconds"],
                "description": "Each model call's timeout and retries are LLM_TIMEOUT_SECONDS and LLM_MAX_RETRIES above, as in the chat.",
            },
        ),
        (
            "What the knowledge base answers",
            {
                "fields": ["answer_scope_prompt", "reset_answer_scope_prompt", "refusal_policy", "reset_refusal_policy"],
                "description": "Read by the gate before anything else: tune what the assistant answers and what it ignores.",
            },
        ),
        (
            "Chat prompts",
            {
                "fields": ["chat_system_prompt", "reset_chat_system_prompt", "clarification_prompt", "reset_clarification_prompt"],
                "description": "The chat agent's instructions, and the check that decides when to ask before acting.",
            },
        ),
        (
            "Knowledge-base prompts",
            {
                "fields": [
                    "gating_prompt",
                    "reset_gating_prompt",
                    "selection_prompt",
                    "reset_selection_prompt",
                    "answer_prompt",
                    "reset_answer_prompt",
                    "verification_prompt",
                    "reset_verification_prompt",
                    "summarization_prompt",
                    "reset_summarization_prompt",
                ],
                "description": "The JSON format each step must return is appended automatically. "
                "A changed summarisation prompt applies to new and changed sources; run rebuild_kb_index --force to apply it to all.",
            },
        ),  # fmt: skip
        ("Answers", {"fields": ["max_sources", "max_source_chars", "max_answer_chars", "require_citations"]}),
        (
            "Questions the assistant asks",
            {
                "fields": [
                    "question_timeout_low_seconds",
                    "question_timeout_medium_seconds",
                    "question_timeout_high_seconds",
                    "ask_timeout_seconds",
                    "clarification_threshold",
                ]
            },
        ),
    ]
    readonly_fields = ["environment_settings", "updated_at"]

    def has_add_permission(self, request: HttpRequest) -> bool:
        return False

    def has_delete_permission(self, request: HttpRequest, obj: AIConfig | None = None) -> bool:
        return False

    def changelist_view(self, request: HttpRequest, extra_context: dict[str, Any] | None = None) -> HttpResponse:
        config = selectors.get_ai_config()
        return HttpResponseRedirect(reverse("admin:knowledge_aiconfig_change", args=[config.pk]))

    @admin.display(description="Environment")
    def environment_settings(self, obj: AIConfig | None = None) -> str:
        rows = []
        for name, meaning in ENVIRONMENT_SETTINGS:
            value = getattr(settings, name, "")
            if name in SECRET_SETTINGS:
                shown = "set (hidden)" if value else "not set"
            elif value in ("", None):
                shown = "not set"
            else:
                shown = str(value)
            rows.append(format_html('<tr><th scope="row"><code>{}</code></th><td>{}</td><td>{}</td></tr>', name, shown, meaning))
        header = mark_safe('<thead><tr><th scope="col">Variable</th><th scope="col">Value</th><th scope="col">Meaning</th></tr></thead>')
        return format_html(
            '<table class="environment-settings">{}<tbody>{}</tbody></table>', header, format_html_join("", "{}", ((r,) for r in rows))
        )


class SummaryStatusFilter(admin.SimpleListFilter):
    title = "summary"
    parameter_name = "summary"

    def lookups(self, request: HttpRequest, model_admin: admin.ModelAdmin) -> list[tuple[str, str]]:
        return [("failed", "Last attempt failed"), ("missing", "Not indexed (no summary)"), ("ok", "Up to date")]

    def queryset(self, request: HttpRequest, queryset: QuerySet[KnowledgeSource]) -> QuerySet[KnowledgeSource]:
        if self.value() == "failed":
            return queryset.exclude(last_summary_error="")
        if self.value() == "missing":
            return queryset.filter(summary="")
        if self.value() == "ok":
            return queryset.filter(last_summary_error="").exclude(summary="")
        return queryset


class OriginFilter(admin.SimpleListFilter):
    """Where a page comes from, in the words of the list's "from" column."""

    title = "from"
    parameter_name = "from"

    def lookups(self, request: HttpRequest, model_admin: admin.ModelAdmin) -> list[tuple[str, str]]:
        return [("configuration", "Configuration"), ("added", "Added in the admin")]

    def queryset(self, request: HttpRequest, queryset: QuerySet[KnowledgeSource]) -> QuerySet[KnowledgeSource]:
        if self.value() == "configuration":
            return queryset.filter(origin__isnull=True)
        if self.value() == "added":
            return queryset.filter(origin__isnull=False)
        return queryset


SOURCE_FIELDS = (
    "source_id",
    "title",
    "kind",
    "summary",
    "content_hash",
    "summary_hash",
    "last_summary_error",
    "origin_text",
    "page_link",
    "created_at",
    "updated_at",
    "content",
)


@admin.register(KnowledgeSource)
class KnowledgeSourceAdmin(ReadOnlyAdmin):
    """Read-only: the indexed pages, written by rebuild_kb_index from the configured folders and
    URLs and from the sources added in the admin (managed under "Added sources")."""

    # What tells one page from another and whether it is indexed; the summary and the hashes are
    # on each page's own view (a summary column made every row a dozen lines tall).
    list_display = ["title", "source_id", "kind", "origin_text", "summary_state", "updated_at"]
    list_filter = [SummaryStatusFilter, "kind", OriginFilter]
    search_fields = ["source_id", "title", "summary"]
    fields = readonly_fields = SOURCE_FIELDS
    actions = ["rebuild_index", "resummarise_and_rebuild"]

    def get_queryset(self, request: HttpRequest) -> QuerySet[KnowledgeSource]:
        return super().get_queryset(request).defer("search_vector").select_related("origin")

    @admin.display(description="from")
    def origin_text(self, obj: KnowledgeSource) -> str:
        if obj.origin is None:
            return "configuration"
        return format_html('<a href="{}">{}</a>', reverse("admin:knowledge_addedsource_change", args=[obj.origin.pk]), obj.origin)

    @admin.display(description="summary state")
    def summary_state(self, obj: KnowledgeSource) -> str:
        if obj.last_summary_error:
            return format_html('<span title="{}" class="kb-failed">failed</span>', obj.last_summary_error)
        return "ok" if obj.summary else "missing"

    @admin.display(description="page")
    def page_link(self, obj: KnowledgeSource) -> str:
        return format_html('<a href="{}">{}</a>', obj.url, obj.url)

    @admin.action(description="Rebuild index (new and changed sources only)")
    def rebuild_index(self, request: HttpRequest, queryset: QuerySet[KnowledgeSource]) -> HttpResponseRedirect:
        return _start_rebuild(request)

    @admin.action(description="Re-summarise the selected sources and rebuild the index")
    def resummarise_and_rebuild(self, request: HttpRequest, queryset: QuerySet[KnowledgeSource]) -> HttpResponseRedirect:
        ids = list(queryset.values_list("source_id", flat=True))
        return _start_rebuild(request, force_source_ids=ids)


def _start_rebuild(request: HttpRequest, *, force_source_ids: list[str] | None = None, waiting: str = "") -> HttpResponseRedirect:
    """Queue a durable rebuild job, run it in a thread of this process, and show its progress.
    `waiting`: what stays unindexed if another rebuild is running already."""
    try:
        job = services.request_rebuild(user=acting_user(request), force_source_ids=force_source_ids or [], via="admin")
    except services.RebuildAlreadyRunning as exc:
        messages.warning(request, f"{exc} Its progress is shown below; {waiting or 'try again when it has finished.'}")
    else:
        services.run_rebuild_job_in_background(job_id=job.pk)
        what = (
            f"re-summarising {len(job.force_source_ids)} selected source{pluralize(len(job.force_source_ids))}"
            if job.force_source_ids
            else "new and changed sources only"
        )
        messages.success(
            request, f"Rebuild #{job.pk} started ({what}). The current index keeps serving answers until the new one is complete."
        )
    return HttpResponseRedirect(reverse("admin:knowledge_knowledgeindex_changelist"))


def rebuild_status_context() -> dict[str, object]:
    """The latest rebuild job, after reporting the ones whose process died."""
    services.fail_stale_rebuild_jobs()
    job = RebuildJob.objects.select_related("requested_by").first()
    return {"job": job, "job_requested_by": requested_by_text(job) if job else "", "poll_seconds": REBUILD_POLL_SECONDS}


# The index page asks for the running job's progress this often (htmx polling, no inline script).
REBUILD_POLL_SECONDS = 2


@admin.register(KnowledgeIndex)
class KnowledgeIndexAdmin(ReadOnlyAdmin):
    """A read-only page: the current artifact, its build, the sources whose summary failed."""

    def get_urls(self) -> list[URLPattern]:
        rebuild = self.admin_site.admin_view(require_POST(self.rebuild_view))
        status = self.admin_site.admin_view(require_GET(self.rebuild_status_view))
        return [
            path("rebuild/", rebuild, name="knowledge_knowledgeindex_rebuild"),
            path("rebuild/status/", status, name="knowledge_knowledgeindex_rebuild_status"),
            *super().get_urls(),
        ]

    def changelist_view(self, request: HttpRequest, extra_context: dict[str, Any] | None = None) -> HttpResponse:
        if not self.has_view_permission(request):
            return super().changelist_view(request, extra_context)
        context = {
            **self.admin_site.each_context(request),
            "title": "Knowledge-base index",
            "opts": self.model._meta,
            "current": selectors.current_index(),
            "builds": KnowledgeIndex.objects.defer("text")[:10],
            "counts": selectors.source_counts(),
            "failed_sources": selectors.sources_with_failed_summaries()[:200],
            **rebuild_status_context(),
            "can_rebuild": request.user.has_perm("knowledge.change_knowledgesource") or request.user.is_superuser,
        }
        return TemplateResponse(request, "knowledge/admin_index_page.html", context)

    def rebuild_view(self, request: HttpRequest) -> HttpResponseRedirect:
        if request.user.is_superuser or request.user.has_perm("knowledge.change_knowledgesource"):
            return _start_rebuild(request)
        messages.error(request, "You do not have permission to rebuild the index.")
        return HttpResponseRedirect(reverse("admin:knowledge_knowledgeindex_changelist"))

    def rebuild_status_view(self, request: HttpRequest) -> TemplateResponse:
        """The progress partial the index page polls while a rebuild runs."""
        if not self.has_view_permission(request):
            raise PermissionDenied
        return TemplateResponse(request, "knowledge/_rebuild_status.html", {**rebuild_status_context(), "polled": True})


@admin.register(RebuildJob)
class RebuildJobAdmin(ReadOnlyAdmin):
    """Every requested rebuild: who asked, when it ran, how far it got and how it ended."""

    list_display = ["__str__", "status", "progress", "requested", "started_at", "finished_at", "short_outcome"]
    list_filter = ["status", "requested_via"]
    fields = readonly_fields = (
        "status", "requested", "force", "force_source_ids", "total", "done", "failed", "current_source",
        "worker", "created_at", "started_at", "heartbeat_at", "finished_at", "outcome", "error",
    )  # fmt: skip

    def get_queryset(self, request: HttpRequest) -> QuerySet[RebuildJob]:
        services.fail_stale_rebuild_jobs()
        return super().get_queryset(request).select_related("requested_by")

    @admin.display(description="progress")
    def progress(self, obj: RebuildJob) -> str:
        return f"{obj.done}/{obj.total}" + (f", {obj.failed} failed" if obj.failed else "")

    @admin.display(description="requested by")
    def requested(self, obj: RebuildJob) -> str:
        return requested_by_text(obj)

    @admin.display(description="outcome")
    def short_outcome(self, obj: RebuildJob) -> str:
        return Truncator(obj.error if obj.status == RebuildJob.Status.FAILED else obj.outcome).chars(120)


def requested_by_text(job: RebuildJob) -> str:
    if job.requested_via == "command":
        return "manage.py rebuild_kb_index"
    return job.requested_by.get_username() if job.requested_by else "a deleted user"


def acting_user(request: HttpRequest) -> User:
    # Every admin view runs behind admin_view, which lets only logged-in staff through.
    return cast(User, request.user)


class AddSourceForm(forms.Form):
    """One of three ways to add a source; the service checks the source itself."""

    file = forms.FileField(
        required=False,
        label="Upload a file",
        help_text="Markdown, plain text, reStructuredText or HTML encoded as UTF-8, or a PDF with a text layer.",
    )
    url = forms.CharField(
        required=False, max_length=1000, label="Or a URL", help_text="An http(s) page; it is fetched again by every rebuild."
    )
    folder = forms.CharField(
        required=False,
        max_length=1000,
        label="Or a folder on the server",
        help_text="Read like KNOWLEDGE_SOURCE_DIRS (superusers only): every .md, .txt, .rst and .html file in it.",
    )

    def clean(self) -> dict[str, Any]:
        super().clean()  # returns cleaned_data, typed as possibly None
        cleaned = self.cleaned_data
        given = [name for name in ("file", "url", "folder") if cleaned.get(name)]
        if len(given) != 1:
            raise forms.ValidationError("Give one of: a file, a URL or a folder.")
        return cleaned


@admin.register(AddedSource)
class AddedSourceAdmin(admin.ModelAdmin):
    """Sources added here: uploaded files, URLs and server folders. Those from the configuration
    (KNOWLEDGE_SOURCE_DIRS/URLS) are listed above them and change only with the environment."""

    list_display = ["location", "kind", "enabled", "page_count", "added_by", "created_at"]
    list_filter = ["kind", "enabled"]
    search_fields = ["location"]
    fields = readonly_fields = ("kind", "location", "enabled", "page_count", "content_hash", "added_by", "created_at")
    actions = ["disable_selected", "enable_selected", "delete_selected"]
    change_list_template = "knowledge/admin_added_sources.html"

    def get_queryset(self, request: HttpRequest) -> QuerySet[AddedSource]:
        return super().get_queryset(request).defer("content").select_related("added_by").annotate(page_total=Count("pages"))

    def has_change_permission(self, request: HttpRequest, obj: AddedSource | None = None) -> bool:
        # The list's enable/disable actions change sources; a source's own page is read-only.
        return obj is None and super().has_change_permission(request)

    @admin.display(description="indexed pages", ordering="page_total")
    def page_count(self, obj: AddedSource) -> int:
        return getattr(obj, "page_total", 0)

    def changelist_view(self, request: HttpRequest, extra_context: dict[str, Any] | None = None) -> HttpResponse:
        configured = [("folder", str(d)) for d in settings.KNOWLEDGE_SOURCE_DIRS] + [("URL", u) for u in settings.KNOWLEDGE_SOURCE_URLS]
        return super().changelist_view(request, {**(extra_context or {}), "configured_sources": configured})

    def add_view(self, request: HttpRequest, form_url: str = "", extra_context: dict[str, Any] | None = None) -> HttpResponse:
        if not self.has_add_permission(request):
            raise PermissionDenied
        form = AddSourceForm(request.POST, request.FILES) if request.method == "POST" else AddSourceForm()
        status = 200
        if request.method == "POST" and form.is_valid():
            try:
                added = self._add(request, form.cleaned_data)
            except SourceRejected as exc:
                messages.error(request, exc.message)
                status = exc.status
            else:
                messages.success(request, f"Added “{added.location}” ({added.get_kind_display().lower()}).")
                return _start_rebuild(
                    request, waiting="the new source is indexed by the next rebuild: start one when this one has finished."
                )
        elif request.method == "POST":
            status = 422
        context = {
            **self.admin_site.each_context(request),
            "title": "Add a knowledge source",
            "opts": self.model._meta,
            "form": form,
            "max_bytes": settings.KNOWLEDGE_MAX_SOURCE_BYTES,
        }
        return TemplateResponse(request, "knowledge/admin_add_source.html", context, status=status)

    @staticmethod
    def _add(request: HttpRequest, data: dict[str, Any]) -> AddedSource:
        if upload := data.get("file"):
            if upload.size > settings.KNOWLEDGE_MAX_SOURCE_BYTES:  # not read into memory at all
                raise SourceRejected(
                    f"“{upload.name}” is larger than {settings.KNOWLEDGE_MAX_SOURCE_BYTES:,} bytes (KNOWLEDGE_MAX_SOURCE_BYTES)."
                )
            return services.add_uploaded_source(user=acting_user(request), name=upload.name, data=upload.read())
        if data.get("url"):
            return services.add_url_source(user=acting_user(request), url=data["url"])
        return services.add_folder_source(user=acting_user(request), path=data["folder"])

    @admin.action(description="Disable the selected sources (answers stop citing them at once)", permissions=["change"])
    def disable_selected(self, request: HttpRequest, queryset: QuerySet[AddedSource]) -> None:
        count = services.set_added_sources_enabled(
            user=acting_user(request), source_ids=list(queryset.values_list("pk", flat=True)), enabled=False
        )
        messages.success(request, f"Disabled {count} source{pluralize(count)}; the index no longer lists {'it' if count == 1 else 'them'}.")

    @admin.action(description="Enable the selected sources and index them", permissions=["change"])
    def enable_selected(self, request: HttpRequest, queryset: QuerySet[AddedSource]) -> HttpResponseRedirect | None:
        count = services.set_added_sources_enabled(
            user=acting_user(request), source_ids=list(queryset.values_list("pk", flat=True)), enabled=True
        )
        if not count:
            messages.info(request, "The selected sources were enabled already.")
            return None
        messages.success(request, f"Enabled {count} source{pluralize(count)}.")
        return _start_rebuild(request, waiting="the enabled sources are indexed by the next rebuild: start one when this one has finished.")

    def get_deleted_objects(
        self, objs: Sequence[AddedSource] | QuerySet[AddedSource], request: HttpRequest
    ) -> tuple[list[str], dict[str, int], set[str], list[str]]:
        # The indexed pages go with their source; they are not edited on their own (read-only).
        deleted, counts, _, protected = super().get_deleted_objects(objs, request)
        return deleted, counts, set(), protected

    def delete_model(self, request: HttpRequest, obj: AddedSource) -> None:
        services.remove_added_sources(user=acting_user(request), source_ids=[obj.pk])

    def delete_queryset(self, request: HttpRequest, queryset: QuerySet[AddedSource]) -> None:
        services.remove_added_sources(user=acting_user(request), source_ids=list(queryset.values_list("pk", flat=True)))


@admin.register(AdapterToken)
class AdapterTokenAdmin(admin.ModelAdmin):
    list_display = ["name", "prefix", "is_active", "created_at", "last_used_at"]
    list_filter = ["is_active"]
    readonly_fields = ["prefix", "created_at", "last_used_at"]
    actions = ["deactivate_selected"]

    @admin.action(description="Deactivate the selected tokens (requests with them are refused)")
    def deactivate_selected(self, request: HttpRequest, queryset: QuerySet[AdapterToken]) -> None:
        count = services.deactivate_adapter_tokens(token_ids=list(queryset.values_list("pk", flat=True)))
        messages.success(request, f"Deactivated {count} token{'' if count == 1 else 's'}.")

    def get_fields(self, request: HttpRequest, obj: AdapterToken | None = None) -> tuple[str, ...]:
        return ("name",) if obj is None else ("name", "prefix", "is_active", "created_at", "last_used_at")

    def save_model(self, request: HttpRequest, obj: AdapterToken, form: forms.ModelForm, change: bool) -> None:
        if change:
            super().save_model(request, obj, form, change)
            return
        raw = services.new_adapter_token_value()
        obj.token_hash, obj.prefix = selectors.hash_token(raw), raw[:10]
        super().save_model(request, obj, form, change)
        messages.warning(
            request,
            format_html(
                "Token for “{}”: <code>{}</code> — copy it now, it is not stored and will not be shown again. "
                "Send it as <code>Authorization: Bearer …</code> to <code>POST /api/v1/reply</code>.",
                obj.name,
                raw,
            ),
        )
