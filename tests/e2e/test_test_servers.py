"""The test servers' idle check, which the e2e teardown waits on before emptying the database."""

from __future__ import annotations

import urllib.request

import pytest
from django.contrib.auth import get_user_model
from django.urls import Resolver404, resolve
from playwright.sync_api import expect

from chat.models import Message
from tests.e2e.conftest import log_in, start_conversation

pytestmark = pytest.mark.e2e


def test_idle_waits_for_the_turn_a_test_started(start_server, browser_context):
    # A slow offline stream: the reply takes a few seconds to finish after the message is sent.
    server = start_server(OFFLINE_STREAM_DELAY="0.15")
    get_user_model().objects.create_user(username="ida", password="correct-horse")
    page = browser_context.new_page()
    log_in(page, server.url, "ida", "correct-horse")
    start_conversation(page, server.url)
    page.fill("#composer-input", "what can you do?")
    page.keyboard.press("Enter")
    expect(page.locator(".message-assistant.streaming")).to_have_count(1)
    page.close()  # the test "ends" mid-turn

    server.wait_until_idle()

    # The turn finished before the idle check answered: its reply is saved.
    assert Message.objects.filter(role=Message.Role.ASSISTANT, conversation__owner__username="ida").exists()


def test_the_idle_check_is_not_part_of_the_production_urls(live_url):
    with pytest.raises(Resolver404):
        resolve("/__test__/idle/", urlconf="project.urls")
    with urllib.request.urlopen(f"{live_url}/__test__/idle/") as response:
        assert response.status == 204
