"""Confirmed operations apply through workspace.services — one write path — all or nothing."""

import pytest
from django.utils import timezone

from project.errors import ClarionError
from tests.conftest import build_workspace
from workspace import operations, services
from workspace.models import Task

pytestmark = pytest.mark.django_db


def test_every_operation_names_a_service_taking_exactly_its_fields():
    import inspect
    import typing

    (union, _) = typing.get_args(operations.Operation)
    members = typing.get_args(union)
    assert len(members) == 12
    for op_model in members:
        (name,) = typing.get_args(op_model.model_fields["op"].annotation)
        write = getattr(services, name)
        params = {p for p in inspect.signature(write).parameters if p != "user"}
        assert params == set(op_model.model_fields) - {"op"}, name


def test_apply_writes_through_the_services_and_reports_counts(alice):
    ws = build_workspace(alice, tag="a")
    todo, copy = ws["tasks"][0], ws["tasks"][1]
    result = operations.apply(
        user=alice,
        operations=[
            {"op": "complete_task", "task_id": todo.pk},
            {"op": "move_task", "task_id": copy.pk, "project_id": None},
            {"op": "create_task", "title": "new one", "project_id": ws["projects"][1].pk},
        ],
    )
    assert result == {"applied": 3, "by_operation": {"complete_task": 1, "move_task": 1, "create_task": 1}}
    assert Task.objects.get(pk=todo.pk).status == "completed"
    assert Task.objects.get(pk=copy.pk).project_id is None
    assert Task.objects.get(title="new one").project_id == ws["projects"][1].pk


def test_a_row_gone_midway_rejects_the_whole_batch_and_writes_nothing(alice):
    ws = build_workspace(alice, tag="a")
    task = ws["tasks"][0]
    with pytest.raises(operations.OperationRejected) as caught:
        operations.apply(
            user=alice,
            operations=[
                {"op": "complete_task", "task_id": ws["tasks"][1].pk},
                {"op": "delete_task", "task_id": task.pk},
                {"op": "complete_task", "task_id": task.pk},
            ],
        )
    assert isinstance(caught.value, ClarionError) and caught.value.status == 422
    assert "no longer exists" in caught.value.message and "Nothing was changed" in caught.value.message
    assert Task.objects.filter(pk=task.pk).exists()  # rolled back
    assert Task.objects.get(pk=ws["tasks"][1].pk).status == "in_progress"


def test_services_refuse_another_users_rows(alice, bob):
    bobs = build_workspace(bob, tag="b")
    with pytest.raises(Task.DoesNotExist):
        services.complete_task(user=alice, task_id=bobs["tasks"][0].pk)
    with pytest.raises(Task.DoesNotExist):
        services.delete_task(user=alice, task_id=bobs["tasks"][0].pk)
    assert Task.objects.get(pk=bobs["tasks"][0].pk).status == "todo"


def test_an_update_is_shown_on_the_card_in_the_words_the_task_list_uses(alice):
    task = services.create_task(user=alice, title="Buy milk", status="completed")
    today = timezone.localdate()
    update = {"op": "update_task", "task_id": task.pk, "status": "todo", "priority": "urgent", "due_date": today.isoformat()}
    (line,) = operations.check(user=alice, operations=operations.OPERATIONS.validate_python([update]))
    assert line["text"] == f"Update task “Buy milk”: status → to do, priority → urgent, due → {today:%a} {today:%b} {today.day}"
    renamed = {"op": "update_task", "task_id": task.pk, "title": "Buy oat milk", "description": ""}
    (line,) = operations.check(user=alice, operations=operations.OPERATIONS.validate_python([renamed]))
    assert line["text"] == "Update task “Buy milk”: title → “Buy oat milk”, description → none"


def test_a_new_note_is_shown_with_the_start_of_its_text_on_one_line(alice):
    text = "Shortlist:\n\nthe old mill, the boathouse, " + "and a long list of other places " * 5
    (line,) = operations.check(
        user=alice, operations=operations.OPERATIONS.validate_python([{"op": "create_note", "title": "Venues", "content": text}])
    )
    assert line["text"].startswith("Create note “Venues”: “Shortlist: the old mill, the boathouse, and a long")
    assert line["text"].endswith("…”") and len(line["text"]) < 120
    (line,) = operations.check(
        user=alice, operations=operations.OPERATIONS.validate_python([{"op": "create_note", "title": "Empty", "content": " "}])
    )
    assert line["text"] == "Create note “Empty”"


def test_a_change_to_a_note_or_a_project_is_shown_on_the_card_with_what_it_changes(alice):
    project = services.create_project(user=alice, name="Atlas")
    note = services.create_note(user=alice, title="Retro")

    def line(op):
        (checked,) = operations.check(user=alice, operations=operations.OPERATIONS.validate_python([op]))
        return checked["text"]

    assert line({"op": "update_project", "project_id": project.pk, "archived": True}) == "Update project “Atlas”: archived"
    assert (
        line({"op": "update_project", "project_id": project.pk, "name": "Atlas 2", "archived": False})
        == "Update project “Atlas”: name → “Atlas 2”, no longer archived"
    )
    assert line({"op": "update_note", "note_id": note.pk, "title": "Launch retro", "content": "went well\n\nmostly"}) == (
        "Update note “Retro”: title → “Launch retro”, text → “went well mostly”"
    )
    assert line({"op": "update_note", "note_id": note.pk, "content": ""}) == "Update note “Retro”: text → none"


def test_text_appended_to_a_note_goes_after_a_blank_line_and_keeps_an_edit_made_since_it_was_proposed(alice):
    from workspace.models import Note

    note = services.create_note(user=alice, title="Reading list", content="Dune")
    empty = services.create_note(user=alice, title="Empty", content="")
    proposal = [
        {"op": "update_note", "note_id": note.pk, "append": "Hyperion"},
        {"op": "update_note", "note_id": empty.pk, "append": "first"},
    ]
    assert [line["text"] for line in operations.check(user=alice, operations=operations.OPERATIONS.validate_python(proposal))] == [
        "Update note “Reading list”: add at the end “Hyperion”",
        "Update note “Empty”: add at the end “first”",
    ]
    services.update_note(user=alice, note_id=note.pk, content="Dune\nFoundation")  # edited while the card waits
    operations.apply(user=alice, operations=proposal)
    assert Note.objects.get(pk=note.pk).content == "Dune\nFoundation\n\nHyperion"
    assert Note.objects.get(pk=empty.pk).content == "first"  # no blank line before the first text


@pytest.mark.parametrize(
    ("op", "error"),
    [
        ({"content": "new text", "append": "more"}, "content replaces the note's text and append adds to it: use one of them"),
        ({"append": "   "}, "String should have at least 1 character"),
    ],
)
def test_an_append_that_contradicts_itself_or_adds_nothing_is_rejected_and_writes_nothing(alice, op, error):
    from pydantic import ValidationError

    from workspace.models import Note

    note = services.create_note(user=alice, title="Reading list", content="Dune")
    with pytest.raises(ValidationError, match=error):
        operations.apply(user=alice, operations=[{"op": "update_note", "note_id": note.pk, **op}])
    assert Note.objects.get(pk=note.pk).content == "Dune"
