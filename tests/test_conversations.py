"""Conversation list management: titles, reuse of the empty conversation, rename, delete, search,
stop and regenerate requests — each scoped to the acting user (another user's id is a 404)."""

import datetime as dt
import uuid

import pytest
from django.urls import reverse
from django.utils import timezone

from chat import selectors, services, stopping
from chat.models import Conversation, Message
from questions.models import QuestionGroup

pytestmark = pytest.mark.django_db


def with_message(user, text="hello", title=None):
    conversation = services.start_conversation(user=user)
    services.post_user_message(user=user, conversation_id=conversation.pk, content=text)
    if title:
        Conversation.objects.filter(pk=conversation.pk).update(title=title)
    return conversation


@pytest.mark.parametrize(
    "text, title",
    [
        ("Plan the launch", "Plan the launch"),
        ("what's in progress?", "what's in progress"),
        ("please list every single task that is still open in Atlas", "please list every single task that…"),
        ("  many   spaces\nand lines  ", "many spaces and lines"),
        ("x" * 300, "x" * 59 + "…"),
    ],
)
def test_title_is_the_first_words_of_the_first_message(alice, text, title):
    conversation = with_message(alice, text)
    conversation.refresh_from_db()
    assert conversation.title == title


def test_empty_conversation_is_reused_not_piled_up(alice, bob):
    first = services.open_blank_conversation(user=alice)
    assert services.open_blank_conversation(user=alice).pk == first.pk
    assert services.open_blank_conversation(user=bob).pk != first.pk  # never another user's
    services.post_user_message(user=alice, conversation_id=first.pk, content="hi")
    second = services.open_blank_conversation(user=alice)
    assert second.pk != first.pk
    assert Conversation.objects.filter(owner=alice).count() == 2


def test_rename_validates_and_is_scoped(client, alice, bob):
    conversation = with_message(alice, title="Old")
    client.force_login(alice)
    url = reverse("chat:rename", args=[conversation.pk])
    for bad, error in [("   ", "A title cannot be empty."), ("y" * 121, "the limit is 120")]:
        response = client.post(url, {"title": bad}, HTTP_HX_REQUEST="true")
        assert response.status_code == 422 and error.encode() in response.content
    conversation.refresh_from_db()
    assert conversation.title == "Old"
    response = client.post(url, {"title": "  New   name "}, HTTP_HX_REQUEST="true")
    assert response.status_code == 200 and b"New name" in response.content
    conversation.refresh_from_db()
    assert conversation.title == "New name"
    # Submitted before the page script bound the form: a plain POST saves and returns to the page.
    page = reverse("chat:conversation", args=[conversation.pk])
    for title, saved in [("   ", "New name"), ("Plain post", "Plain post")]:
        response = client.post(url, {"title": title})
        assert response.status_code == 302 and response["Location"] == page
        conversation.refresh_from_db()
        assert conversation.title == saved

    client.force_login(bob)
    assert client.post(url, {"title": "Hijacked"}).status_code == 404
    assert client.get(url).status_code == 404
    conversation.refresh_from_db()
    assert conversation.title == "Plain post"


def test_delete_is_post_only_and_scoped(client, alice, bob):
    conversation = with_message(alice)
    url = reverse("chat:delete", args=[conversation.pk])
    client.force_login(bob)
    assert client.post(url).status_code == 404
    client.force_login(alice)
    assert client.get(url).status_code == 405
    assert Conversation.objects.filter(pk=conversation.pk).exists()
    response = client.post(url)
    assert response.status_code == 302 and response["Location"] == reverse("chat:home")
    assert not Conversation.objects.filter(pk=conversation.pk).exists()
    assert not Message.objects.filter(conversation_id=conversation.pk).exists()


def test_search_matches_title_and_messages_of_the_user_only(client, alice, bob):
    mine = with_message(alice, "the budget spreadsheet", title="Misc")
    titled = with_message(alice, "nothing", title="Budget")
    with_message(alice, "beach")
    with_message(bob, "budget", title="Budget")
    found = selectors.conversations_for_user(user=alice, query="BUDGET")
    assert {c.pk for g in found.groups for c in g.conversations} == {mine.pk, titled.pk}
    client.force_login(alice)
    response = client.get(reverse("chat:search"), {"q": "budget"})
    assert response.status_code == 200 and response.content.count(b"conversation-link") == 2
    assert b"No conversations match" in client.get(reverse("chat:search"), {"q": "zebra"}).content


