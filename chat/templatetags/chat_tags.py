from django import template
from django.utils.safestring import SafeString

from chat import rendering
from chat.models import Message
from knowledge.rendering import render_markdown
from project.text import visible_bidi_controls

register = template.Library()
register.filter("markdown", render_markdown)
register.filter("visible_controls", visible_bidi_controls)


@register.filter
def reply_markdown(message: Message) -> SafeString:
    """An assistant reply as Markdown, its `[n]` markers linked to the sources its chips open."""
    citations = {
        int(c["n"]): (c["url"], c.get("title") or c.get("source_id") or "")
        for c in (message.metadata or {}).get("citations") or []
        if c.get("url") and str(c.get("n", "")).isdigit()
    }
    return render_markdown(message.content, citations=citations)


@register.filter
def tool_activity(message: Message) -> list[rendering.ToolActivity]:
    return rendering.tool_activity(message)
