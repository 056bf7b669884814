"""The fake server itself, exercised with plain stdlib HTTP (no SDK)."""

from __future__ import annotations

import json
import urllib.error
import urllib.request

import pytest

from tests.fake_openai import FakeOpenAI, Reply


def post(fake: FakeOpenAI, body: dict) -> tuple[int, str]:
    request = urllib.request.Request(
        fake.base_url + "/chat/completions",
        data=json.dumps(body).encode(),
        headers={"Content-Type": "application/json"},
    )
    try:
        with urllib.request.urlopen(request, timeout=5) as response:
            return response.status, response.read().decode()
    except urllib.error.HTTPError as err:
        return err.code, err.read().decode()


def test_default_reply_is_ok_and_requests_are_recorded() -> None:
    with FakeOpenAI() as fake:
        status, text = post(fake, {"model": "m", "messages": [{"role": "user", "content": "hi"}]})
        assert status == 200
        assert json.loads(text)["choices"][0]["message"]["content"] == "ok"
        assert fake.requests == [{"model": "m", "messages": [{"role": "user", "content": "hi"}]}]
        fake.reset()
        assert fake.requests == []


def test_empty_queue_can_be_made_loud() -> None:
    with FakeOpenAI(default=None) as fake:
        status, text = post(fake, {"model": "m", "messages": []})
        assert status == 500 and "queue is empty" in text


def test_callable_script_sees_the_request(fake_openai: FakeOpenAI) -> None:
    fake_openai.script(lambda body: Reply.text(f"echo {body['messages'][-1]['content']}"))
    _, text = post(fake_openai, {"model": "m", "messages": [{"role": "user", "content": "ping"}]})
    assert json.loads(text)["choices"][0]["message"]["content"] == "echo ping"


def test_structured_output_requests_have_their_own_queue(fake_openai: FakeOpenAI) -> None:
    def content(body: dict) -> str:
        return json.loads(post(fake_openai, body)[1])["choices"][0]["message"]["content"]

    fake_openai.script(Reply.text("chat"))
    fake_openai.script_structured(Reply.text("structured"))
    structured = {"model": "m", "messages": [], "response_format": {"type": "json_object"}}
    assert content(structured) == "structured" and content({"model": "m", "messages": []}) == "chat"
    fake_openai.script(Reply.text("main again"))
    assert content(structured) == "main again"  # its own queue is empty: served from the main one


def test_sse_format(fake_openai: FakeOpenAI) -> None:
    fake_openai.script(Reply.text("a b c"))
    status, text = post(fake_openai, {"model": "m", "messages": [], "stream": True, "stream_options": {"include_usage": True}})
    assert status == 200
    events = [line[len("data: ") :] for line in text.split("\n\n") if line]
    assert events[-1] == "[DONE]"
    chunks = [json.loads(e) for e in events[:-1]]
    assert [c["choices"][0]["delta"].get("content") for c in chunks[1:4]] == ["a", " b", " c"]
    assert chunks[-2]["choices"][0]["finish_reason"] == "stop"
    assert chunks[-1]["choices"] == [] and chunks[-1]["usage"]["completion_tokens"] == 3


def test_models_endpoint(fake_openai: FakeOpenAI) -> None:
    with urllib.request.urlopen(fake_openai.base_url + "/models", timeout=5) as response:
        assert json.loads(response.read())["data"][0]["id"] == "fake-model"


@pytest.mark.parametrize("reply", [Reply.error(418, "teapot", headers={"X-Extra": "1"})])
def test_error_reply(fake_openai: FakeOpenAI, reply: Reply) -> None:
    fake_openai.script(reply)
    status, text = post(fake_openai, {"model": "m", "messages": []})
    assert status == 418 and json.loads(text)["error"]["message"] == "teapot"


def test_a_stall_sends_the_headers_then_waits_then_finishes(fake_openai: FakeOpenAI) -> None:
    import http.client
    import time

    fake_openai.script(Reply.text("a b c", stall_after=2, stall_seconds=0.5))
    conn = http.client.HTTPConnection("127.0.0.1", fake_openai.port, timeout=5)
    started = time.monotonic()
    conn.request("POST", "/v1/chat/completions", body=json.dumps({"model": "m", "messages": [], "stream": True}))
    response = conn.getresponse()
    assert response.status == 200 and time.monotonic() - started < 0.4  # headers at once
    body = response.read().decode()
    assert time.monotonic() - started >= 0.5  # the body waited out the stall
    assert body.rstrip().endswith("data: [DONE]") and '"content": " c"' in body
    conn.close()


def test_a_hang_answers_nothing_and_does_not_hold_up_stop() -> None:
    import socket
    import time

    fake = FakeOpenAI(default=Reply.hang()).start()
    with socket.create_connection(("127.0.0.1", fake.port)) as sock:
        body = b'{"model": "m", "messages": []}'
        sock.sendall(
            b"POST /v1/chat/completions HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\nContent-Length: %d\r\n\r\n%s"
            % (len(body), body)
        )
        sock.settimeout(0.5)
        with pytest.raises(TimeoutError):
            sock.recv(1)
        started = time.monotonic()
        fake.stop()
        assert time.monotonic() - started < 2
    assert len(fake.requests) == 1
