from django.apps import AppConfig


class QuestionsConfig(AppConfig):
    name = "questions"
    default_auto_field = "django.db.models.BigAutoField"
