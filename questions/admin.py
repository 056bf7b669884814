from django.contrib import admin

from questions.models import PendingQuestion, QuestionGroup


class PendingQuestionInline(admin.TabularInline):
    model = PendingQuestion
    extra = 0
    fields = ["position", "question", "status", "answer", "resolved_via", "deadline", "resolved_at"]
    readonly_fields = fields
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
    list_filter = ["status", "complexity", "resolved_via", "multi_select", "destructive"]
    search_fields = ["question", "answer", "user__username"]
    list_select_related = ["user"]
    date_hierarchy = "created_at"
    readonly_fields = [f.name for f in PendingQuestion._meta.fields]
    fieldsets = [
        (None, {"fields": ["id", "group", "position", "conversation", "user", "tool_call_id"]}),
        ("Question", {"fields": ["header", "question", "options", "allow_custom", "placeholder", "multi_select", "complexity", "destructive"]}),
        ("Deadline", {"fields": ["timeout_seconds", "deadline", "paused_at", "remaining_at_pause", "pause_seconds_used", "default_indexes", "guessed_at"]}),
        ("Resolution", {"fields": ["status", "answer", "is_custom", "selected_indexes", "resolved_via", "created_at", "resolved_at"]}),
    ]

    def has_add_permission(self, request):
        return False  # questions are asked by the agent, never typed into the admin
