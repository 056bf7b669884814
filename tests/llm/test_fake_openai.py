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
