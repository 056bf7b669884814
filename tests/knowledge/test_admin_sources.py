"""Sources managed in the admin: upload a file, add a URL or a folder, disable or remove one. Each
addition is checked at once and indexed by the durable rebuild; a disabled or removed source
leaves the index (and the answers) at once; bad input is refused with a message, writing nothing."""

from __future__ import annotations

import io
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

import pytest
from asgiref.sync import sync_to_async
from django.contrib.auth import get_user_model
from django.core.files.uploadedfile import SimpleUploadedFile
from django.test import Client
from pypdf import PdfWriter

from knowledge import selectors, services
from knowledge.models import AddedSource, KnowledgeSource, RebuildJob
from tests.knowledge.conftest import ask, summary_for, wait_until, write_sources

pytestmark = pytest.mark.django_db

ADD_URL = "/admin/knowledge/addedsource/add/"
LIST_URL = "/admin/knowledge/addedsource/"
ZORBLAX = "# Zorblax tuning\n\nThe zorblax dial sets how fast the harbour crane turns.\n"


def pdf(*lines: str) -> bytes:
    """A one-page PDF whose text layer holds `lines` (none: a page without text, like a scan)."""
    stream = "BT /F1 12 Tf 72 720 Td " + " ".join(f"({line}) Tj 0 -16 Td" for line in lines) + " ET"
    objects = [
        "<< /Type /Catalog /Pages 2 0 R >>",
        "<< /Type /Pages /Kids [3 0 R] /Count 1 >>",
        "<< /Type /Page /Parent 2 0 R /MediaBox [0 0 612 792] /Contents 4 0 R /Resources << /Font << /F1 5 0 R >> >> >>",
        f"<< /Length {len(stream)} >>\nstream\n{stream}\nendstream",
        "<< /Type /Font /Subtype /Type1 /BaseFont /Helvetica >>",
    ]
    out, offsets = b"%PDF-1.4\n", []
    for number, body in enumerate(objects, 1):
        offsets.append(len(out))
        out += f"{number} 0 obj\n{body}\nendobj\n".encode()
    table = "".join(f"{offset:010d} 00000 n \n" for offset in offsets)
    trailer = f"trailer\n<< /Size {len(objects) + 1} /Root 1 0 R >>\nstartxref\n{len(out)}\n%%EOF\n"
    return out + f"xref\n0 {len(objects) + 1}\n0000000000 65535 f \n{table}{trailer}".encode()


def encrypted_pdf() -> bytes:
    writer = PdfWriter()
    writer.add_blank_page(width=612, height=792)
    writer.encrypt("secret", algorithm="RC4-128")
    out = io.BytesIO()
    writer.write(out)
    return out.getvalue()


@pytest.fixture
def configured(tmp_path, settings):
    """A configured folder, indexed, as `manage.py up` leaves the user guide."""
    folder = write_sources(tmp_path / "guide", {"intro.md": "# Intro\n\nClarion answers from its guide.\n"})
    settings.KNOWLEDGE_SOURCE_DIRS = [folder]

    async def summarizer(*, source_id, text, timeout_seconds):
        return summary_for(source_id)

    services.rebuild_kb_index(summarizer=summarizer)
    return folder


@pytest.fixture
def inline_rebuilds(monkeypatch):
    """Run the queued rebuild job in the request's thread (the test's transaction sees it)."""
    ran: list[int] = []

    def run(*, job_id):
        ran.append(job_id)
        services.run_rebuild_job(job_id=job_id)

    monkeypatch.setattr(services, "run_rebuild_job_in_background", run)
    return ran


def upload(client, name: str, data: bytes, **extra):
    return client.post(ADD_URL, {"file": SimpleUploadedFile(name, data), **extra}, follow=True)


def page_of(response) -> str:
    return response.content.decode()


def snapshot():
    """Everything a refused addition must leave as it was."""
    return (
        list(AddedSource.objects.values_list("pk", "location", "enabled")),
        list(KnowledgeSource.objects.values_list("pk", "source_id", "content_hash", "summary", "updated_at")),
        list(RebuildJob.objects.values_list("pk", "status")),
        selectors.current_index().pk,
    )


