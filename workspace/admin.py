from django.contrib import admin

from workspace.models import Note, Project, Task


@admin.register(Project)
class ProjectAdmin(admin.ModelAdmin):
    list_display = ["name", "owner", "archived", "updated_at"]
    list_filter = ["archived"]
    search_fields = ["name", "description", "owner__username"]
    list_select_related = ["owner"]
    raw_id_fields = ["owner"]


@admin.register(Task)
class TaskAdmin(admin.ModelAdmin):
    list_display = ["title", "owner", "project", "status", "priority", "due_date", "completed_at", "updated_at"]
    list_filter = ["status", "priority"]
    search_fields = ["title", "owner__username"]
    list_select_related = ["owner", "project"]
    raw_id_fields = ["owner", "project"]
    readonly_fields = ["completed_at"]  # kept by the status: set when completed, cleared when reopened
    date_hierarchy = "created_at"


@admin.register(Note)
class NoteAdmin(admin.ModelAdmin):
    list_display = ["title", "owner", "project", "updated_at"]
    search_fields = ["title", "owner__username"]
    list_select_related = ["owner", "project"]
    raw_id_fields = ["owner", "project"]
