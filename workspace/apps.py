from django.apps import AppConfig


class WorkspaceConfig(AppConfig):
    name = "workspace"
    default_auto_field = "django.db.models.BigAutoField"
