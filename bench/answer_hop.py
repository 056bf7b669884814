"""One answer hop, alone and beside a busy event loop: what the GIL costs a thread hop.

Resolves N answers the way a burst's hop does (`chat.answering._resolve_answers`: lock the
groups, read their questions, write the resolutions and the tool results, commit), timed
directly in this process — first with nothing else running, then beside a thread that keeps
the interpreter busy with Python, as the server's event loop is while it reads a burst's frames
and renders their receipts. Every time the hop waits for Postgres it lets go of the GIL, and it
may wait up to `sys.getswitchinterval()` (5 ms) to get it back: the difference between the two
columns is that wait, not work.

    DATABASE_NAME=clarion_bench_hop .venv/bin/python bench/answer_hop.py [--sizes 1,25,100] [--repeats 12]
"""

from __future__ import annotations

import argparse
import os
import statistics
import sys
import threading
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "bench"))
os.environ.setdefault("DJANGO_SETTINGS_MODULE", "project.settings")
os.environ.setdefault("SECRET_KEY", "bench-only")
os.environ.setdefault("DATABASE_NAME", "clarion_bench_hop")
os.environ.setdefault("LOG_LEVEL", "WARNING")

import django  # noqa: E402

django.setup()

from django.contrib.auth import get_user_model  # noqa: E402
from django.core.management import call_command  # noqa: E402
from query_tools import ensure_database  # noqa: E402

from chat import answering  # noqa: E402
from chat.models import Conversation, Message  # noqa: E402
from questions import services as questions  # noqa: E402
from questions.models import QuestionGroup  # noqa: E402
from questions.schemas import AnswerInput, QuestionSpec  # noqa: E402

SPEC = QuestionSpec.model_validate({"question": "Which project?", "options": [{"label": "Atlas"}, {"label": "Harbor"}]})


def pending_answers(n: int) -> list[questions.AnswerRequest]:
    """n people, each with a question pending in a conversation of their own, and their answers."""
    requests = []
    for i in range(n):
        user, _ = get_user_model().objects.get_or_create(username=f"hop{i}")
        conversation = Conversation.objects.create(owner=user, title="hop")
        asked = Message.objects.create(conversation=conversation, role=Message.Role.USER, content="file my new task")
        group = questions.ask(
            user=user,
            conversation_id=conversation.pk,
            kind=QuestionGroup.Kind.ASK,
            specs=[SPEC],
            tool_call_id=f"call_{i}",
            tool_name="ask_user",
            payload={"in_reply_to_id": asked.pk},
        )
        question = group.questions.get()
        requests.append(questions.AnswerRequest(user=user, question_id=question.pk, answer=AnswerInput(selected_indexes=[1]), via="option"))
    return requests


def hop_ms(n: int, repeats: int) -> list[float]:
    times = []
    for _ in range(repeats):
        requests = pending_answers(n)
        started = time.perf_counter()
        outcomes = answering._resolve_answers(requests)
        times.append(1000 * (time.perf_counter() - started))
        failed = [o for o in outcomes if isinstance(o, Exception)]
        if failed:
            raise SystemExit(f"an answer failed: {failed[0]!r}")
    return times


class BusyLoop:
    """A thread that only runs Python, as an event loop does through a burst."""

    def __enter__(self) -> BusyLoop:
        self.stop = threading.Event()
        self.thread = threading.Thread(target=self._spin, daemon=True)
        self.thread.start()
        return self

    def _spin(self) -> None:
        while not self.stop.is_set():
            sum(i * i for i in range(1000))

    def __exit__(self, *exc) -> None:
        self.stop.set()
        self.thread.join()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--sizes", default="1,25,100", help="answers per hop, comma-separated")
    parser.add_argument("--repeats", type=int, default=12)
    args = parser.parse_args()
    ensure_database()
    call_command("migrate", verbosity=0)
    hop_ms(5, 2)  # warm-up: connections, prepared statements, template and loader caches
    print(f"\nOne answer hop, ms (median, min–max of {args.repeats}); switch interval {1000 * sys.getswitchinterval():.0f} ms\n")
    print("| answers per hop | alone | beside a busy thread | per answer, alone |")
    print("| ---: | ---: | ---: | ---: |")
    for n in (int(s) for s in args.sizes.split(",")):
        alone = hop_ms(n, args.repeats)
        with BusyLoop():
            busy = hop_ms(n, args.repeats)
        cells = [f"{statistics.median(t):.1f} ({min(t):.1f}–{max(t):.1f})" for t in (alone, busy)]
        print(f"| {n} | {cells[0]} | {cells[1]} | {statistics.median(alone) / n:.2f} |")


if __name__ == "__main__":
    main()
