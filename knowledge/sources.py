"""Reading folders, URLs and uploaded files into source documents. No database access."""

from __future__ import annotations

import concurrent.futures
import io
import urllib.error
import urllib.request
from dataclasses import dataclass
from pathlib import Path, PurePosixPath
from urllib.parse import urlsplit

from knowledge.models import KnowledgeSource, content_hash
from knowledge.text import html_to_text, title_of
from project.errors import Rejected

EXTENSIONS = {".md": "markdown", ".markdown": "markdown", ".txt": "text", ".rst": "rst", ".html": "html", ".htm": "html"}
USER_AGENT = "Clarion-knowledge-base/0.1 (+rebuild_kb_index)"


class SourceFolderMissing(Exception):
    """A configured folder does not exist: a configuration error, so the whole rebuild stops."""


class SourceRejected(Rejected):
    """A source an admin tried to add that cannot be used; nothing was written."""


@dataclass(frozen=True)
class SourceDocument:
    source_id: str
    title: str
    kind: str
    content: str
    content_hash: str
    origin: int | None = None  # the AddedSource it comes from; None: from the configuration


@dataclass(frozen=True)
class SourceFailure:
    source_id: str
    error: str


def document(*, source_id: str, raw: str, kind: str, fallback_title: str) -> SourceDocument:
    text = raw.replace("\r\n", "\n").replace("\r", "\n")
    title = ""
    if kind == KnowledgeSource.Kind.HTML:
        title, text = html_to_text(text)
    text = text.strip() + "\n"
    title = title or title_of(text, kind=kind, fallback=fallback_title)
    return SourceDocument(source_id=source_id, title=title[:300], kind=kind, content=text, content_hash=content_hash(text))


# Uploads only: a PDF's text is extracted once, when it is added, and stored as plain text.
UPLOAD_EXTENSIONS = {**EXTENSIONS, ".pdf": "text"}


def read_upload(*, name: str, data: bytes, max_bytes: int) -> tuple[str, SourceDocument]:
    """An uploaded file's text to store and its source document, or SourceRejected saying why
    it cannot be a source."""
    suffix = PurePosixPath(name).suffix.lower()
    if suffix not in UPLOAD_EXTENSIONS:
        raise SourceRejected(f"“{name}” cannot be added: only {', '.join(sorted(UPLOAD_EXTENSIONS))} files are read.")
    if len(data) > max_bytes:
        raise SourceRejected(f"“{name}” is larger than {max_bytes:,} bytes (KNOWLEDGE_MAX_SOURCE_BYTES).")
    if suffix == ".pdf":
        raw = pdf_text(name=name, data=data)
    else:
        try:
            if b"\x00" in data:
                raise UnicodeError("NUL byte")
            raw = data.decode("utf-8")
        except UnicodeError:
            raise SourceRejected(f"“{name}” is not readable text: it is a binary file or not encoded as UTF-8.") from None
    doc = document(source_id=f"uploads/{name}", raw=raw, kind=UPLOAD_EXTENSIONS[suffix], fallback_title=PurePosixPath(name).stem)
    return raw, with_text(doc, what=f"“{name}”")


def pdf_text(*, name: str, data: bytes) -> str:
    """The text of a PDF's pages, a blank line between pages ("" for a scan without a text layer)."""
    from pypdf import PdfReader

    try:
        reader = PdfReader(io.BytesIO(data))
        if reader.is_encrypted:
            raise SourceRejected(f"“{name}” is an encrypted PDF; upload a copy without a password.")
        pages = [(page.extract_text() or "").strip() for page in reader.pages]
    except SourceRejected:
        raise
    except Exception:  # a malformed PDF can fail anywhere in the parser: it is this file's fault
        raise SourceRejected(f"“{name}” could not be read as a PDF.") from None
    return "\n\n".join(page for page in pages if page)


def with_text(doc: SourceDocument, *, what: str) -> SourceDocument:
    if not doc.content.strip():
        raise SourceRejected(f"{what} has no text to index.")
    return doc


