"""The agent loop against a fake OpenAI-compatible server, over real HTTP through the real SDK."""

import asyncio
import json
import uuid

import pytest
from channels.db import database_sync_to_async

from chat import agent, selectors, services
from chat.models import Conversation, Message
from knowledge.models import KnowledgeSource
from knowledge.selectors import get_ai_config
from tests.conftest import build_workspace
from tests.fake_openai import Reply
from tests.knowledge.conftest import answer_reply, build_kb, gate_reply, select_reply
from tests.websocket import form_frame, frames_of_turn, open_socket, receive_until

pytestmark = pytest.mark.django_db(transaction=True)


@pytest.fixture
def workspace(alice, bob):
    return {"alice": build_workspace(alice, tag="alice"), "bob": build_workspace(bob, tag="bob")}


@database_sync_to_async
def ask(user, text):
    conversation = services.start_conversation(user=user)
    services.post_user_message(user=user, conversation_id=conversation.pk, content=text)
    return conversation


@database_sync_to_async
def thread(conversation):
    return list(conversation.messages.order_by("created_at", "id").values("role", "content", "tool_name", "tool_calls", "metadata"))


def tool_results(rows):
    return [json.loads(r["content"]) for r in rows if r["role"] == "tool"]


async def test_query_tool_round_trip_is_scoped_to_the_acting_user(model_endpoint, workspace, alice):
    model_endpoint.script(Reply.tool_call("query_tasks", {"status": "all"}), Reply.text("You have four tasks."))
    conversation = await ask(alice, "show all my tasks")

    await agent.run_pending_turns(conversation.pk)

    rows = await thread(conversation)
    assert [r["role"] for r in rows] == ["user", "assistant", "tool", "assistant"]
    (result,) = tool_results(rows)
    assert result["total"] == 4 and all("alice" in t["title"] for t in result["tasks"])
    assert rows[-1]["content"] == "You have four tasks."
    # The second model call saw the tool result, and the system prompt carried the snapshot.
    second = model_endpoint.requests[1]["messages"]
    assert second[0]["role"] == "system" and "design homepage alice" in second[0]["content"]
    assert "bob" not in second[0]["content"]
    assert second[-1]["role"] == "tool" and json.loads(second[-1]["content"])["total"] == 4
    assert {t["function"]["name"] for t in model_endpoint.requests[0]["tools"]} == {
        "query_tasks",
        "query_notes",
        "query_projects",
        "search_knowledge_base",
        "ask_user",
        "propose_operations",
    }
    assert rows[-1]["metadata"]["usage"]["total_tokens"] > 0


async def test_another_users_project_id_is_reported_as_not_found(model_endpoint, workspace, alice):
    bobs_project = workspace["bob"]["projects"][0]
    model_endpoint.script(Reply.tool_call("query_tasks", {"project_id": bobs_project.pk}), Reply.text("Not found."))
    conversation = await ask(alice, "tasks in that other project")
    await agent.run_pending_turns(conversation.pk)
    rows = await thread(conversation)
    (result,) = tool_results(rows)
    assert result == {"error": f"Project {bobs_project.pk} was not found. Call query_projects to see the valid ids."}
    assert "bob" not in json.dumps(model_endpoint.requests[1]["messages"][1:])


