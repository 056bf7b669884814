"""Knowledge questions in the chat go to the knowledge base; workspace requests stay with the workspace."""

from __future__ import annotations

import pytest

from llm.offline.intents import Intent, parse


@pytest.mark.parametrize(
    "text",
    [
        "What's the difference between a LEFT JOIN and an INNER JOIN in PostgreSQL?",
        "how do I export my tasks to CSV?",
        "how do I run Clarion with Ollama?",
        "How can I rebuild the knowledge index?",
        "Is there a way to change the prompts?",
        "What is a pending question?",
        "why does the countdown pause?",
        "What does 1a 2b mean?",
        "how to connect my own model",
    ],
)
def test_knowledge_questions_are_routed_to_the_knowledge_base(text):
    assert parse(text) == Intent("knowledge", search=text)


@pytest.mark.parametrize(
    "text, expected",
    [
        ("what's left to do in the Harbor project?", Intent("tasks", status="todo", project_name="Harbor")),
        ("how many tasks did I complete?", Intent("count_tasks", status="completed")),
        ("what are my tasks?", Intent("tasks")),
        ("delete all my completed tasks", Intent("delete_tasks", status="completed")),
        ("what is the status of my tasks in Atlas?", Intent("tasks", project_name="Atlas")),
    ],
)
def test_workspace_requests_stay_with_the_workspace(text, expected):
    assert parse(text) == expected
