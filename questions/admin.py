from __future__ import annotations

from collections.abc import Iterator
from typing import TYPE_CHECKING

from asgiref.sync import async_to_sync
from django.contrib import admin, messages
from django.db.models import QuerySet
from django.http import HttpRequest
from django.template.defaultfilters import pluralize
from django.utils import timezone

from questions import services as question_services
from questions.models import PendingQuestion, QuestionGroup

if TYPE_CHECKING:
    # The shape django-stubs gives a filter's choices (a TypedDict that exists only in the stubs).
    from django.contrib.admin.filters import _ListFilterChoices
    from django.contrib.admin.views.main import ChangeList


class StatusFilter(admin.SimpleListFilter):
    """Pending questions first: the list opens on what still waits for someone."""

    title = "status"
    parameter_name = "status"
    DEFAULT = PendingQuestion.Status.PENDING

    def lookups(self, request: HttpRequest, model_admin: admin.ModelAdmin) -> list[tuple[str, str]]:
        return [*PendingQuestion.Status.choices, ("all", "All")]

    def choices(self, changelist: ChangeList) -> Iterator[_ListFilterChoices]:
        current = self.value() or self.DEFAULT
        for value, label in self.lookup_choices:
            yield {
                "selected": current == value,
                "query_string": changelist.get_query_string({self.parameter_name: value}),
                "display": label,
            }

    def queryset(self, request: HttpRequest, queryset: QuerySet[PendingQuestion]) -> QuerySet[PendingQuestion]:
        value = self.value() or self.DEFAULT
        return queryset if value == "all" else queryset.filter(status=value)


class PendingQuestionInline(admin.TabularInline):
    model = PendingQuestion
    extra = 0
    # One tuple for both: a list would be typed as `fields` is, which `readonly_fields` does not accept.
    fields = readonly_fields = ("position", "question", "status", "answer", "resolved_via", "deadline", "resolved_at")
    can_delete = False
    show_change_link = True


@admin.register(QuestionGroup)
class QuestionGroupAdmin(admin.ModelAdmin):
    list_display = ["kind", "user", "conversation", "tool_name", "created_at", "completed_at"]
    list_filter = ["kind", ("completed_at", admin.EmptyFieldListFilter)]
    search_fields = ["user__username", "tool_call_id", "questions__question"]
    list_select_related = ["user", "conversation"]
    readonly_fields = ["id", "conversation", "user", "kind", "tool_call_id", "tool_name", "payload", "created_at", "completed_at"]
    inlines = [PendingQuestionInline]


@admin.register(PendingQuestion)
class PendingQuestionAdmin(admin.ModelAdmin):
    list_display = ["question", "user", "status", "complexity", "deadline", "resolved_via", "created_at"]
    list_filter = [StatusFilter, "complexity", "resolved_via", "multi_select", "destructive"]
    actions = ["cancel_selected", "expire_selected"]
    search_fields = ["question", "answer", "user__username"]
    list_select_related = ["user"]
    date_hierarchy = "created_at"
    readonly_fields = [f.name for f in PendingQuestion._meta.fields]
    fieldsets = [
        (None, {"fields": ["id", "group", "position", "conversation", "user", "tool_call_id"]}),
        (
            "Question",
            {"fields": ["header", "question", "options", "allow_custom", "placeholder", "multi_select", "complexity", "destructive"]},
        ),
        (
            "Deadline",
            {
                "fields": [
                    "timeout_seconds",
                    "deadline",
                    "paused_at",
                    "remaining_at_pause",
                    "pause_seconds_used",
                    "default_indexes",
                    "guessed_at",
                ]
            },
        ),
        ("Resolution", {"fields": ["status", "answer", "is_custom", "selected_indexes", "resolved_via", "created_at", "resolved_at"]}),
    ]

    def has_add_permission(self, request: HttpRequest) -> bool:
        return False  # questions are asked by the agent, never typed into the admin

    # Both actions resolve through the same code as the chat (card, deadline timer), so the
    # conversation continues exactly as after a skip or a timeout: receipt, tool result, next turn.

    @admin.action(description="Cancel the selected questions (and the rest of their group)")
    def cancel_selected(self, request: HttpRequest, queryset: QuerySet[PendingQuestion]) -> None:
        from chat import answering  # the continuation lives in chat, which imports this app

        groups = QuestionGroup.objects.filter(
            pk__in=queryset.filter(status=PendingQuestion.Status.PENDING).values("group_id")
        ).select_related("user")
        cancelled = 0
        for group in groups:
            try:
                receipt = async_to_sync(answering.skip)(user=group.user, group_id=group.pk)
            except question_services.AlreadyResolved:
                continue
            cancelled += len(receipt.resolution.changed)
        skipped = queryset.exclude(status=PendingQuestion.Status.PENDING).count()
        self._report(request, f"Cancelled {cancelled} question{pluralize(cancelled)}", skipped)

    @admin.action(description="Expire the selected questions now (apply their default, as on timeout)")
    def expire_selected(self, request: HttpRequest, queryset: QuerySet[PendingQuestion]) -> None:
        from chat import answering

        expired, waiting = 0, 0
        for question in queryset.filter(status=PendingQuestion.Status.PENDING).order_by("group_id", "position"):
            question.refresh_from_db()
            if not question.is_pending:
                continue
            if question.deadline is None:
                waiting += 1  # a later question of its group: its clock has not started
                continue
            early = max(0.0, (question.deadline - timezone.now()).total_seconds()) + 1.0
            if async_to_sync(answering.expire)(question.pk, early_seconds=early) is not None:
                expired += 1
        skipped = queryset.exclude(status=PendingQuestion.Status.PENDING).count()
        text = f"Expired {expired} question{pluralize(expired)}"
        if waiting:
            text += f"; {waiting} later question{pluralize(waiting)} of a group {pluralize(waiting, 'is,are')} not current yet"
        self._report(request, text, skipped)

    def _report(self, request: HttpRequest, text: str, skipped: int) -> None:
        if skipped:
            text += f"; {skipped} already resolved {pluralize(skipped, 'was,were')} left as {pluralize(skipped, 'it was,they were')}"
        messages.success(request, text + ".")