@pytest.mark.parametrize(
    "call, expected",
    [
        (
            Reply.tool_call("drop_database", {}),
            "Unknown tool 'drop_database'. Available tools: query_tasks, query_notes, query_projects, search_knowledge_base, ask_user, propose_operations.",
        ),
        (Reply.tool_call("query_tasks", "{status: todo"), "The arguments for query_tasks are not valid JSON"),
        (Reply.tool_call("query_tasks", {"status": "someday"}), "Invalid arguments for query_tasks: status: Input should be"),
        (Reply.tool_call("query_tasks", {"limit": 5000}), "limit: Input should be less than or equal to 500"),
        (Reply.tool_call("query_tasks", {"priority_at_least": "critical"}), "priority_at_least: Input should be"),
        (Reply.tool_call("query_notes", {"owner_id": 2}), "owner_id: Extra inputs are not permitted"),
        (Reply.tool_call("query_tasks", "[1, 2]"), "must be a JSON object"),
        (Reply.tool_call("query_tasks", "[" * 20_000 + "]" * 20_000), "The arguments for query_tasks are nested too deeply"),
        (Reply.tool_call("query_tasks", {"search": "de\u0000sign"}), "contain a NUL character"),
    ],
)
async def test_bad_tool_calls_become_correctable_tool_errors(model_endpoint, workspace, alice, call, expected):
    model_endpoint.script(call, Reply.tool_call("query_tasks", {"status": "todo"}), Reply.text("Fixed it."))
    conversation = await ask(alice, "what do I have to do?")
    await agent.run_pending_turns(conversation.pk)
    rows = await thread(conversation)
    error, corrected = tool_results(rows)
    assert expected in error["error"]
    assert corrected["total"] == 2  # the model corrected itself and the turn finished
    assert rows[-1]["content"] == "Fixed it."


async def test_endpoint_down_ends_the_turn_with_a_retryable_error_and_keeps_the_message(settings, alice):
    settings.LLM_BASE_URL = "http://127.0.0.1:9/v1"  # nothing listens on the discard port
    settings.LLM_API_KEY = "sk-test"
    settings.LLM_MAX_RETRIES = 0
    conversation = await ask(alice, "hello?")
    await agent.run_pending_turns(conversation.pk)
    rows = await thread(conversation)
    assert [r["role"] for r in rows] == ["user", "error"]
    assert rows[0]["content"] == "hello?"
    assert "could not be reached" in rows[1]["content"] and rows[1]["metadata"]["kind"] == "connection"


async def test_timeout_ends_the_turn_and_retry_works(model_endpoint, alice):
    model_endpoint.script(Reply.text("too slow", delay=3), Reply.text("too slow", delay=3), Reply.text("Here now."))
    conversation = await ask(alice, "are you there?")
    started = asyncio.get_running_loop().time()
    await agent.run_pending_turns(conversation.pk)
    assert asyncio.get_running_loop().time() - started < 4  # 2 attempts × 1 s timeout + backoff
    rows = await thread(conversation)
    assert rows[-1]["role"] == "error" and rows[-1]["metadata"] == {"kind": "timeout", "status": None, "attempts": 2}
    assert "did not answer within" in rows[-1]["content"]

    # Retry: through the websocket, as the Retry button does.
    socket = await open_socket(f"/ws/conversations/{conversation.pk}/", user=alice)
    await socket.connect()
    await socket.send_to(text_data=form_frame(action="retry"))
    frames = await frames_of_turn(socket)
    assert 'hx-swap-oob="delete"' in frames and "Here now." in frames
    assert [r["role"] for r in await thread(conversation)] == ["user", "assistant"]
    await socket.disconnect()


async def test_retry_with_nothing_failed_says_so(alice):
    conversation = await ask(alice, "hi")
    await agent.run_pending_turns(conversation.pk)
    socket = await open_socket(f"/ws/conversations/{conversation.pk}/", user=alice)
    await socket.connect()
    await socket.send_to(text_data=form_frame(action="retry"))
    assert "nothing to retry" in await receive_until(socket, "nothing to retry")
    await socket.disconnect()


@pytest.mark.parametrize(
    "reply, kind, requests",
    [
        (Reply.garbage(), "invalid_response", 2),
        (Reply.error(400, "context length exceeded"), "bad_request", 1),
        (Reply.error(500, "upstream exploded"), "server", 2),
    ],
)
async def test_model_failures_end_the_turn_visibly(model_endpoint, alice, reply, kind, requests):
    model_endpoint.script(reply, reply)
    conversation = await ask(alice, "hello")
    await agent.run_pending_turns(conversation.pk)
    rows = await thread(conversation)
    assert [r["role"] for r in rows] == ["user", "error"] and rows[1]["metadata"]["kind"] == kind
    assert len(model_endpoint.requests) == requests