def read_folders(dirs: list[Path], *, base_dir: Path, max_bytes: int) -> tuple[list[SourceDocument], list[SourceFailure]]:
    documents: list[SourceDocument] = []
    failures: list[SourceFailure] = []
    for folder in dirs:
        folder = Path(folder)
        if not folder.is_dir():
            raise SourceFolderMissing(f"Knowledge source folder {folder} does not exist (KNOWLEDGE_SOURCE_DIRS).")
        for path in sorted(p for p in folder.rglob("*") if p.is_file() and p.suffix.lower() in EXTENSIONS):
            if any(part.startswith(".") for part in path.relative_to(folder).parts):
                continue  # editor swap files, .git and the like
            source_id = _relative_id(path, folder, base_dir)
            try:
                if path.stat().st_size > max_bytes:
                    raise ValueError(f"larger than {max_bytes} bytes (KNOWLEDGE_MAX_SOURCE_BYTES)")
                raw = path.read_text(encoding="utf-8")
            except (OSError, UnicodeDecodeError, ValueError) as exc:
                failures.append(SourceFailure(source_id, f"could not read the file: {exc}"))
                continue
            documents.append(document(source_id=source_id, raw=raw, kind=EXTENSIONS[path.suffix.lower()], fallback_title=path.stem))
    return unique_documents(documents), failures


def _relative_id(path: Path, folder: Path, base_dir: Path) -> str:
    resolved = path.resolve()
    try:
        return PurePosixPath(resolved.relative_to(base_dir.resolve())).as_posix()
    except ValueError:
        # Outside the project: the folder's own name keeps ids readable and distinct.
        return PurePosixPath(folder.resolve().name, *path.relative_to(folder).parts).as_posix()


def unique_documents(documents: list[SourceDocument]) -> list[SourceDocument]:
    # Overlapping folders list a file twice; the first wins.
    seen: dict[str, SourceDocument] = {}
    for doc in documents:
        seen.setdefault(doc.source_id, doc)
    return list(seen.values())


def fetch_urls(urls: list[str], *, timeout: float, max_bytes: int, workers: int = 4) -> tuple[list[SourceDocument], list[SourceFailure]]:
    urls = list(dict.fromkeys(u.strip() for u in urls if u.strip()))
    if not urls:
        return [], []
    documents: list[SourceDocument] = []
    failures: list[SourceFailure] = []
    with concurrent.futures.ThreadPoolExecutor(max_workers=max(1, workers)) as pool:
        futures = {url: pool.submit(fetch_url, url, timeout=timeout, max_bytes=max_bytes) for url in urls}
        for url, future in futures.items():
            try:
                documents.append(future.result())
            except Exception as exc:  # every failure is this URL's, reported and retried next run
                failures.append(SourceFailure(url, f"could not fetch the URL: {exc}"))
    return documents, failures


def fetch_url(url: str, *, timeout: float, max_bytes: int) -> SourceDocument:
    parts = urlsplit(url)
    if parts.scheme not in ("http", "https") or not parts.netloc:
        raise ValueError("only http(s) URLs are supported")
    request = urllib.request.Request(url, headers={"User-Agent": USER_AGENT, "Accept": "text/html, text/markdown, text/plain;q=0.9"})
    with urllib.request.urlopen(request, timeout=timeout) as response:
        body = response.read(max_bytes + 1)
        if len(body) > max_bytes:
            raise ValueError(f"larger than {max_bytes} bytes (KNOWLEDGE_MAX_SOURCE_BYTES)")
        content_type = response.headers.get_content_type()
        charset = response.headers.get_content_charset() or "utf-8"
    kind = _kind_for(content_type, parts.path)
    raw = body.decode(charset, errors="replace")
    fallback = PurePosixPath(parts.path).stem or parts.netloc
    return document(source_id=url, raw=raw, kind=kind, fallback_title=fallback)


def _kind_for(content_type: str, path: str) -> str:
    suffix = PurePosixPath(path).suffix.lower()
    if content_type in ("text/html", "application/xhtml+xml"):
        return KnowledgeSource.Kind.HTML
    if content_type in ("text/markdown", "text/x-markdown") or suffix in (".md", ".markdown"):
        return KnowledgeSource.Kind.MARKDOWN
    if suffix == ".rst" or content_type == "text/x-rst":
        return KnowledgeSource.Kind.RST
    if content_type.startswith("text/"):
        return KnowledgeSource.Kind.TEXT
    raise ValueError(f"unsupported content type {content_type}")
