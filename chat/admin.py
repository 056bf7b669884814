from django.contrib import admin

from chat.models import Conversation, Message


class MessageInline(admin.TabularInline):
    model = Message
    extra = 0
    fields = ["role", "content", "tool_name", "tool_calls", "created_at"]
    readonly_fields = fields
    can_delete = False


@admin.register(Conversation)
class ConversationAdmin(admin.ModelAdmin):
    list_display = ["title", "owner", "created_at", "updated_at"]
    search_fields = ["title", "owner__username"]
    list_select_related = ["owner"]
    raw_id_fields = ["owner"]
    inlines = [MessageInline]


@admin.register(Message)
class MessageAdmin(admin.ModelAdmin):
    list_display = ["conversation", "role", "short_content", "created_at"]
    list_filter = ["role"]
    list_select_related = ["conversation"]
    raw_id_fields = ["conversation"]

    @admin.display(description="content")
    def short_content(self, obj: Message) -> str:
        return obj.content[:80]