# ---------------------------------------------------------------------------- adding


def test_an_uploaded_file_is_stored_in_the_database_and_indexed_by_a_rebuild(admin_client, root, configured, inline_rebuilds):
    response = upload(admin_client, "crane.md", ZORBLAX.encode())

    html = page_of(response)
    added = AddedSource.objects.get()
    assert (added.kind, added.location, added.content, added.added_by) == ("upload", "crane.md", ZORBLAX, root)
    assert "Added “crane.md” (uploaded file)." in html and "Rebuild #" in html and "started" in html
    assert response.redirect_chain[-1][0] == "/admin/knowledge/knowledgeindex/"
    job = RebuildJob.objects.get(pk=inline_rebuilds[0])
    assert job.status == "succeeded" and (job.total, job.done) == (1, 1)  # only the new source was summarised
    page = KnowledgeSource.objects.get(source_id="uploads/crane.md")
    assert page.origin == added and page.title == "Zorblax tuning"
    assert "uploads/crane.md — Zorblax tuning" in selectors.current_index().text
    assert not (configured / "crane.md").exists()

    listing = page_of(admin_client.get(LIST_URL))
    assert "From the configuration" in listing and str(configured) in listing and "crane.md" in listing
    pages = page_of(admin_client.get("/admin/knowledge/knowledgesource/"))
    assert "configuration" in pages and f"/admin/knowledge/addedsource/{added.pk}/change/" in pages
    from_the_admin = page_of(admin_client.get("/admin/knowledge/knowledgesource/?from=added"))
    assert "uploads/crane.md" in from_the_admin and "intro.md" not in from_the_admin
    from_the_configuration = page_of(admin_client.get("/admin/knowledge/knowledgesource/?from=configuration"))
    assert "intro.md" in from_the_configuration and "uploads/crane.md" not in from_the_configuration


def test_an_uploaded_pdf_is_stored_as_its_text_and_indexed(admin_client, configured, inline_rebuilds):
    html = page_of(upload(admin_client, "crane.pdf", pdf("Zorblax tuning", "The zorblax dial sets how fast the harbour crane turns.")))
    added = AddedSource.objects.get()
    assert "Added “crane.pdf” (uploaded file)." in html
    assert added.content == "Zorblax tuning\nThe zorblax dial sets how fast the harbour crane turns."
    page = KnowledgeSource.objects.get(source_id="uploads/crane.pdf")
    assert page.origin == added and page.kind == "text" and "harbour crane" in page.content
    assert "uploads/crane.pdf — " in selectors.current_index().text


def test_a_folder_is_added_and_indexed(admin_client, configured, inline_rebuilds, tmp_path):
    folder = write_sources(tmp_path / "ops", {"backups.md": "# Backups\n\nNightly.\n", "restore.txt": "Restore from the newest.\n"})
    html = page_of(admin_client.post(ADD_URL, {"folder": str(folder)}, follow=True))
    added = AddedSource.objects.get()
    assert added.kind == "folder" and added.location == str(folder.resolve()) and "(folder)" in html
    assert set(KnowledgeSource.objects.filter(origin=added).values_list("title", flat=True)) == {"Backups", "Restore from the newest."}


