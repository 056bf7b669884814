"""Long threads and long conversation lists are sent a page at a time (keyset pagination), each
page scoped to the acting user: another user's conversation is a 404, a malformed cursor a 400."""

from __future__ import annotations

import datetime as dt
import re

import pytest
from django.db import connection
from django.test.utils import CaptureQueriesContext
from django.urls import reverse
from django.utils import timezone

from chat import selectors, services
from chat.models import Conversation, Message
from questions import services as question_services
from questions.models import QuestionGroup
from questions.schemas import AskUserArgs
from tests.conftest import moments_over_days

pytestmark = pytest.mark.django_db


def long_conversation(user, n: int) -> Conversation:
    """`n` visible messages (a user message and a reply, alternately) with a tool row between."""
    conversation = services.start_conversation(user=user)
    rows = []
    for i in range(n):
        role = Message.Role.USER if i % 2 == 0 else Message.Role.ASSISTANT
        rows.append(Message(conversation=conversation, role=role, content=f"message number {i}"))
        if i % 10 == 5:
            rows.append(Message(conversation=conversation, role=Message.Role.TOOL, content="{}", tool_call_id=f"c{i}"))
    Message.objects.bulk_create(rows)
    return conversation


def numbers(html: bytes) -> list[int]:
    """The numbers of the messages in `html`, in order (a message's text also appears in its
    Copy button's source)."""
    return list(dict.fromkeys(int(n) for n in re.findall(rb"message number (\d+)", html)))


def message_ids(html: bytes) -> list[int]:
    return [int(n) for n in re.findall(rb'id="message-(\d+)"', html)]


def earlier_url(html: bytes) -> str:
    return re.search(rb'id="thread-earlier"[^>]* hx-get="([^"]+)"', html).group(1).decode()


def test_a_long_thread_opens_on_its_newest_page_and_loads_the_rest_page_by_page(client, alice):
    conversation = long_conversation(alice, 120)
    client.force_login(alice)
    page = client.get(reverse("chat:conversation", args=[conversation.pk])).content
    assert numbers(page) == list(range(70, 120))
    seen = numbers(page)
    url = earlier_url(page)
    while url:
        response = client.get(url)
        assert response.status_code == 200
        seen = numbers(response.content) + seen
        url = earlier_url(response.content) if b'id="thread-earlier"' in response.content else ""
    assert seen == list(range(120))  # every message once, in order, no tool rows


def test_a_page_costs_the_same_number_of_queries_however_long_the_thread(client, alice):
    short, long = long_conversation(alice, 60), long_conversation(alice, 600)
    client.force_login(alice)
    counts = []
    for conversation in (short, long):
        with CaptureQueriesContext(connection) as queries:
            assert (
                client.get(reverse("chat:earlier", args=[conversation.pk, conversation.messages.order_by("-id")[5].pk])).status_code == 200
            )
        counts.append(len(queries))
    assert counts[0] == counts[1]


def test_the_opened_page_reaches_back_to_a_waiting_card(client, alice):
    conversation = long_conversation(alice, 10)
    request = services.post_user_message(user=alice, conversation_id=conversation.pk, content="which project?")
    args = AskUserArgs.model_validate({"questions": [{"question": "Which project?", "options": [{"label": "Atlas"}, {"label": "Harbor"}]}]})
    group = question_services.ask(
        user=alice, conversation_id=conversation.pk, kind=QuestionGroup.Kind.ASK, specs=args.questions, tool_call_id="call_1",
        tool_name="ask_user", payload={"in_reply_to_id": request.pk}, default_indexes=[[0]],
    )  # fmt: skip
    # Replies the assistant wrote after asking (e.g. several tabs' activity) push the card back.
    Message.objects.bulk_create(
        [Message(conversation=conversation, role=Message.Role.ASSISTANT, content=f"later {i}") for i in range(selectors.THREAD_PAGE + 5)]
    )
    client.force_login(alice)
    page = client.get(reverse("chat:conversation", args=[conversation.pk])).content
    assert f'id="qgroup-{group.pk}"'.encode() in page
    assert page.count(f'id="qgroup-{group.pk}"'.encode()) == 1
    assert message_ids(page)[0] == request.pk  # the request the card asks about, and no further
    older = client.get(earlier_url(page)).content
    assert f'id="qgroup-{group.pk}"'.encode() not in older  # each card on one page only
    assert numbers(older)[-1] == 9