def test_stop_request_is_scoped(alice, bob):
    conversation = with_message(alice)
    with pytest.raises(Conversation.DoesNotExist):
        services.request_stop(user=bob, conversation_id=conversation.pk)
    conversation.refresh_from_db()
    assert conversation.stop_requested_at is None
    services.request_stop(user=alice, conversation_id=conversation.pk)
    conversation.refresh_from_db()
    assert conversation.stop_requested_at is not None


def test_a_streaming_reply_sees_only_a_stop_requested_after_it_started(alice, bob):
    conversation = with_message(alice)
    stream = stopping.StopWatch(conversation.pk)
    assert not stopping._requested_since(conversation.pk, stream.since)
    services.request_stop(user=alice, conversation_id=conversation.pk)
    assert stopping._requested_since(conversation.pk, stream.since)
    later = stopping.StopWatch(conversation.pk)  # the next reply: the earlier press is not for it
    assert not stopping._requested_since(conversation.pk, later.since)
    other = with_message(bob)
    assert not stopping._requested_since(other.pk, stream.since)


def test_regenerate_removes_only_a_finished_plain_last_reply(alice, bob):
    conversation = with_message(alice, "what's in progress?")
    request = conversation.messages.get()
    with pytest.raises(services.NothingToRegenerate, match="Wait for the reply"):
        services.prepare_regenerate(user=alice, conversation_id=conversation.pk)
    reply = services.save_assistant_message(
        conversation_id=conversation.pk, in_reply_to_id=request.pk, content="Nothing.", tool_calls=[], metadata={}
    )
    with pytest.raises(Conversation.DoesNotExist):
        services.prepare_regenerate(user=bob, conversation_id=conversation.pk)
    assert services.prepare_regenerate(user=alice, conversation_id=conversation.pk) == [reply.pk]
    assert services.needs_reply(conversation_id=conversation.pk)

    asking = services.save_assistant_message(
        conversation_id=conversation.pk, in_reply_to_id=request.pk, content="", metadata={},
        tool_calls=[{"id": "c1", "name": "propose_operations", "arguments": "{}"}],
    )  # fmt: skip
    services.save_tool_result(
        conversation_id=conversation.pk,
        in_reply_to_id=request.pk,
        tool_call_id="c1",
        tool_name="propose_operations",
        content="{}",
        is_error=False,
    )
    services.save_assistant_message(conversation_id=conversation.pk, in_reply_to_id=request.pk, content="Done.", tool_calls=[], metadata={})
    with pytest.raises(services.NothingToRegenerate, match="asked you something"):
        services.prepare_regenerate(user=alice, conversation_id=conversation.pk)
    assert Message.objects.filter(pk=asking.pk).exists()


def test_needs_reply_follows_the_turn_in_at_most_two_statements(alice, django_assert_max_num_queries):
    conversation = services.start_conversation(user=alice)

    def due() -> bool:
        with django_assert_max_num_queries(2):  # it runs before and after every turn
            return services.needs_reply(conversation_id=conversation.pk)

    assert not due()  # nothing asked yet
    request = services.post_user_message(user=alice, conversation_id=conversation.pk, content="hi")
    assert due()
    services.save_assistant_message(
        conversation_id=conversation.pk, in_reply_to_id=request.pk, content="", metadata={},
        tool_calls=[{"id": "c1", "name": "query_tasks", "arguments": "{}"}],
    )  # fmt: skip
    assert due()  # a turn that stopped after its tool call is picked up again
    services.save_assistant_message(conversation_id=conversation.pk, in_reply_to_id=request.pk, content="Done.", tool_calls=[], metadata={})
    assert not due()
    services.post_user_message(user=alice, conversation_id=conversation.pk, content="and now?")
    assert due()
    QuestionGroup.objects.create(conversation=conversation, user=alice, kind=QuestionGroup.Kind.ASK)
    assert not due()  # a question waits for the person: their answer starts the next turn
    assert not services.needs_reply(conversation_id=uuid.uuid4())  # no such conversation


