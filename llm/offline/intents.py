"""Plain-language requests the offline engine understands, parsed into a small intent object.

Deterministic rules, no model: the point is that a fresh install with no key still does the
useful read-side things, and says honestly what it cannot do.
"""
from __future__ import annotations

import re
from dataclasses import dataclass

STATUS_WORDS: list[tuple[str, str]] = [
    (r"\bin[- ]progress\b|\bworking on\b|\bstarted\b|\bdoing\b|\bongoing\b|\bactive\b", "in_progress"),
    (r"\bcomplete(d)?\b|\bdone\b|\bfinished\b|\bclosed\b", "completed"),
    (r"\bto[- ]?dos?\b|\bopen\b|\bleft\b|\bremaining\b|\bpending\b|\bnot started\b|\boutstanding\b", "todo"),
]
# Words that end a quoted-less search phrase ("notes about the launch in Atlas").
_PHRASE_STOP = r"(?=\s+(?:in|for|from|under)\s+(?:the\s+)?(?:project\s+)?[A-Z]|[?.!,]|$)"
_SEARCH = re.compile(
    r"\b(?:about|on|mentioning|mention|containing|regarding|re|with|titled|called|named|matching|for)\s+(?P<term>.+?)" + _PHRASE_STOP,
    re.IGNORECASE,
)
_PROJECT = re.compile(
    r"\b(?:in|for|from|under|of)\s+(?:the\s+|my\s+)?(?:project\s+)?(?P<name>[A-Z][\w&.-]*(?:\s+[A-Z][\w&.-]*)*)(?:\s+project)?\b"
)
_PROJECT_SUFFIX = re.compile(r"\b(?P<name>[A-Z][\w&.-]*(?:\s+[A-Z][\w&.-]*)*)\s+project\b")
_QUOTED = re.compile(r"[\"“'‘](?P<term>[^\"”'’]{2,80})[\"”'’]")
_FILLER = re.compile(r"^(?:the|my|a|an|any|all)\s+", re.IGNORECASE)
_GENERIC_TERMS = {"tasks", "task", "notes", "note", "it", "them", "everything", "anything", "me", "my tasks", "my notes"}


@dataclass(frozen=True)
class Intent:
    kind: str  # "tasks" | "count_tasks" | "notes" | "projects" | "help"
    status: str = "all"
    search: str | None = None
    project_name: str | None = None


def parse(text: str) -> Intent:
    raw = text.strip()
    lower = raw.lower()
    if not raw or re.fullmatch(r"(hi|hello|hey|help|\?|what can you do\??|who are you\??)[!. ]*", lower):
        return Intent("help")

    mentions_notes = bool(re.search(r"\bnotes?\b", lower))
    mentions_tasks = bool(re.search(r"\btasks?\b|\bto[- ]?dos?\b|\bon my plate\b|\bwork(ing)? on\b", lower))
    mentions_projects = bool(re.search(r"\bprojects?\b", lower))
    status = _status(lower)
    project_name = _project_name(raw)
    search = _search_term(raw, project_name)

    if re.search(r"\bhow many\b|\bcount\b|\bnumber of\b", lower) and (mentions_tasks or status != "all"):
        return Intent("count_tasks", status=status, project_name=project_name)
    if mentions_notes:
        return Intent("notes", search=search, project_name=project_name)
    if mentions_tasks or status != "all":
        return Intent("tasks", status=status, search=search, project_name=project_name)
    if mentions_projects:
        return Intent("projects")
    return Intent("help")


def _status(lower: str) -> str:
    for pattern, status in STATUS_WORDS:
        if re.search(pattern, lower):
            return status
    return "all"


def _project_name(raw: str) -> str | None:
    for pattern in (_PROJECT_SUFFIX, _PROJECT):
        if match := pattern.search(raw):
            name = match.group("name").strip()
            if name.lower() not in {"i", "my", "the"}:
                return name
    return None


def _search_term(raw: str, project_name: str | None) -> str | None:
    if match := _QUOTED.search(raw):
        return match.group("term").strip()
    for match in _SEARCH.finditer(raw):
        term = _FILLER.sub("", match.group("term").strip()).strip()
        if project_name and term.lower() in {project_name.lower(), f"{project_name.lower()} project", f"project {project_name.lower()}"}:
            continue
        if term and term.lower() not in _GENERIC_TERMS:
            return term
    return None