async def test_stream_cut_halfway_restarts_and_completes(model_endpoint, alice):
    model_endpoint.script(Reply.text("one two three four five six", cut_after=2), Reply.text("Complete answer here."))
    conversation = await ask(alice, "tell me")
    socket = await open_socket(f"/ws/conversations/{conversation.pk}/", user=alice)
    await socket.connect()
    frames = await frames_of_turn(socket)  # connecting resumed the unanswered message
    assert "retrying" in frames and "Complete answer here." in frames
    rows = await thread(conversation)
    assert rows[-1]["content"] == "Complete answer here." and rows[-1]["metadata"]["attempts"] == 2
    await socket.disconnect()


async def test_turn_stops_at_the_llm_call_cap(model_endpoint, settings, alice):
    settings.AGENT_MAX_LLM_CALLS = 3
    model_endpoint.script(*[Reply.tool_call("query_projects", {})] * 3)
    conversation = await ask(alice, "loop forever")
    await agent.run_pending_turns(conversation.pk)
    rows = await thread(conversation)
    assert len(model_endpoint.requests) == 3
    assert rows[-1]["role"] == "error" and "stopped after 3 model calls" in rows[-1]["content"]


async def test_model_markdown_is_sanitized(model_endpoint, alice):
    model_endpoint.script(Reply.text("**Bold** <script>alert(1)</script> [x](javascript:alert(1)) <img src=x onerror=alert(1)>"))
    conversation = await ask(alice, "format something")
    socket = await open_socket(f"/ws/conversations/{conversation.pk}/", user=alice)
    await socket.connect()
    final = (await frames_of_turn(socket)).split('class="message message-assistant"')[-1]
    # The Copy button carries the source as written, escaped into an inert data attribute.
    source = 'data-copy-text="**Bold** &lt;script&gt;alert(1)&lt;/script&gt; [x](javascript:alert(1)) &lt;img src=x onerror=alert(1)&gt;"'
    assert source in final
    final = final.replace(source, "")
    assert "<strong>Bold</strong>" in final
    assert "<script" not in final and "<img" not in final and "javascript:" not in final
    assert "&lt;img src=x onerror=alert(1)&gt;" in final  # a model's raw HTML is shown as text, never run
    await socket.disconnect()


async def test_streaming_reaches_two_tabs(model_endpoint, alice):
    model_endpoint.script(Reply.text("alpha beta gamma delta epsilon", chunk_delay=0.06))
    conversation = await database_sync_to_async(services.start_conversation)(user=alice)
    tabs = [await open_socket(f"/ws/conversations/{conversation.pk}/", user=alice) for _ in range(2)]
    for tab in tabs:
        await tab.connect()
    await tabs[0].send_to(text_data=form_frame(action="send_message", message="greek letters please"))
    for tab in tabs:
        frames = await frames_of_turn(tab)
        assert frames.count('-body" hx-swap-oob="innerHTML"') >= 2  # several renders, not one blob
        assert "alpha beta gamma delta epsilon" in frames
        await tab.disconnect()


async def test_the_first_text_shows_at_once_and_the_saved_reply_replaces_the_rest(model_endpoint, alice, monkeypatch):
    # Flushes far apart: whatever shows before the saved reply went out because it was the first text.
    monkeypatch.setattr(agent, "STREAM_FLUSH_SECONDS", 60)
    model_endpoint.script(Reply.text("alpha beta gamma", chunks=3))
    conversation = await database_sync_to_async(services.start_conversation)(user=alice)
    socket = await open_socket(f"/ws/conversations/{conversation.pk}/", user=alice)
    await socket.connect()
    await socket.send_to(text_data=form_frame(action="send_message", message="three words please"))
    frames = await frames_of_turn(socket)
    await socket.disconnect()

    delta = '-body" hx-swap-oob="innerHTML">'
    assert frames.count(delta) == 1  # the first text, and nothing more until the reply is saved
    shown = frames.split(delta)[1].split("</div>")[0]
    assert "alpha" in shown and "gamma" not in shown
    saved = frames.split(delta)[1].split('class="message message-assistant"')[-1]
    assert "alpha beta gamma" in saved  # the saved reply came after it, whole


