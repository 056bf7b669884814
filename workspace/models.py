from typing import Any

from django.conf import settings
from django.contrib.postgres.indexes import GinIndex, OpClass
from django.contrib.postgres.search import SearchVector
from django.db import models
from django.db.models import F, Q
from django.db.models.functions import Upper
from django.utils import timezone


def note_search_vector() -> SearchVector:
    """The one expression behind both the notes full-text index and every notes search.

    Postgres only uses an expression index when the query repeats the expression exactly, so the
    index and the selector both call this.
    """
    return SearchVector("title", "content", config="english")


class Project(models.Model):
    owner = models.ForeignKey(settings.AUTH_USER_MODEL, on_delete=models.CASCADE, related_name="projects")
    name = models.CharField(max_length=200)
    description = models.TextField(blank=True)
    archived = models.BooleanField(default=False)
    created_at = models.DateTimeField(auto_now_add=True)
    updated_at = models.DateTimeField(auto_now=True)

    class Meta:
        ordering = ["name", "id"]
        indexes = [models.Index(fields=["owner", "archived", "name"], name="project_owner_archived_name")]

    def __str__(self) -> str:
        return self.name


class Task(models.Model):
    class Status(models.TextChoices):
        TODO = "todo", "To do"
        IN_PROGRESS = "in_progress", "In progress"
        COMPLETED = "completed", "Completed"

    class Priority(models.TextChoices):
        LOW = "low", "Low"
        MEDIUM = "medium", "Medium"
        HIGH = "high", "High"
        URGENT = "urgent", "Urgent"

    owner = models.ForeignKey(settings.AUTH_USER_MODEL, on_delete=models.CASCADE, related_name="tasks")
    project = models.ForeignKey(Project, null=True, blank=True, on_delete=models.SET_NULL, related_name="tasks")
    title = models.CharField(max_length=500)
    description = models.TextField(blank=True)
    status = models.CharField(max_length=16, choices=Status.choices, default=Status.TODO)
    priority = models.CharField(max_length=8, choices=Priority.choices, default=Priority.MEDIUM)
    due_date = models.DateField(null=True, blank=True)
    # When the task became completed; None while it is not completed (see save()).
    completed_at = models.DateTimeField(null=True, blank=True, editable=False)
    created_at = models.DateTimeField(auto_now_add=True)
    updated_at = models.DateTimeField(auto_now=True)

    class Meta:
        ordering = ["-created_at", "-id"]
        indexes = [
            # Listing a user's tasks by status, newest first, stops after LIMIT rows on these.
            models.Index(fields=["owner", "status", "-created_at", "-id"], name="task_owner_status_created"),
            models.Index(fields=["owner", "-created_at", "-id"], name="task_owner_created"),
            models.Index(fields=["owner", "project", "status", "-created_at"], name="task_owner_project_status"),
            # What a user completed, the most recent first ("what did I finish this week?").
            models.Index(fields=["owner", "-completed_at", "-id"], condition=Q(status="completed"), name="task_owner_completed"),
            # `title__icontains` compiles to UPPER(title) LIKE UPPER(%term%); trigrams make it
            # indexable, and leading with the owner (btree_gin) keeps other users' matches out.
            GinIndex(F("owner"), OpClass(Upper("title"), name="gin_trgm_ops"), name="task_owner_title_trgm"),
        ]

    def __str__(self) -> str:
        return self.title

    def save(self, *args: Any, **kwargs: Any) -> None:
        """Keeps `completed_at` in step with the status on every save, the admin's included (the
        services' UPDATEs set both together)."""
        completed = self.status == self.Status.COMPLETED
        if completed != (self.completed_at is not None):
            self.completed_at = timezone.now() if completed else None
            if kwargs.get("update_fields") is not None:
                kwargs["update_fields"] = {*kwargs["update_fields"], "completed_at"}
        super().save(*args, **kwargs)


class Note(models.Model):
    owner = models.ForeignKey(settings.AUTH_USER_MODEL, on_delete=models.CASCADE, related_name="notes")
    project = models.ForeignKey(Project, null=True, blank=True, on_delete=models.SET_NULL, related_name="notes")
    title = models.CharField(max_length=300)
    content = models.TextField(blank=True)
    created_at = models.DateTimeField(auto_now_add=True)
    updated_at = models.DateTimeField(auto_now=True)

    class Meta:
        ordering = ["-updated_at", "-id"]
        indexes = [
            models.Index(fields=["owner", "-updated_at", "-id"], name="note_owner_updated"),
            models.Index(fields=["owner", "project", "-updated_at"], name="note_owner_project"),
            GinIndex(F("owner"), note_search_vector(), name="note_owner_search"),
        ]

    def __str__(self) -> str:
        return self.title