class _Site(BaseHTTPRequestHandler):
    release = threading.Event()
    pages = {
        "/crane.md": ("text/markdown", ZORBLAX),
        "/menu.html": ("text/html", "<html><head><title>Menu</title></head><body><nav>Home About</nav><script>x()</script></body></html>"),
        "/manual.html": ("text/html", "<html><body><main><h1>Manual</h1><p>The winch has two speeds.</p></main></body></html>"),
    }

    def do_GET(self):
        if self.path == "/slow":
            self.release.wait(10)  # longer than the test's URL timeout; released when the test ends
        if self.path not in self.pages:
            self.send_error(404)
            return
        content_type, body = self.pages[self.path]
        data = body.encode()
        self.send_response(200)
        self.send_header("Content-Type", content_type)
        self.send_header("Content-Length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)

    def log_message(self, *args):
        pass


@pytest.fixture
def web(settings):
    settings.KNOWLEDGE_URL_TIMEOUT_SECONDS = 0.5
    _Site.release.clear()
    server = ThreadingHTTPServer(("127.0.0.1", 0), _Site)
    thread = threading.Thread(target=server.serve_forever, kwargs={"poll_interval": 0.05}, daemon=True)
    thread.start()
    yield f"http://127.0.0.1:{server.server_address[1]}"
    _Site.release.set()
    server.shutdown()
    server.server_close()


def test_a_url_is_fetched_checked_and_indexed(admin_client, configured, inline_rebuilds, web):
    html = page_of(admin_client.post(ADD_URL, {"url": f"{web}/manual.html"}, follow=True))
    added = AddedSource.objects.get()
    assert added.kind == "url" and "(url)" in html
    page = KnowledgeSource.objects.get(source_id=f"{web}/manual.html")
    assert page.origin == added and "The winch has two speeds." in page.content


# ---------------------------------------------------------------------------- bad input


BIG = 50 * 1024 * 1024


@pytest.mark.parametrize(
    "name, data, message",
    [
        ("logo.md", b"\x89PNG\r\n\x1a\n\x00\x00\x00\rIHDR", "“logo.md” is not readable text: it is a binary file or not encoded as UTF-8."),
        ("latin.txt", "Café au lait, crème brûlée.".encode("latin-1"), "“latin.txt” is not readable text"),
        ("huge.md", b"a" * BIG, "“huge.md” is larger than 2,000,000 bytes (KNOWLEDGE_MAX_SOURCE_BYTES)."),
        ("setup.exe", b"MZ", "“setup.exe” cannot be added: only .htm, .html, .markdown, .md, .pdf, .rst, .txt files are read."),
        ("broken.pdf", b"%PDF-1.4\nnot really a PDF", "“broken.pdf” could not be read as a PDF."),
        ("scan.pdf", pdf(), "“scan.pdf” has no text to index."),
        ("secret.pdf", encrypted_pdf(), "“secret.pdf” is an encrypted PDF; upload a copy without a password."),
        ("blank.md", b"  \n\n ", "“blank.md” has no text to index."),
        ("empty.html", b"<html><body><nav>Home</nav><script>x()</script></body></html>", "“empty.html” has no text to index."),
        ("copy.md", b"# Intro\n\nClarion answers from its guide.\n", "has the same content as guide/intro.md, which is already a source."),
    ],
    ids=[
        "binary",
        "not-utf8",
        "50-MB",
        "extension",
        "broken-pdf",
        "pdf-without-text",
        "encrypted-pdf",
        "blank",
        "html-without-text",
        "same-content",
    ],
)
def test_a_bad_upload_is_refused_with_a_message_and_nothing_changes(admin_client, configured, inline_rebuilds, name, data, message):
    before = snapshot()
    response = upload(admin_client, name, data)
    assert response.status_code == 422
    assert message in page_of(response)
    assert snapshot() == before and inline_rebuilds == []


def test_the_same_file_name_twice_is_refused(admin_client, configured, inline_rebuilds):
    upload(admin_client, "crane.md", ZORBLAX.encode())
    before = snapshot()
    response = upload(admin_client, "crane.md", b"# Another\n\nDifferent text.\n")
    assert response.status_code == 422 and "A file named “crane.md” is already a source." in page_of(response)
    assert snapshot() == before and AddedSource.objects.get().content == ZORBLAX


@pytest.mark.parametrize(
    "path, message",
    [
        ("/slow", "did not answer within 0.5 s (KNOWLEDGE_URL_TIMEOUT_SECONDS)."),
        ("/menu.html", "has no text to index."),
        ("/missing.html", "answered HTTP 404"),
        ("/crane.md", "has the same content as uploads/crane.md, which is already a source."),
    ],
    ids=["timeout", "html-without-text", "not-found", "same-content"],
)
def test_a_bad_url_is_refused_with_a_message_and_nothing_changes(admin_client, configured, inline_rebuilds, web, path, message):
    upload(admin_client, "crane.md", ZORBLAX.encode())
    before, ran = snapshot(), list(inline_rebuilds)
    response = admin_client.post(ADD_URL, {"url": f"{web}{path}"}, follow=True)
    assert response.status_code == 422 and message in page_of(response)
    assert snapshot() == before and inline_rebuilds == ran


def test_the_same_url_twice_or_a_configured_one_is_refused(admin_client, configured, inline_rebuilds, web, settings):
    admin_client.post(ADD_URL, {"url": f"{web}/manual.html"})
    before = snapshot()
    again = admin_client.post(ADD_URL, {"url": f"{web}/manual.html"})
    assert again.status_code == 422 and f"{web}/manual.html is already a source." in page_of(again)
    settings.KNOWLEDGE_SOURCE_URLS = [f"{web}/crane.md"]
    configured_url = admin_client.post(ADD_URL, {"url": f"{web}/crane.md"})
    assert configured_url.status_code == 422 and "from the configuration (KNOWLEDGE_SOURCE_URLS)" in page_of(configured_url)
    assert snapshot() == before


@pytest.mark.parametrize(
    "form, message",
    [
        ({}, "Give one of: a file, a URL or a folder."),
        ({"url": "http://127.0.0.1:9/a", "folder": "/tmp"}, "Give one of: a file, a URL or a folder."),
        ({"url": "ftp://example.org/a.md"}, "is not an http(s) URL."),
        ({"folder": "/no/such/folder"}, "/no/such/folder is not a folder on the server."),
        ({"folder": "CONFIGURED"}, "is already a source, from the configuration (KNOWLEDGE_SOURCE_DIRS)."),
        ({"folder": "EMPTY"}, "has no readable .htm, .html, .markdown, .md, .rst, .txt files."),
    ],
    ids=["nothing", "two", "not-http", "missing-folder", "configured-folder", "empty-folder"],
)
def test_other_bad_additions_are_refused(admin_client, configured, inline_rebuilds, tmp_path, form, message):
    (tmp_path / "empty").mkdir()
    form = {k: {"CONFIGURED": str(configured), "EMPTY": str(tmp_path / "empty")}.get(v, v) for k, v in form.items()}
    before = snapshot()
    response = admin_client.post(ADD_URL, form)
    assert response.status_code == 422 and message in page_of(response)
    assert snapshot() == before and inline_rebuilds == []


def test_only_a_superuser_may_add_a_folder(configured, inline_rebuilds, tmp_path):
    staff = get_user_model().objects.create_user("staff", password="pw-xxxxxxxx", is_staff=True)
    from django.contrib.auth.models import Permission

    staff.user_permissions.add(*Permission.objects.filter(codename__in=["add_addedsource", "view_addedsource"]))
    client = Client()
    client.force_login(staff)
    folder = write_sources(tmp_path / "ops", {"a.md": "# A\n\nAlpha.\n"})
    before = snapshot()
    response = client.post(ADD_URL, {"folder": str(folder)})
    assert response.status_code == 422 and "Only a superuser can add a folder of the server." in page_of(response)
    assert snapshot() == before


# ---------------------------------------------------------------------------- disabling and removing


def run_action(client, action: str, source: AddedSource, **extra):
    return client.post(LIST_URL, {"action": action, "_selected_action": [source.pk], **extra}, follow=True)


def test_disabling_withdraws_the_pages_at_once_and_enabling_indexes_them_again(admin_client, configured, inline_rebuilds):
    upload(admin_client, "crane.md", ZORBLAX.encode())
    added = AddedSource.objects.get()
    index_before = selectors.current_index()

    html = page_of(run_action(admin_client, "disable_selected", added))
    assert "Disabled 1 source; the index no longer lists it." in html
    added.refresh_from_db()
    assert added.enabled is False and not KnowledgeSource.objects.filter(origin=added).exists()
    index = selectors.current_index()
    assert index.pk != index_before.pk and "crane.md" not in index.text and "guide/intro.md" in index.text
    assert KnowledgeSource.objects.filter(source_id="guide/intro.md").exists()

    services.run_rebuild_job(job_id=services.request_rebuild(via="command").pk)  # a rebuild leaves it out too
    assert not KnowledgeSource.objects.filter(origin=added).exists()

    html = page_of(run_action(admin_client, "enable_selected", added))
    assert "Enabled 1 source." in html
    assert KnowledgeSource.objects.get(origin=added).source_id == "uploads/crane.md"
    assert "uploads/crane.md" in selectors.current_index().text


def test_removing_deletes_the_source_and_its_pages_and_leaves_configured_ones(admin_client, configured, inline_rebuilds, tmp_path):
    upload(admin_client, "crane.md", ZORBLAX.encode())
    added = AddedSource.objects.get()
    confirm = run_action(admin_client, "delete_selected", added)
    assert "Are you sure" in page_of(confirm)
    html = page_of(run_action(admin_client, "delete_selected", added, post="yes"))
    assert "Successfully deleted 1 added source." in html
    assert not AddedSource.objects.exists() and not KnowledgeSource.objects.filter(source_id="uploads/crane.md").exists()
    assert "crane.md" not in selectors.current_index().text
    assert list(KnowledgeSource.objects.values_list("source_id", flat=True)) == ["guide/intro.md"]


def test_a_source_disabled_while_a_rebuild_runs_does_not_come_back(root, configured):
    added = services.add_uploaded_source(user=root, name="crane.md", data=ZORBLAX.encode())

    async def summarizer(*, source_id, text, timeout_seconds):
        if source_id == "uploads/crane.md":  # the admin disables it while its summary is written
            await sync_to_async(services.set_added_sources_enabled)(user=root, source_ids=[added.pk], enabled=False)
        return summary_for(source_id)

    services.rebuild_kb_index(summarizer=summarizer)
    assert not KnowledgeSource.objects.filter(source_id="uploads/crane.md").exists()
    assert "crane.md" not in selectors.current_index().text


# ---------------------------------------------------------------------------- answers


@pytest.mark.django_db(transaction=True)
def test_answers_cite_an_added_source_and_stop_at_once_when_it_is_disabled_or_removed(admin_client, configured):
    upload(admin_client, "crane.md", ZORBLAX.encode())
    wait_until(lambda: RebuildJob.objects.filter(status="succeeded").exists(), what="the rebuild to finish")
    added = AddedSource.objects.get()

    result = ask("What does the zorblax dial set?")
    assert result.should_reply is True, result.debug
    assert [c.source_id for c in result.citations] == ["uploads/crane.md"] and "harbour crane" in result.reply_text

    run_action(admin_client, "disable_selected", added)
    result = ask("What does the zorblax dial set?")
    assert "uploads/crane.md" not in [c.source_id for c in result.citations] and "harbour crane" not in (result.reply_text or "")

    run_action(admin_client, "enable_selected", added)
    wait_until(lambda: KnowledgeSource.objects.filter(origin=added).exists(), what="the source to be indexed again")
    assert [c.source_id for c in ask("What does the zorblax dial set?").citations] == ["uploads/crane.md"]

    run_action(admin_client, "delete_selected", added, post="yes")
    result = ask("What does the zorblax dial set?")
    assert "uploads/crane.md" not in [c.source_id for c in result.citations] and "harbour crane" not in (result.reply_text or "")


def test_a_source_added_while_a_rebuild_runs_waits_for_the_next_one(admin_client, configured, inline_rebuilds):
    running = services.request_rebuild(via="command")
    html = page_of(upload(admin_client, "crane.md", ZORBLAX.encode()))
    assert "Added “crane.md” (uploaded file)." in html
    assert f"already queued (#{running.pk})" in html and "the new source is indexed by the next rebuild" in html
    assert AddedSource.objects.get().location == "crane.md" and inline_rebuilds == []
    assert not KnowledgeSource.objects.filter(source_id="uploads/crane.md").exists()


def test_an_added_source_page_is_read_only(admin_client, configured, inline_rebuilds):
    upload(admin_client, "crane.md", ZORBLAX.encode())
    added = AddedSource.objects.get()
    page = admin_client.get(f"/admin/knowledge/addedsource/{added.pk}/change/")
    assert page.status_code == 200 and 'name="_save"' not in page.content.decode()
    assert admin_client.post(f"/admin/knowledge/addedsource/{added.pk}/change/", {"location": "x.md"}).status_code == 403
    assert AddedSource.objects.get().location == "crane.md"
