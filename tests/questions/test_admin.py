import pytest
from django.contrib.auth import get_user_model

from tests.questions.test_answer_endpoints import make_group

pytestmark = pytest.mark.django_db


def test_admin_lists_and_shows_pending_questions(client, alice):
    admin = get_user_model().objects.create_superuser("root", "root@example.com", "pw-xxxxxxxx")
    group = make_group(alice, n=2)
    client.force_login(admin)
    listing = client.get("/admin/questions/pendingquestion/")  # pending is the default filter
    assert listing.status_code == 200 and "2 pending questions" in listing.content.decode()
    detail = client.get(f"/admin/questions/questiongroup/{group.pk}/change/")
    assert detail.status_code == 200 and "ask_user" in detail.content.decode()
    question = group.questions.first()
    assert client.get(f"/admin/questions/pendingquestion/{question.pk}/change/").status_code == 200
    assert client.get("/admin/questions/pendingquestion/add/").status_code == 403