def test_a_link_to_an_old_message_loads_the_thread_back_to_it(client, alice):
    conversation = long_conversation(alice, 300)
    target = conversation.messages.get(content="message number 3")
    client.force_login(alice)
    page = client.get(reverse("chat:conversation", args=[conversation.pk])).content
    before = int(earlier_url(page).rstrip("/").rsplit("/", 1)[1])
    response = client.get(reverse("chat:earlier_through", args=[conversation.pk, before, target.pk]))
    assert numbers(response.content) == list(range(3, 250))
    assert b'id="thread-earlier"' in response.content  # messages 0-2 are still to come


def test_another_users_thread_pages_are_404(client, alice, bob):
    conversation = long_conversation(alice, 60)
    oldest = conversation.messages.order_by("-id")[10].pk
    client.force_login(bob)
    assert client.get(reverse("chat:earlier", args=[conversation.pk, oldest])).status_code == 404
    assert client.get(reverse("chat:earlier_through", args=[conversation.pk, oldest, 1])).status_code == 404
    with pytest.raises(Conversation.DoesNotExist):
        selectors.thread_page(user=bob, conversation=conversation)
    assert client.get(f"/chat/{conversation.pk}/earlier/abc/").status_code == 404


def conversations(user, n: int, *, days: int = 0) -> list[Conversation]:
    """`n` conversations, newest first, their last activity spread from now back into the local day `days` days ago."""
    made = [Conversation.objects.create(owner=user, title=f"Conversation {i:04d}") for i in range(n)]
    for conversation, moment in zip(made, moments_over_days(n, days=days), strict=True):
        Conversation.objects.filter(pk=conversation.pk).update(updated_at=moment)
    return made


def list_titles(html: bytes) -> list[str]:
    return [t.decode() for t in re.findall(rb'class="conversation-link[^"]*"[^>]*>([^<]+)<', html)]


def next_list_url(html: bytes) -> str:
    found = re.search(rb'class="list-more[^"]*" hx-get="([^"]+)"', html)
    return found.group(1).decode().replace("&amp;", "&") if found else ""


def test_the_list_reaches_every_conversation_page_by_page_with_each_day_heading_once(client, alice, bob):
    made = conversations(alice, 180, days=3)
    conversations(bob, 5)
    client.force_login(alice)
    page = client.get(reverse("chat:conversation", args=[made[0].pk])).content
    titles, headings = list_titles(page), re.findall(rb'class="conversation-day">([^<]+)<', page)
    assert len(titles) == selectors.CONVERSATIONS_PAGE
    url = next_list_url(page)
    while url:
        response = client.get(url)
        assert response.status_code == 200
        titles += list_titles(response.content)
        headings += re.findall(rb'class="conversation-day">([^<]+)<', response.content)
        url = next_list_url(response.content)
    assert titles == [c.title for c in made]  # every one, once, newest first
    assert len(headings) == len(set(headings)) == 4  # today, yesterday and two dates, each once


def test_search_results_page_too(client, alice):
    made = conversations(alice, 70)
    for conversation in made:
        services.post_user_message(user=alice, conversation_id=conversation.pk, content="the budget again")
    client.force_login(alice)
    first = client.get(reverse("chat:search"), {"q": "budget", "current": str(made[0].pk)}).content
    second = client.get(next_list_url(first)).content
    assert len(list_titles(first)) + len(list_titles(second)) == 70
    assert b"No conversations" not in second and not next_list_url(second)


@pytest.mark.parametrize(
    "params",
    [{"after": "yesterday", "after_id": "6d7a1a7e-0c39-4a55-9f4a-0bd0c0e2a4d1"}, {"after": "2026-01-01T00:00:00+00:00"}, {"current": "7"}],
)
def test_a_malformed_list_cursor_is_a_clear_400(client, alice, params):
    conversations(alice, 3)
    client.force_login(alice)
    before = Conversation.objects.count()
    response = client.get(reverse("chat:search"), params)
    assert response.status_code == 400
    assert response.content.decode().strip()  # says what is wrong
    assert Conversation.objects.count() == before


def test_the_list_pages_through_pinned_conversations_then_the_rest(client, alice):
    made = conversations(alice, 80, days=2)
    for i, conversation in enumerate(made[:60]):
        Conversation.objects.filter(pk=conversation.pk).update(pinned_at=timezone.now() - dt.timedelta(minutes=i))
    client.force_login(alice)
    page = client.get(reverse("chat:conversation", args=[made[0].pk])).content
    titles, headings = list_titles(page), re.findall(rb'class="conversation-day">([^<]+)<', page)
    url = next_list_url(page)
    while url:
        response = client.get(url)
        titles += list_titles(response.content)
        headings += re.findall(rb'class="conversation-day">([^<]+)<', response.content)
        url = next_list_url(response.content)
    assert titles == [c.title for c in made]  # pinned (most recently pinned first), then by activity
    assert headings[0] == b"Pinned" and len(headings) == len(set(headings))
