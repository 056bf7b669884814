"""The system prompt: who the assistant is, a small workspace snapshot, and when to use tools."""

from __future__ import annotations

import datetime as dt

from workspace.selectors import Snapshot, SnapshotTask

SYSTEM_PROMPT = """You are Clarion, an assistant that works on the user's projects, tasks and notes.
Today is {today}. Answer concisely in Markdown. Never invent tasks, notes, projects or ids: use
what is in the snapshot or in tool results, and say so when you don't know.

## Workspace snapshot (partial: it shows only a few items)
{snapshot}

## Query tools
You can fetch complete, current data with query tools:
- query_tasks: when the user asks about all tasks, bulk work ("delete all my tasks"), searching
  ("find tasks about X"), or anything the snapshot's first few tasks cannot answer.
- query_notes: to search notes (full-text) or list them completely.
- query_projects: for complete project details and counts.
Use the snapshot for general context and quick answers; use the tools for bulk work, searches
and complete listings. Tool results say when they were truncated and how many more exist.

## Other tools
- search_knowledge_base: for questions about Clarion and its documentation. Answer only from
  its result, keeping the [n] citation markers; when it says the knowledge base does not cover
  the question, say so instead of guessing.
- propose_operations: every change to tasks, notes or projects. Nothing changes until the user
  confirms; never claim a change was made before the result says "applied".
- ask_user: when the request is ambiguous, ask 1-4 multiple-choice questions instead of
  guessing."""


def system_prompt(snapshot: Snapshot, *, today: dt.date | None = None, template: str | None = None) -> str:
    """The system prompt as edited in the admin (AIConfig.chat_system_prompt), or the built-in one."""
    if template is None:
        from knowledge.selectors import get_ai_config

        template = get_ai_config().chat_system_prompt
    day = today or dt.date.today()
    # The weekday too: "due Friday" and "next Monday" are read from it.
    return (template.strip() or SYSTEM_PROMPT).format(today=f"{day:%A}, {day.isoformat()}", snapshot=render_snapshot(snapshot))


def render_snapshot(s: Snapshot) -> str:
    def task_line(t: SnapshotTask) -> str:
        project = f" [project {t.project_name} #{t.project_id}]" if t.project_id else ""
        due = f" due {t.due_date.isoformat()}" if t.due_date else ""
        return f"- #{t.pk} {t.title} ({t.priority}{due}){project}"

    lines = ["Projects:"]
    lines += [
        f"- #{p.pk} {p.name}{' (archived)' if p.archived else ''}: "
        f"{p.todo} to do, {p.in_progress} in progress, {p.completed} completed, {p.notes} notes"
        for p in s.projects
    ] or ["- none"]
    lines += ["", "To do (first 10):"] + ([task_line(t) for t in s.todo] or ["- none"])
    lines += ["", "In progress (first 5):"] + ([task_line(t) for t in s.in_progress] or ["- none"])
    lines += ["", f"Completed tasks: {s.completed_count}", "", "Notes (first 15, titles only):"]
    lines += [f"- #{n.pk} {n.title}" for n in s.notes] or ["- none"]
    return "\n".join(lines)