async def test_one_turn_at_a_time_per_conversation(model_endpoint, alice):
    model_endpoint.script(Reply.text("only once", delay=0.3))
    conversation = await ask(alice, "race")
    await asyncio.gather(*(agent.run_pending_turns(conversation.pk) for _ in range(3)))
    rows = await thread(conversation)
    assert [r["role"] for r in rows] == ["user", "assistant"]
    assert len(model_endpoint.requests) == 1


async def test_a_message_sent_during_a_turn_is_answered_after_it(model_endpoint, alice, settings):
    settings.LLM_TIMEOUT_SECONDS = 10  # the first answer takes a while: no retry
    model_endpoint.script(Reply.text("first answer", delay=1.5), Reply.text("second answer"))
    conversation = await ask(alice, "first")
    running = asyncio.create_task(agent.run_pending_turns(conversation.pk))
    for _ in range(200):  # until the first turn has loaded and called the model (it answers after 1.5 s)
        if model_endpoint.requests:
            break
        await asyncio.sleep(0.05)
    await database_sync_to_async(services.post_user_message)(user=alice, conversation_id=conversation.pk, content="second")
    await agent.run_pending_turns(conversation.pk)  # finds the lock taken and leaves it to the running turn
    await running
    # Stored chronologically: "second" arrived while the first turn was running…
    assert [(r["role"], r["content"]) for r in await thread(conversation)] == [
        ("user", "first"), ("user", "second"), ("assistant", "first answer"), ("assistant", "second answer"),
    ]  # fmt: skip
    # …but the model saw each answer right after its question.
    seen = [(m["role"], m["content"]) for m in model_endpoint.requests[1]["messages"][1:]]
    assert seen == [("user", "first"), ("assistant", "first answer"), ("user", "second")]


@database_sync_to_async
def message_rows():
    return Message.objects.count()


async def test_twenty_thousand_character_message_is_rejected_with_the_limit(alice, model_endpoint):
    conversation = await database_sync_to_async(services.start_conversation)(user=alice)
    socket = await open_socket(f"/ws/conversations/{conversation.pk}/", user=alice)
    await socket.connect()
    await socket.send_to(text_data=form_frame(action="send_message", message="y" * 20_000))
    assert "That message is 20,000 characters; the limit is 8,000" in await receive_until(socket, "the limit is 8,000")
    assert await message_rows() == 0 and model_endpoint.requests == []
    await socket.disconnect()


async def test_a_turn_that_cannot_even_load_ends_with_a_visible_error(model_endpoint, alice, monkeypatch):
    def broken(**kwargs):
        raise RuntimeError("simulated bug while loading the turn")

    monkeypatch.setattr(agent.selectors, "turn_context", broken)
    conversation = await ask(alice, "hello")
    await agent.run_pending_turns(conversation.pk)
    rows = await thread(conversation)
    assert [r["role"] for r in rows] == ["user", "error"] and "went wrong on Clarion's side" in rows[1]["content"]
    assert model_endpoint.requests == []


