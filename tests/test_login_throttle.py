"""Repeated failed logins lock out the account and the client address (django-axes), on the login
page and the admin login; the locked-out person is told when to try again."""

from __future__ import annotations

from datetime import timedelta

import pytest
from asgiref.sync import sync_to_async
from axes.models import AccessAttempt
from django.contrib.sessions.models import Session
from django.db import close_old_connections
from django.test import AsyncClient, Client
from django.urls import reverse

PASSWORD = "pw-xxxxxxxx"  # the `alice` fixture's


def login(client: Client, username: str, password: str, *, url: str | None = None):
    return client.post(url or reverse("login"), {"username": username, "password": password})


def assert_locked_out(response) -> str:
    assert response.status_code == 429
    page = response.content.decode()
    assert "Too many failed logins" in page and "Try again in 15 minutes" in page
    assert int(response["Retry-After"]) == 15 * 60
    return page


def assert_not_logged_in(client: Client) -> None:
    assert "_auth_user_id" not in client.session
    assert client.get(reverse("chat:home")).status_code == 302


@pytest.mark.django_db
def test_wrong_passwords_then_the_right_one_is_refused_with_a_clear_message(alice, settings):
    client = Client()
    for _ in range(settings.AXES_FAILURE_LIMIT - 1):
        response = login(client, "alice", "wrong")
        assert response.status_code == 200 and "correct username and password" in response.content.decode()
    assert_locked_out(login(client, "alice", "wrong"))

    assert_locked_out(login(client, "alice", PASSWORD))
    assert not Session.objects.exists()  # nothing was written for the refused login
    assert_not_logged_in(client)


@pytest.mark.django_db
def test_the_account_is_locked_from_every_address(alice, settings):
    for n in range(settings.AXES_FAILURE_LIMIT):
        login(Client(REMOTE_ADDR=f"10.0.0.{n + 1}"), "alice", "wrong")
    client = Client(REMOTE_ADDR="10.0.1.1")
    assert_locked_out(login(client, "alice", PASSWORD))
    assert_not_logged_in(client)


@pytest.mark.django_db
def test_the_address_is_locked_for_every_account(alice, settings):
    client = Client()
    for n in range(settings.AXES_FAILURE_LIMIT):
        login(client, f"guess{n}", "wrong")
    assert_locked_out(login(client, "alice", PASSWORD))
    assert_not_logged_in(client)
    # Somebody else, elsewhere, is not affected.
    assert login(Client(REMOTE_ADDR="10.0.1.1"), "alice", PASSWORD).status_code == 302


@pytest.mark.django_db
def test_the_admin_login_is_throttled_too(alice, settings):
    alice.is_staff = True
    alice.save()
    client = Client()
    url = reverse("admin:login")
    for _ in range(settings.AXES_FAILURE_LIMIT):
        login(client, "alice", "wrong", url=url)
    assert_locked_out(login(client, "alice", PASSWORD, url=url))
    assert_not_logged_in(client)


@pytest.mark.django_db
def test_after_the_wait_the_right_password_works_and_clears_the_count(alice, settings):
    client = Client()
    for _ in range(settings.AXES_FAILURE_LIMIT):
        login(client, "alice", "wrong")
    AccessAttempt.objects.update(attempt_time=AccessAttempt.objects.get().attempt_time - timedelta(minutes=16))
    assert login(client, "alice", PASSWORD).status_code == 302
    assert not AccessAttempt.objects.exists()


@pytest.mark.django_db
def test_forwarded_addresses_are_ignored_unless_proxies_are_configured(alice, settings):
    client = Client()
    for n in range(settings.AXES_FAILURE_LIMIT):
        # Claiming another address in a header changes nothing without a trusted proxy.
        client.post(reverse("login"), {"username": f"guess{n}", "password": "x"}, headers={"X-Forwarded-For": f"10.9.9.{n}"})
    assert AccessAttempt.objects.values("ip_address").distinct().count() == 1
    assert_locked_out(client.post(reverse("login"), {"username": "alice", "password": PASSWORD}, headers={"X-Forwarded-For": "10.9.9.99"}))


@pytest.mark.django_db
def test_behind_a_trusted_proxy_the_address_it_forwarded_counts(alice, settings):
    settings.TRUSTED_PROXY_COUNT = 1
    proxy = Client(REMOTE_ADDR="10.0.0.1")
    for n in range(settings.AXES_FAILURE_LIMIT):
        # The client claims 6.6.6.6; the proxy appended the address it really saw.
        proxy.post(reverse("login"), {"username": f"guess{n}", "password": "x"}, headers={"X-Forwarded-For": "6.6.6.6, 203.0.113.7"})
    assert set(AccessAttempt.objects.values_list("ip_address", flat=True)) == {"203.0.113.7"}
    locked = {"X-Forwarded-For": "203.0.113.7"}
    assert_locked_out(proxy.post(reverse("login"), {"username": "alice", "password": PASSWORD}, headers=locked))
    # Another client behind the same proxy is not locked out.
    other = {"X-Forwarded-For": "203.0.113.8"}
    assert proxy.post(reverse("login"), {"username": "alice", "password": PASSWORD}, headers=other).status_code == 302


@pytest.mark.django_db(transaction=True)
async def test_the_lockout_works_through_the_asgi_stack(alice, settings):
    """Daphne runs Django's middleware asynchronously: the same lockout, the same page."""
    client = AsyncClient()
    for _ in range(settings.AXES_FAILURE_LIMIT):
        await client.post(reverse("login"), {"username": "alice", "password": "wrong"})
    assert_locked_out(await client.post(reverse("login"), {"username": "alice", "password": PASSWORD}))
    # The sync login view ran in asgiref's thread: its connection goes, or the test database can't.
    await sync_to_async(close_old_connections)()
