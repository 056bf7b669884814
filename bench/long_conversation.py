"""What opening a long conversation costs: the chat page of a conversation of 20, 2 000 and 20 000
messages, requested through Django's whole stack (middleware, session, view, templates) in this
process. Django renders the page before it sends a byte, so the time to the complete response is
the server's time to first byte.

    DATABASE_NAME=clarion_bench_long .venv/bin/python bench/long_conversation.py [--sizes 20,2000,20000] [--repeat 15]

Prints one row per size: server time (p50 and max of `--repeat` requests after two warm-ups), the
HTML's size, the messages shown, the elements of class `message…` (a message's article, meta line,
body and actions), and the SQL statements the page ran. The conversations
are created once (half requests, half Markdown replies) and reused by later runs.
"""

from __future__ import annotations

import argparse
import os
import re
import statistics
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))
os.environ.setdefault("DJANGO_SETTINGS_MODULE", "project.settings")
os.environ.setdefault("SECRET_KEY", "bench")
os.environ.setdefault("DATABASE_NAME", "clarion_bench_long")
os.environ.setdefault("LOG_LEVEL", "WARNING")
os.environ["ALLOWED_HOSTS"] = "testserver"

from query_tools import setup_django  # noqa: E402  (creates the database if missing, migrates)

setup_django(force_database=False)

from django.contrib.auth import get_user_model  # noqa: E402
from django.db import connection  # noqa: E402
from django.test import Client  # noqa: E402
from django.test.utils import CaptureQueriesContext  # noqa: E402

from chat.models import Conversation, Message  # noqa: E402

REPLY = "Here is **step {i}** of the plan:\n\n- book the venue\n- order the catering\n- confirm the speakers\n\nSee `launch-notes` for the details."


def conversation_of(user, size: int) -> Conversation:
    """The user's conversation of `size` messages, created on first use."""
    title = f"bench-long-{size}"
    conversation = Conversation.objects.filter(owner=user, title=title).first()
    if conversation is not None and conversation.messages.count() == size:
        return conversation
    Conversation.objects.filter(owner=user, title=title).delete()
    conversation = Conversation.objects.create(owner=user, title=title)
    rows = []
    for i in range(size):
        if i % 2 == 0:
            rows.append(Message(conversation=conversation, role=Message.Role.USER, content=f"What is step {i} of the launch plan?"))
        else:
            rows.append(Message(conversation=conversation, role=Message.Role.ASSISTANT, content=REPLY.format(i=i)))
    Message.objects.bulk_create(rows, batch_size=2000)
    # The last reply answers the last request, so the page starts no turn.
    last_request = conversation.messages.filter(role=Message.Role.USER).order_by("-id").first()
    if last_request is not None:
        conversation.messages.filter(role=Message.Role.ASSISTANT, id__gt=last_request.pk).update(in_reply_to=last_request)
    with connection.cursor() as cursor:
        cursor.execute(f'VACUUM ANALYZE "{Message._meta.db_table}"')
    return conversation


def measure(client: Client, conversation: Conversation, repeat: int) -> dict:
    url = f"/chat/{conversation.pk}/"
    for _ in range(2):
        client.get(url)
    timings = []
    for _ in range(repeat):
        started = time.perf_counter()
        response = client.get(url)
        timings.append((time.perf_counter() - started) * 1000)
        assert response.status_code == 200, response.status_code
    with CaptureQueriesContext(connection) as queries:
        html = client.get(url).content
    return {
        "p50": statistics.median(timings),
        "max": max(timings),
        "kib": len(html) / 1024,
        "messages": len(re.findall(rb'<article class="message[ "]', html)),
        "elements": len(re.findall(rb'class="message', html)),
        "queries": len(queries),
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sizes", default="20,2000,20000", help="conversation lengths, in messages")
    parser.add_argument("--repeat", type=int, default=15)
    args = parser.parse_args()
    user = get_user_model().objects.filter(username="bench_long").first() or get_user_model().objects.create_user("bench_long")
    client = Client()
    client.force_login(user)
    print(f"1-minute load {os.getloadavg()[0]:.1f} · {args.repeat} requests per size after 2 warm-ups\n")
    print("| messages | server time p50 ms | max ms | HTML KiB | messages shown | message elements | SQL statements |")
    print("| ---: | ---: | ---: | ---: | ---: | ---: | ---: |")
    for size in (int(s) for s in args.sizes.split(",")):
        row = measure(client, conversation_of(user, size), args.repeat)
        print(
            f"| {size:,} | {row['p50']:.1f} | {row['max']:.1f} | {row['kib']:,.1f} | {row['messages']:,} | {row['elements']:,} | {row['queries']} |"
        )


if __name__ == "__main__":
    main()
