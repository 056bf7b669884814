from django.apps import AppConfig


class ChatConfig(AppConfig):
    name = "chat"
    default_auto_field = "django.db.models.BigAutoField"

    def ready(self) -> None:
        # Wiring, not a dependency: deadline timers call the answer path's expiry, and the answer
        # path arms deadline timers — each module imports only downward.
        from chat import answering, deadlines

        deadlines.set_expiry_handler(answering.expire)

        # The admin edits these prompts in AIConfig; their built-in text stays with their code.
        from chat.prompts import SYSTEM_PROMPT
        from knowledge.prompts import register_built_in
        from questions.clarification import ANALYSIS_PROMPT

        register_built_in("chat_system_prompt", SYSTEM_PROMPT, placeholders=("today", "snapshot"))
        register_built_in("clarification_prompt", ANALYSIS_PROMPT, placeholders=("threshold", "context", "request"))
