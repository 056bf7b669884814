from asgiref.sync import async_to_sync
from django.http import Http404, HttpRequest, HttpResponse
from django.shortcuts import redirect, render
from django.template.loader import render_to_string
from django.utils.http import content_disposition_header
from django.utils.text import slugify
from django.views.decorators.http import require_GET, require_http_methods, require_POST
from django_htmx.middleware import HtmxDetails

from chat import publishing, rendering, selectors, services
from chat.models import Conversation, user_group_name
from llm import client_from_settings
from project.errors import ClarionError


class HtmxHttpRequest(HttpRequest):
    htmx: HtmxDetails  # set by django_htmx's middleware


# Shown on an empty conversation; each works with the offline engine on any workspace.
EXAMPLE_PROMPTS = [
    "What can you do?",
    "What's in progress?",
    "How many tasks are left to do?",
    "Find notes about the launch",
]


@require_GET
def home(request: HttpRequest) -> HttpResponse:
    """Straight into a usable conversation: the user's empty one, or a new one."""
    conversation = services.open_blank_conversation(user=request.user)
    return redirect("chat:conversation", conversation_id=conversation.pk)


@require_POST
def new_conversation(request: HttpRequest) -> HttpResponse:
    conversation = services.open_blank_conversation(user=request.user)
    return redirect("chat:conversation", conversation_id=conversation.pk)


def _own_conversation(request: HttpRequest, conversation_id) -> Conversation:
    try:
        return selectors.conversation_for_user(user=request.user, conversation_id=conversation_id)
    except Conversation.DoesNotExist:
        raise Http404("No such conversation") from None


@require_GET
def conversation_page(request: HttpRequest, conversation_id) -> HttpResponse:
    conversation = _own_conversation(request, conversation_id)
    conversations = selectors.conversations_for_user(user=request.user)
    return render(
        request,
        "chat/page.html",
        {
            "groups": selectors.grouped_by_day(conversations),
            "conversation": conversation,
            "items": [
                (kind, rendering.question_card(obj) if kind == "questions" else obj)
                for kind, obj in selectors.thread_items(conversation=conversation)
            ],
            "engine": client_from_settings(),
            "example_prompts": EXAMPLE_PROMPTS,
        },
    )


@require_GET
def search(request: HttpRequest) -> HttpResponse:
    """The conversation list, filtered by title and message text (the sidebar's search box)."""
    query = request.GET.get("q", "")
    conversations = selectors.conversations_for_user(user=request.user, query=query)
    current = None
    if current_id := request.GET.get("current"):
        current = next((c for c in conversations if str(c.pk) == current_id), None)
    return render(
        request,
        "chat/_conversation_list.html",
        {"groups": selectors.grouped_by_day(conversations), "conversation": current, "query": query.strip()},
    )


@require_http_methods(["GET", "POST"])
def rename(request: HtmxHttpRequest, conversation_id) -> HttpResponse:
    """GET: the title as an editable field (or back to the title with ?cancel=1). POST: save it."""
    conversation = _own_conversation(request, conversation_id)
    if request.method == "GET":
        editing = not request.GET.get("cancel")
        return render(
            request, "chat/_conversation_header.html", {"conversation": conversation, "editing": editing, "title": conversation.title}
        )
    title, error = request.POST.get("title", ""), ""
    try:
        conversation = services.rename_conversation(user=request.user, conversation_id=conversation.pk, title=title)
    except ClarionError as exc:  # too long, empty, a NUL character
        error = exc.message
    if not request.htmx:  # a plain form post (no page script): back to the page, saved or not
        return redirect("chat:conversation", conversation_id=conversation.pk)
    if error:
        context = {"conversation": conversation, "editing": True, "title": title, "error": error}
        return render(request, "chat/_conversation_header.html", context, status=422)
    header = render_to_string("chat/_conversation_header.html", {"conversation": conversation}, request=request)
    return HttpResponse(header + rendering.conversation_link(conversation) + rendering.delete_dialog_name(conversation))


@require_POST
def pin(request: HtmxHttpRequest, conversation_id) -> HttpResponse:
    """Pin (pinned=1) or unpin the conversation: the header with its new button, and the list."""
    try:
        conversation = services.set_pinned(user=request.user, conversation_id=conversation_id, pinned=request.POST.get("pinned") == "1")
    except Conversation.DoesNotExist:
        raise Http404("No such conversation") from None
    groups = selectors.grouped_by_day(selectors.conversations_for_user(user=request.user))
    # The user's other tabs list it in its new place too.
    async_to_sync(publishing.send)(user_group_name(request.user.pk), rendering.conversation_nav(groups))
    if not request.htmx:
        return redirect("chat:conversation", conversation_id=conversation.pk)
    header = render_to_string("chat/_conversation_header.html", {"conversation": conversation}, request=request)
    return HttpResponse(header + rendering.conversation_nav(groups, current=conversation))


@require_GET
def export(request: HttpRequest, conversation_id) -> HttpResponse:
    """The conversation as a Markdown file to download."""
    try:
        export = selectors.conversation_export(user=request.user, conversation_id=conversation_id, base_url=request.build_absolute_uri("/"))
    except Conversation.DoesNotExist:
        raise Http404("No such conversation") from None
    response = HttpResponse(render_to_string("chat/export.md", {"export": export}), content_type="text/markdown; charset=utf-8")
    filename = f"{slugify(export.conversation.title) or 'conversation'}.md"
    response["Content-Disposition"] = content_disposition_header(as_attachment=True, filename=filename)
    return response


@require_POST
def delete(request: HttpRequest, conversation_id) -> HttpResponse:
    try:
        services.delete_conversation(user=request.user, conversation_id=conversation_id)
    except Conversation.DoesNotExist:
        raise Http404("No such conversation") from None
    return redirect("chat:home")
