from django.http import Http404, HttpRequest, HttpResponse
from django.shortcuts import redirect, render
from django.views.decorators.http import require_GET, require_POST

from chat import rendering, selectors, services
from chat.models import Conversation
from llm import client_from_settings


@require_GET
def home(request: HttpRequest) -> HttpResponse:
    conversations = selectors.conversations_for_user(user=request.user)
    if conversations:
        return redirect("chat:conversation", conversation_id=conversations[0].pk)
    return render(
        request, "chat/page.html", {"conversations": [], "conversation": None, "items": [], "engine": client_from_settings()}
    )


@require_POST
def new_conversation(request: HttpRequest) -> HttpResponse:
    conversation = services.start_conversation(user=request.user)
    return redirect("chat:conversation", conversation_id=conversation.pk)


@require_GET
def conversation_page(request: HttpRequest, conversation_id) -> HttpResponse:
    try:
        conversation = selectors.conversation_for_user(user=request.user, conversation_id=conversation_id)
    except Conversation.DoesNotExist:
        raise Http404("No such conversation") from None
    return render(
        request,
        "chat/page.html",
        {
            "conversations": selectors.conversations_for_user(user=request.user),
            "conversation": conversation,
            "items": [(kind, rendering.question_card(obj) if kind == "questions" else obj) for kind, obj in selectors.thread_items(conversation=conversation)],
            "engine": client_from_settings(),
        },
    )
