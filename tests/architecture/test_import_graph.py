"""The import graph of Clarion's own modules has no cycle, and imports point one way (DESIGN §2).

Read from the source (every `import`, including those inside functions), so a lazy import that
hides a cycle from Python's loader still counts here.
"""

from __future__ import annotations

import ast
import re
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
PACKAGES = ("chat", "questions", "workspace", "knowledge", "llm", "project")


def _module_name(path: Path) -> str:
    parts = list(path.relative_to(ROOT).with_suffix("").parts)
    if parts[-1] == "__init__":
        parts.pop()
    return ".".join(parts)


def _modules() -> dict[str, Path]:
    found = {}
    for package in PACKAGES:
        for path in (ROOT / package).rglob("*.py"):
            if "migrations" not in path.parts:
                found[_module_name(path)] = path
    return found


def _resolve(name: str, modules: dict[str, Path]) -> str | None:
    """The longest known module `name` refers to (`chat.agent.run_turn` → `chat.agent`)."""
    while name:
        if name in modules:
            return name
        name = name.rpartition(".")[0]
    return None


def import_graph() -> dict[str, set[str]]:
    modules = _modules()
    graph: dict[str, set[str]] = {name: set() for name in modules}
    for name, path in modules.items():
        package = name if path.name == "__init__.py" else name.rpartition(".")[0]
        for node in ast.walk(ast.parse(path.read_text(), filename=str(path))):
            targets = []
            if isinstance(node, ast.Import):
                targets = [a.name for a in node.names]
            elif isinstance(node, ast.ImportFrom):
                base = node.module or ""
                if node.level:
                    base = ".".join(package.split(".")[: len(package.split(".")) - node.level + 1] + ([base] if base else []))
                targets = [f"{base}.{a.name}" for a in node.names] + [base]
            for target in targets:
                resolved = _resolve(target, modules)
                if resolved and resolved != name and not name.startswith(resolved + "."):
                    graph[name].add(resolved)
    return graph


def find_cycle(graph: dict[str, set[str]]) -> list[str] | None:
    state: dict[str, int] = {}
    stack: list[str] = []

    def visit(node: str) -> list[str] | None:
        state[node] = 1
        stack.append(node)
        for nxt in sorted(graph[node]):
            if state.get(nxt) == 1:
                return stack[stack.index(nxt) :] + [nxt]
            if nxt not in state and (cycle := visit(nxt)):
                return cycle
        stack.pop()
        state[node] = 2
        return None

    for node in sorted(graph):
        if node not in state and (cycle := visit(node)):
            return cycle
    return None


def test_the_import_graph_has_no_cycle():
    cycle = find_cycle(import_graph())
    assert cycle is None, "import cycle: " + " → ".join(cycle)


def test_the_cycle_finder_finds_a_cycle():
    assert find_cycle({"a": {"b"}, "b": {"c"}, "c": {"a"}}) == ["a", "b", "c", "a"]
    assert find_cycle({"a": {"b"}, "b": set()}) is None


def test_the_answer_path_modules_import_downward_only():
    graph = import_graph()
    # The answer path, top to bottom: nothing below imports anything above it.
    assert "chat.answering" not in graph["chat.agent"]
    assert not {"chat.agent", "chat.answering"} & graph["chat.deadlines"]
    assert not {"chat.agent", "chat.answering", "chat.deadlines"} & graph["chat.publishing"]
    # The provider boundary imports no app.
    for module, imports in graph.items():
        if module.startswith("llm"):
            assert not {i for i in imports if not i.startswith("llm")}, module


def test_chat_reads_questions_only_through_their_selectors_and_services():
    """No query of another app's question rows from chat: `QuestionGroup.objects…` and
    `PendingQuestion.objects…` appear only in questions/."""
    offenders = [
        f"{path.relative_to(ROOT)}:{n}"
        for path in (ROOT / "chat").rglob("*.py")
        for n, line in enumerate(path.read_text().splitlines(), 1)
        if re.search(r"\b(QuestionGroup|PendingQuestion)\.objects\b|\.question_groups\.|\.pending_questions\.", line)
    ]
    assert offenders == []
