import uuid
from typing import Any, cast

from asgiref.sync import async_to_sync
from django import forms
from django.http import Http404, HttpResponse, HttpResponseBadRequest
from django.shortcuts import redirect, render
from django.template.loader import render_to_string
from django.utils.http import content_disposition_header
from django.utils.text import slugify
from django.views.decorators.http import require_GET, require_http_methods, require_POST
from django_htmx.middleware import HtmxDetails

from chat import publishing, rendering, selectors, services
from chat.models import Conversation
from llm import client_from_settings
from project.errors import ClarionError
from project.users import AuthenticatedHttpRequest
from questions.models import QuestionGroup


class HtmxHttpRequest(AuthenticatedHttpRequest):
    htmx: HtmxDetails  # set by django_htmx's middleware


# Shown on an empty conversation; each works with the offline engine on any workspace.
EXAMPLE_PROMPTS = [
    "What can you do?",
    "What's in progress?",
    "How many tasks are left to do?",
    "Find notes about the launch",
]


@require_GET
def home(request: AuthenticatedHttpRequest) -> HttpResponse:
    """Straight into a usable conversation: the user's empty one, or a new one."""
    conversation = services.open_blank_conversation(user=request.user)
    return redirect("chat:conversation", conversation_id=conversation.pk)


@require_POST
def new_conversation(request: AuthenticatedHttpRequest) -> HttpResponse:
    conversation = services.open_blank_conversation(user=request.user)
    return redirect("chat:conversation", conversation_id=conversation.pk)


def _own_conversation(request: AuthenticatedHttpRequest, conversation_id: uuid.UUID) -> Conversation:
    try:
        return selectors.conversation_for_user(user=request.user, conversation_id=conversation_id)
    except Conversation.DoesNotExist:
        raise Http404("No such conversation") from None


@require_GET
def conversation_page(request: AuthenticatedHttpRequest, conversation_id: uuid.UUID) -> HttpResponse:
    conversation = _own_conversation(request, conversation_id)
    page = selectors.thread_page(user=request.user, conversation=conversation)
    return render(
        request,
        "chat/page.html",
        {
            **_list_context(selectors.conversations_for_user(user=request.user), current=conversation),
            "conversation": conversation,
            **_thread_context(page),
            "engine": client_from_settings(),
            "example_prompts": EXAMPLE_PROMPTS,
        },
    )


@require_GET
def earlier_messages(
    request: AuthenticatedHttpRequest, conversation_id: uuid.UUID, before: int, through: int | None = None
) -> HttpResponse:
    """The page of the thread before message `before` (through message `through`, for a link to
    it), swapped in above what the reader sees when they scroll up to it."""
    conversation = _own_conversation(request, conversation_id)
    page = selectors.thread_page(user=request.user, conversation=conversation, before=before, through=through)
    return render(request, "chat/_thread_items.html", {"conversation": conversation, **_thread_context(page)})


def _thread_context(page: selectors.ThreadPage) -> dict:
    items = [
        (kind, rendering.question_card(obj, questions=page.questions.get(obj.pk, [])) if isinstance(obj, QuestionGroup) else obj)
        for kind, obj in page.items
    ]
    return {"items": items, "earlier_than": page.earlier_than}


class ListPageForm(forms.Form):
    """The conversation list's query string beside the search (`q`, read as typed): the
    conversation shown, and where the page before ended (both cursor fields, or neither)."""

    current = forms.UUIDField(required=False)
    after = forms.DateTimeField(required=False)
    after_id = forms.UUIDField(required=False)
    after_pinned = forms.DateTimeField(required=False)  # the page before ended among the pinned

    def clean(self) -> dict[str, Any]:
        # Form.clean returns cleaned_data; its stub allows None, which an override may return.
        cleaned = cast(dict[str, Any], super().clean())
        if (cleaned.get("after") is None) != (cleaned.get("after_id") is None):
            raise forms.ValidationError("A page of the list starts after a conversation: give both after and after_id.")
        return cleaned


@require_GET
def search(request: AuthenticatedHttpRequest) -> HttpResponse:
    """A page of the conversation list, filtered by title and message text (the sidebar's search
    box); the list asks for the next page when its end scrolls into view."""
    form = ListPageForm(request.GET)
    if not form.is_valid():
        # str(): an ErrorList yields its messages, though its stub types the items as the errors.
        return HttpResponseBadRequest(" ".join(str(e) for errors in form.errors.values() for e in errors))
    query, after = request.GET.get("q", ""), None
    if form.cleaned_data["after"] is not None:
        data = form.cleaned_data
        after = selectors.ListCursor(pinned_at=data["after_pinned"], updated_at=data["after"], id=data["after_id"])
    page = selectors.conversations_for_user(user=request.user, query=query, after=after)
    current_id = form.cleaned_data["current"]
    current = next((c for g in page.groups for c in g.conversations if c.pk == current_id), None)
    context = _list_context(page, current=current, current_id=current_id, query=query)
    return render(request, "chat/_conversation_list.html", {**context, "continues": after is not None})


def _list_context(
    page: selectors.ConversationPage, *, current: Conversation | None, current_id: uuid.UUID | None = None, query: str = ""
) -> dict:
    next_url = rendering.list_next_url(page, current_id=current_id or (current.pk if current else None), query=query)
    return {"groups": page.groups, "conversation": current, "query": query.strip(), "next_url": next_url}


@require_http_methods(["GET", "POST"])
def rename(request: HtmxHttpRequest, conversation_id: uuid.UUID) -> HttpResponse:
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
    if not error:
        page = selectors.conversations_for_user(user=request.user)
        async_to_sync(publishing.send_all)(publishing.conversation_changed(conversation, page))
    if not request.htmx:  # a plain form post (no page script): back to the page, saved or not
        return redirect("chat:conversation", conversation_id=conversation.pk)
    if error:
        context = {"conversation": conversation, "editing": True, "title": title, "error": error}
        return render(request, "chat/_conversation_header.html", context, status=422)
    header = render_to_string("chat/_conversation_header.html", {"conversation": conversation}, request=request)
    return HttpResponse(header + rendering.conversation_link(conversation) + rendering.delete_dialog_name(conversation))


@require_POST
def pin(request: HtmxHttpRequest, conversation_id: uuid.UUID) -> HttpResponse:
    """Pin (pinned=1) or unpin the conversation: the header with its new button, and the list."""
    try:
        conversation = services.set_pinned(user=request.user, conversation_id=conversation_id, pinned=request.POST.get("pinned") == "1")
    except Conversation.DoesNotExist:
        raise Http404("No such conversation") from None
    page = selectors.conversations_for_user(user=request.user)
    # The user's other tabs list it in its new place too, and show its new button where it is open.
    async_to_sync(publishing.send_all)(publishing.conversation_changed(conversation, page))
    if not request.htmx:
        return redirect("chat:conversation", conversation_id=conversation.pk)
    header = render_to_string("chat/_conversation_header.html", {"conversation": conversation}, request=request)
    return HttpResponse(header + rendering.conversation_nav(page, current=conversation))


@require_GET
def export(request: AuthenticatedHttpRequest, conversation_id: uuid.UUID) -> HttpResponse:
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
def delete(request: AuthenticatedHttpRequest, conversation_id: uuid.UUID) -> HttpResponse:
    try:
        services.delete_conversation(user=request.user, conversation_id=conversation_id)
    except Conversation.DoesNotExist:
        raise Http404("No such conversation") from None
    async_to_sync(publishing.send_all)(publishing.conversation_deleted(request.user, conversation_id))
    return redirect("chat:home")