def test_a_turn_reads_its_context_in_a_fixed_number_of_statements(workspace, alice, settings, django_assert_num_queries):
    settings.CLARIFICATION_ENABLED = False
    config = get_ai_config()
    config.ask_timeout_seconds = 123
    config.save()
    conversation = services.start_conversation(user=alice)
    first = services.post_user_message(user=alice, conversation_id=conversation.pk, content="what is open?")
    services.save_assistant_message(
        conversation_id=conversation.pk, in_reply_to_id=first.pk, content="Two tasks.", tool_calls=[], metadata={}
    )
    services.post_user_message(user=alice, conversation_id=conversation.pk, content="and in Atlas?")
    # The conversation with its owner, the configuration, the history, the snapshot.
    with django_assert_num_queries(4):
        ctx = selectors.turn_context(conversation_id=conversation.pk, history_limit=50)
    assert ctx.owner == alice and ctx.owner.username == "alice"
    assert ctx.group_name == conversation.group_name and ctx.request_text == "and in Atlas?"
    assert [(m.role, m.content) for m in ctx.messages[1:]] == [
        ("user", "what is open?"),
        ("assistant", "Two tasks."),
        ("user", "and in Atlas?"),
    ]
    assert "design homepage alice" in ctx.messages[0].content and "bob" not in ctx.messages[0].content
    assert ctx.timeouts.ask == 123 and ctx.projects == ("Atlas alice", "Harbor alice")


def test_the_history_a_turn_reads_is_the_newest_messages_without_errors_or_garbled_calls(alice):
    conversation = services.start_conversation(user=alice)
    old = services.post_user_message(user=alice, conversation_id=conversation.pk, content="old question")
    services.save_assistant_message(
        conversation_id=conversation.pk, in_reply_to_id=old.pk, content="old answer", tool_calls=[], metadata={}
    )
    request = services.post_user_message(user=alice, conversation_id=conversation.pk, content="new question")
    garbled = {"id": "g1", "name": "query_tasks", "arguments": "{oops"}
    rows = [
        Message(role=Message.Role.ASSISTANT, content="", tool_calls=[garbled], metadata={"malformed": True}),
        Message(role=Message.Role.TOOL, content="unreadable", tool_call_id="g1", tool_name="query_tasks", metadata={"malformed": True}),
        Message(role=Message.Role.ERROR, content="The model failed."),
    ]
    for row in rows:
        row.conversation, row.in_reply_to_id = conversation, request.pk
        row.save()

    newest = selectors.turn_context(conversation_id=conversation.pk, history_limit=1)
    assert [(m.role, m.content) for m in newest.messages[1:]] == [("user", "new question")]
    whole = selectors.turn_context(conversation_id=conversation.pk, history_limit=50)
    assert [(m.role, m.content) for m in whole.messages[1:]] == [
        ("user", "old question"),
        ("assistant", "old answer"),
        ("user", "new question"),
    ]


def test_a_turn_context_for_a_missing_conversation_does_not_exist(db):
    with pytest.raises(Conversation.DoesNotExist):
        selectors.turn_context(conversation_id=uuid.uuid4(), history_limit=50)


async def test_a_knowledge_search_the_docs_do_not_answer_tells_the_model_the_closest_pages(model_endpoint, alice, tmp_path):
    files = {"deploying.md": "# Deploying\n\nRun the server behind nginx.\n", "garden.md": "# Garden\n\nTomatoes need sun.\n"}
    await database_sync_to_async(build_kb)(tmp_path / "kb", files)
    source = await KnowledgeSource.objects.aget(source_id="kb/deploying.md")
    model_endpoint.script(
        Reply.tool_call("search_knowledge_base", {"question": "How do I rotate the nginx logs?"}),
        gate_reply(),
        select_reply("kb/deploying.md"),
        answer_reply("", answered=False),
        Reply.text("The docs don't say; the closest page is Deploying."),
    )
    conversation = await ask(alice, "how do I rotate the nginx logs?")
    await agent.run_pending_turns(conversation.pk)
    (result,) = tool_results(await thread(conversation))
    assert result["should_reply"] is False and "answer" not in result
    assert result["closest_pages"] == [{"title": "Deploying", "url": f"/kb/sources/{source.pk}/"}]
    assert "do not answer from memory" in result["note"] and "closest pages" in result["note"]