def test_pinned_conversations_head_the_list_under_their_own_heading(alice):
    old = with_message(alice, title="Old")
    Conversation.objects.filter(pk=old.pk).update(updated_at=timezone.now() - dt.timedelta(days=3))
    recent = with_message(alice, title="Recent")
    assert [c.pk for g in selectors.conversations_for_user(user=alice).groups for c in g.conversations] == [recent.pk, old.pk]
    services.set_pinned(user=alice, conversation_id=old.pk, pinned=True)
    listed = selectors.conversations_for_user(user=alice)
    assert [(g.label, [c.pk for c in g.conversations]) for g in listed.groups] == [
        ("Pinned", [old.pk]),
        ("Today", [recent.pk]),
    ]
    old.refresh_from_db()
    assert old.updated_at < timezone.now() - dt.timedelta(days=2)  # pinning is not activity


def test_pin_and_unpin_over_htmx_and_scoped(client, alice, bob):
    conversation = with_message(alice, title="Launch")
    url = reverse("chat:pin", args=[conversation.pk])
    client.force_login(bob)
    assert client.post(url, {"pinned": "1"}, HTTP_HX_REQUEST="true").status_code == 404
    conversation.refresh_from_db()
    assert conversation.pinned_at is None
    client.force_login(alice)
    assert client.get(url).status_code == 405
    response = client.post(url, {"pinned": "1"}, HTTP_HX_REQUEST="true")
    html = response.content.decode()
    assert response.status_code == 200 and 'id="conversation-header"' in html and ">Unpin</button>" in html
    assert 'id="conversation-list"' in html and 'hx-swap-oob="true"' in html and ">Pinned</h2>" in html
    conversation.refresh_from_db()
    pinned_at = conversation.pinned_at
    assert pinned_at is not None
    client.post(url, {"pinned": "1"}, HTTP_HX_REQUEST="true")  # pinning again keeps its place
    conversation.refresh_from_db()
    assert conversation.pinned_at == pinned_at
    response = client.post(url, {"pinned": "0"})  # a plain form post: back to the page
    assert response.status_code == 302 and response["Location"] == reverse("chat:conversation", args=[conversation.pk])
    conversation.refresh_from_db()
    assert conversation.pinned_at is None


def test_rename_also_renames_the_delete_dialog(client, alice):
    conversation = with_message(alice, title="Old")
    client.force_login(alice)
    response = client.post(reverse("chat:rename", args=[conversation.pk]), {"title": "Launch plan"}, HTTP_HX_REQUEST="true")
    assert '<span id="delete-dialog-name" hx-swap-oob="true">Launch plan</span>' in response.content.decode()


def test_export_is_the_thread_as_markdown_for_its_owner_only(client, alice, bob):
    conversation = with_message(alice, "What does *Clarion* do?", title="Clarion / overview")
    request = conversation.messages.get()
    services.save_assistant_message(
        conversation_id=conversation.pk, in_reply_to_id=request.pk, content="It answers **from the guide** [1].", tool_calls=[],
        metadata={"citations": [{"n": 1, "title": "Getting started", "url": "/kb/sources/getting-started/#install"}]},
    )  # fmt: skip
    group = QuestionGroup.objects.create(conversation=conversation, user=alice, kind=QuestionGroup.Kind.ASK)
    group.questions.create(
        conversation=conversation, user=alice, question="Which project?", options=[{"label": "Atlas"}, {"label": "Harbor"}],
        status="answered", answer="Harbor",
    )  # fmt: skip
    url = reverse("chat:export", args=[conversation.pk])
    client.force_login(bob)
    assert client.get(url).status_code == 404
    client.force_login(alice)
    response = client.get(url)
    assert response.status_code == 200
    assert response["Content-Type"] == "text/markdown; charset=utf-8"
    assert response["Content-Disposition"] == 'attachment; filename="clarion-overview.md"'
    text = response.content.decode()
    assert text.startswith("# Clarion / overview\n")
    assert "**You** · " in text and "\nWhat does *Clarion* do?\n" in text  # as written, not escaped
    assert "**Assistant** · " in text and "\nIt answers **from the guide** [1].\n" in text
    assert "1. [Getting started](http://testserver/kb/sources/getting-started/#install)" in text
    assert "**Question** · " in text and "Which project?\n\n- Atlas\n- Harbor\n\nAnswer: **Harbor**" in text
    assert text.index("What does") < text.index("It answers") < text.index("Which project?")
