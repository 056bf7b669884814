"""/metrics in prometheus-client's multiprocess mode: two real Daphne workers sharing one
PROMETHEUS_MULTIPROC_DIR each report the totals of both, not their own share."""

from __future__ import annotations

import http.client
import json
import os
import subprocess
import sys

import pytest
from prometheus_client.parser import text_string_to_metric_families

from knowledge import services
from tests.e2e.conftest import ROOT, DaphneServer

pytestmark = pytest.mark.django_db(transaction=True)

BODY = {
    "conversation": {
        "messages": [{"role": "user", "text": "How do I connect my own model?", "timestamp": "2026-01-02T03:04:05Z", "author_id": "42"}]
    },
    "context": {"platform": "discord", "guild_id": "g", "channel_id": "c", "thread_id": None, "message_id": "m"},
}
SCRAPE_TOKEN = "scrape-both-workers"


def request(server: DaphneServer, method: str, path: str, *, token: str, body: dict | None = None) -> tuple[int, str]:
    conn = http.client.HTTPConnection("127.0.0.1", server.port, timeout=60)
    try:
        headers = {"Authorization": f"Bearer {token}", "Content-Type": "application/json"}
        conn.request(method, path, body=json.dumps(body) if body is not None else None, headers=headers)
        response = conn.getresponse()
        return response.status, response.read().decode()
    finally:
        conn.close()


def requests_total(server: DaphneServer) -> float:
    status, text = request(server, "GET", "/metrics", token=SCRAPE_TOKEN)
    assert status == 200, text
    (family,) = [f for f in text_string_to_metric_families(text) if f.name == "ai_requests"]
    return sum(s.value for s in family.samples if s.name == "ai_requests_total")


@pytest.fixture
def two_workers(tmp_path, transactional_db, django_db_setup):
    from django.db import connection

    shared = tmp_path / "prometheus"
    shared.mkdir()
    env = {
        "PROMETHEUS_MULTIPROC_DIR": str(shared),
        "METRICS_TOKEN": SCRAPE_TOKEN,
        "LLM_BASE_URL": "",  # the offline engine: no model needed to count requests
        "LLM_API_KEY": "",
        "LOG_LEVEL": "WARNING",
    }
    (ROOT / ".data").mkdir(exist_ok=True)
    servers = [DaphneServer(database_name=connection.settings_dict["NAME"], extra_env=env) for _ in range(2)]
    try:
        for server in servers:
            server.start()
        yield servers
    finally:
        for server in servers:
            if server.proc is not None:
                server.stop()


def test_each_worker_reports_the_total_of_both(two_workers) -> None:
    a, b = two_workers
    _, raw_token = services.create_adapter_token(name="metrics-test")
    for server, times in ((a, 2), (b, 3)):
        for _ in range(times):
            status, text = request(server, "POST", "/api/v1/reply", token=raw_token, body=BODY)
            assert status == 200, text

    assert requests_total(a) == 5
    assert requests_total(b) == 5
    # Histograms are summed the same way.
    _, text = request(b, "GET", "/metrics", token=SCRAPE_TOKEN)
    (selected,) = [f for f in text_string_to_metric_families(text) if f.name == "ai_selected_sources"]
    assert [s.value for s in selected.samples if s.name == "ai_selected_sources_count"] == [5]


def test_manage_up_chooses_a_fresh_directory_per_run(tmp_path) -> None:
    data = tmp_path / "data"
    stale = data / "metrics" / "run-999999999"  # a run whose process is gone
    stale.mkdir(parents=True)
    (stale / "counter_1.db").write_bytes(b"old")
    script = (
        "import os\n"
        "from project.bootstrap import use_per_run_metrics_dir\n"
        "run = use_per_run_metrics_dir()\n"
        "assert os.environ['PROMETHEUS_MULTIPROC_DIR'] == str(run) and run.is_dir() and not any(run.iterdir())\n"
        "print(run)\n"
    )
    env = {k: v for k, v in os.environ.items() if k != "PROMETHEUS_MULTIPROC_DIR"}
    proc = subprocess.run(
        [sys.executable, "-c", script], cwd=ROOT, env={**env, "CLARION_DATA_DIR": str(data)}, capture_output=True, text=True, timeout=60
    )
    assert proc.returncode == 0, proc.stderr
    run_dir = proc.stdout.strip()
    assert run_dir.startswith(str(data / "metrics" / "run-"))
    assert not stale.exists()  # the dead run's files are gone
    assert not os.path.exists(run_dir)  # and this run's directory went with its process

    # A configured directory is the operator's: kept as it is.
    keep = "import os\nfrom project.bootstrap import use_per_run_metrics_dir\nprint(use_per_run_metrics_dir(), os.environ['PROMETHEUS_MULTIPROC_DIR'])\n"
    proc = subprocess.run(
        [sys.executable, "-c", keep], cwd=ROOT, env={**env, "CLARION_DATA_DIR": str(data), "PROMETHEUS_MULTIPROC_DIR": str(tmp_path)},
        capture_output=True, text=True, timeout=60,
    )  # fmt: skip
    assert proc.stdout.split() == ["None", str(tmp_path)], proc.stderr
