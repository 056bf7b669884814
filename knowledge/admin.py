from __future__ import annotations

from django.contrib import admin, messages
from django.http import HttpRequest, HttpResponseRedirect
from django.template.response import TemplateResponse
from django.urls import path, reverse
from django.utils.html import format_html
from django.utils.text import Truncator
from django.views.decorators.http import require_POST

from knowledge import selectors, services
from knowledge.models import AdapterToken, AIConfig, KnowledgeIndex, KnowledgeSource


class ReadOnlyAdmin(admin.ModelAdmin):
    """Rows the app writes (rebuilds, pipelines): admins look, they don't edit."""

    def has_add_permission(self, request: HttpRequest) -> bool:
        return False

    def has_change_permission(self, request: HttpRequest, obj=None) -> bool:
        return False

    def has_delete_permission(self, request: HttpRequest, obj=None) -> bool:
        return False


@admin.register(AIConfig)
class AIConfigAdmin(admin.ModelAdmin):
    """One row: the list page goes straight to it."""

    fieldsets = [
        ("Timeouts and retries", {"fields": ["request_timeout_seconds", "llm_timeout_seconds", "max_retries"]}),
        (
            "What the knowledge base answers",
            {
                "fields": ["answer_scope_prompt", "refusal_policy"],
                "description": "Read by the gate before anything else: tune what the assistant answers and what it ignores.",
            },
        ),
        (
            "Prompts",
            {
                "fields": ["gating_prompt", "selection_prompt", "answer_prompt", "verification_prompt", "summarization_prompt"],
                "description": "The JSON format each step must return is appended automatically. "
                "A changed summarisation prompt applies to new and changed sources; run rebuild_kb_index --force to apply it to all.",
            },
        ),
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
    readonly_fields = ["updated_at"]

    def has_add_permission(self, request: HttpRequest) -> bool:
        return False

    def has_delete_permission(self, request: HttpRequest, obj=None) -> bool:
        return False

    def changelist_view(self, request: HttpRequest, extra_context=None):
        config = selectors.get_ai_config()
        return HttpResponseRedirect(reverse("admin:knowledge_aiconfig_change", args=[config.pk]))


class SummaryStatusFilter(admin.SimpleListFilter):
    title = "summary"
    parameter_name = "summary"

    def lookups(self, request, model_admin):
        return [("failed", "Last attempt failed"), ("missing", "Not indexed (no summary)"), ("ok", "Up to date")]

    def queryset(self, request, queryset):
        if self.value() == "failed":
            return queryset.exclude(last_summary_error="")
        if self.value() == "missing":
            return queryset.filter(summary="")
        if self.value() == "ok":
            return queryset.filter(last_summary_error="").exclude(summary="")
        return queryset


@admin.register(KnowledgeSource)
class KnowledgeSourceAdmin(ReadOnlyAdmin):
    """Read-only: sources come from the configured folders and URLs through rebuild_kb_index."""

    list_display = ["title", "source_id", "kind", "short_summary", "short_hash", "summary_state", "updated_at"]
    list_filter = [SummaryStatusFilter, "kind"]
    search_fields = ["source_id", "title", "summary"]
    fields = ["source_id", "title", "kind", "summary", "content_hash", "summary_hash", "last_summary_error", "page_link", "created_at", "updated_at", "content"]
    readonly_fields = fields
    actions = ["rebuild_index", "resummarise_and_rebuild"]

    def get_queryset(self, request):
        return super().get_queryset(request).defer("search_vector")


    @admin.display(description="summary")
    def short_summary(self, obj: KnowledgeSource) -> str:
        return Truncator(obj.summary).chars(120) or "—"

    @admin.display(description="content hash")
    def short_hash(self, obj: KnowledgeSource) -> str:
        return obj.content_hash[:12]

    @admin.display(description="summary state")
    def summary_state(self, obj: KnowledgeSource) -> str:
        if obj.last_summary_error:
            return format_html('<span title="{}" style="color:#b3261e">failed</span>', obj.last_summary_error)
        return "ok" if obj.summary else "missing"

    @admin.display(description="page")
    def page_link(self, obj: KnowledgeSource) -> str:
        return format_html('<a href="{}">{}</a>', obj.url, obj.url)

    @admin.action(description="Rebuild index (new and changed sources only)")
    def rebuild_index(self, request: HttpRequest, queryset) -> None:
        _start_rebuild(request)

    @admin.action(description="Re-summarise the selected sources and rebuild the index")
    def resummarise_and_rebuild(self, request: HttpRequest, queryset) -> None:
        ids = list(queryset.values_list("source_id", flat=True))
        _start_rebuild(request, force_source_ids=ids)


def _start_rebuild(request: HttpRequest, *, force_source_ids: list[str] | None = None) -> None:
    if selectors.rebuild_in_progress():
        messages.warning(request, "A rebuild is already running; try again when it has finished.")
        return
    services.start_rebuild_in_background(force_source_ids=force_source_ids or [])
    messages.success(
        request,
        "Rebuild started in the background. The current index keeps serving answers until the new one is complete; "
        "reload the knowledge-base index page to see the result.",
    )


@admin.register(KnowledgeIndex)
class KnowledgeIndexAdmin(ReadOnlyAdmin):
    """A read-only page: the current artifact, its build, the sources whose summary failed."""


    def get_urls(self):
        rebuild = self.admin_site.admin_view(require_POST(self.rebuild_view))
        return [path("rebuild/", rebuild, name="knowledge_knowledgeindex_rebuild"), *super().get_urls()]

    def changelist_view(self, request: HttpRequest, extra_context=None):
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
            "rebuild_running": selectors.rebuild_in_progress(),
            "can_rebuild": request.user.has_perm("knowledge.change_knowledgesource") or request.user.is_superuser,
        }
        return TemplateResponse(request, "knowledge/admin_index_page.html", context)

    def rebuild_view(self, request: HttpRequest):
        if request.user.is_superuser or request.user.has_perm("knowledge.change_knowledgesource"):
            _start_rebuild(request)
        else:
            messages.error(request, "You do not have permission to rebuild the index.")
        return HttpResponseRedirect(reverse("admin:knowledge_knowledgeindex_changelist"))


@admin.register(AdapterToken)
class AdapterTokenAdmin(admin.ModelAdmin):
    list_display = ["name", "prefix", "is_active", "created_at", "last_used_at"]
    list_filter = ["is_active"]
    readonly_fields = ["prefix", "created_at", "last_used_at"]

    def get_fields(self, request, obj=None):
        return ["name"] if obj is None else ["name", "prefix", "is_active", "created_at", "last_used_at"]

    def save_model(self, request, obj: AdapterToken, form, change) -> None:
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
