#!/usr/bin/env python
"""Latency benchmark of the workspace read tools (workspace/selectors.py) at production-like size.

    DATABASE_NAME=clarion_bench .venv/bin/python bench/query_tools.py \
        [--users 10] [--rows-per-user 100000] [--repeat 200]

Loads USERS x ROWS_PER_USER tasks and as many notes (default 1M + 1M) into a dedicated database
with set-based SQL, unless that exact data set is already there, then times the real selectors for
one "acting user" and prints a Markdown table. Queries whose p99 misses the target get an
EXPLAIN (ANALYZE, BUFFERS) of every SQL statement the selector ran.

Only rows owned by `bench_user_*` users are ever written or removed, and the script refuses to run
against a database whose name does not contain "bench" (override: --force-database).
"""

from __future__ import annotations

import argparse
import gc
import math
import os
import statistics
import sys
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Callable

ROOT = Path(__file__).resolve().parent.parent
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))

os.environ.setdefault("DJANGO_SETTINGS_MODULE", "project.settings")
os.environ.setdefault("SECRET_KEY", "bench")
os.environ.setdefault("DATABASE_NAME", "clarion_bench")

TARGET_P99_MS = 50.0
PROJECTS_PER_USER = 20
USER_PREFIX = "bench_user_"
SEED = 0.42

# --- Vocabulary. No word contains "design" or "launch": those two are planted at a known rate. ---
TASK_VERBS = (
    "Review Update Fix Write Draft Prepare Plan Schedule Test Refactor Document Migrate Deploy Audit "
    "Clean Check Finish Start Ship Merge Sync Call Email Book Order Research Compare Measure Tune Verify"
).split()
TASK_ADJECTIVES = (
    "new old quarterly weekly monthly internal external mobile desktop backend frontend legacy shared "
    "public private urgent billing customer partner onboarding release security payment search admin"
).split()
TASK_NOUNS = (
    "report budget invoice contract roadmap dashboard api schema database server pipeline backlog "
    "meeting agenda proposal survey newsletter website homepage checkout signup login profile "
    "settings export import backup cache queue worker cron metrics alerts logs tests docs readme "
    "changelog ticket bug feature sprint retro demo workshop interview hiring offer policy"
).split()
TASK_AREAS = (
    "team client board finance marketing sales support ops engineering product legal hr q1 q2 q3 q4 europe asia emea apac"
).split()
NOTE_TOPICS = (
    "Meeting Ideas Research Retro Standup Planning Notes Summary Draft Feedback Interview Journal "
    "Reading Brainstorm Followup Recap Decisions Questions Todo Outline"
).split()
SENTENCE_WORDS = (
    "the a we our team should will need to review plan budget client customer report meeting "
    "next week month quarter update deadline project goal metric revenue growth risk issue bug "
    "feature release roadmap sprint backlog priority owner decision question answer idea feedback "
    "survey user interview research market competitor price cost contract partner vendor support "
    "ticket email call agenda summary action item follow up share document draft final version "
    "server database api cache latency performance security audit compliance policy hiring "
    "onboarding training workshop demo presentation slide chart dashboard data analysis trend "
    "forecast estimate scope requirement milestone dependency blocker progress status done pending "
    "approve reject discuss agree schedule move cancel confirm check test measure improve reduce "
    "increase simple clear quick careful early late better"
).split()
PLANTED_TASK_WORD = "design"
PLANTED_NOTE_WORD = "launch"
TASK_PLANT_RATE = 0.015  # share of task titles that contain "design"
SENTENCES = 20_000
SENTENCE_PLANT_RATE = 0.005  # notes have ~3 sentences -> ~1.5% of notes mention "launch"

for _word in TASK_VERBS + TASK_ADJECTIVES + TASK_NOUNS + TASK_AREAS + NOTE_TOPICS + SENTENCE_WORDS:
    assert PLANTED_TASK_WORD not in _word.lower() and PLANTED_NOTE_WORD not in _word.lower(), _word


def parse_args(argv=None) -> argparse.Namespace:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--users", type=int, default=10, help="number of users (the first is the acting user)")
    p.add_argument("--rows-per-user", type=int, default=100_000, help="tasks per user, and notes per user")
    p.add_argument("--repeat", type=int, default=200, help="timed calls per query")
    p.add_argument("--warmup", type=int, default=5, help="untimed calls per query before timing")
    p.add_argument("--reload", action="store_true", help="reload the data even if it is already there")
    p.add_argument("--explain-all", action="store_true", help="EXPLAIN every query, not only the slow ones")
    p.add_argument("--force-database", action="store_true", help="allow a database whose name lacks 'bench'")
    p.add_argument(
        "--gc",
        choices=("on", "freeze"),
        default="on",
        help="'on' (default): Python's cyclic GC as in a plain server process; 'freeze': gc.freeze() the heap "
        "after setup, as a server could after startup, so full collections only scan objects made later",
    )
    args = p.parse_args(argv)
    if args.users < 1 or args.rows_per_user < 1 or args.repeat < 1:
        p.error("--users, --rows-per-user and --repeat must be positive")
    return args


# ----------------------------------------------------------------------------------------- setup


def setup_django(*, force_database: bool) -> None:
    import django
    from django.conf import settings

    ensure_database()
    name = settings.DATABASES["default"]["NAME"]
    if "bench" not in name and not force_database:
        sys.exit(f"bench: refusing to load benchmark data into database {name!r}; set DATABASE_NAME=clarion_bench")
    django.setup()
    from django.core.management import call_command

    t0 = time.perf_counter()
    call_command("migrate", verbosity=0, interactive=False)
    print(f"database {name!r}: migrated in {time.perf_counter() - t0:.1f} s")


def ensure_database() -> None:
    """The settings' database server started (if it is the embedded one), and the database
    created if missing: the embedded-Postgres settings only create the default name, and a
    DATABASE_URL server may lack it too."""
    import psycopg
    from django.conf import settings
    from psycopg import sql

    from project.embedded_pg import resolve_address

    db = settings.DATABASES["default"]
    resolve_address(db)

    params = {
        "host": db.get("HOST") or None,
        "port": db.get("PORT") or None,
        "user": db.get("USER") or None,
        "password": db.get("PASSWORD") or None,
        "dbname": "postgres",
        "autocommit": True,
    }
    try:
        with psycopg.connect(**{k: v for k, v in params.items() if v is not None}) as conn:
            if not conn.execute("SELECT 1 FROM pg_database WHERE datname = %s", [db["NAME"]]).fetchone():
                conn.execute(sql.SQL("CREATE DATABASE {}").format(sql.Identifier(db["NAME"])))
                print(f"created database {db['NAME']!r}")
    except psycopg.errors.DuplicateDatabase:
        pass
    except psycopg.Error as exc:  # no rights on "postgres": let migrate report the real problem
        print(f"bench: could not check/create database {db['NAME']!r}: {str(exc).strip().splitlines()[0]}")


# ------------------------------------------------------------------------------------------ data


def usernames(n: int) -> list[str]:
    width = max(2, len(str(n - 1)))
    return [f"{USER_PREFIX}{i:0{width}d}" for i in range(n)]


def data_present(*, users: int, rows: int) -> bool:
    from django.contrib.auth import get_user_model
    from django.db import connection

    from workspace.models import Note, Project, Task

    User = get_user_model()
    wanted = usernames(users)
    existing = dict(User.objects.filter(username__startswith=USER_PREFIX).values_list("username", "id"))
    if set(existing) != set(wanted):
        return False
    ids = list(existing.values())
    with connection.cursor() as cur:
        for model, per_user in ((Task, rows), (Note, rows), (Project, PROJECTS_PER_USER)):
            cur.execute(
                f"SELECT count(*), count(DISTINCT owner_id), min(n), max(n) FROM ("
                f"  SELECT owner_id, count(*) AS n FROM {model._meta.db_table}"
                f"  WHERE owner_id = ANY(%s) GROUP BY owner_id) s",
                [ids],
            )
            _, owners, lo, hi = cur.fetchone()
            if owners != users or lo != per_user or hi != per_user:
                return False
    return True


def _secondary_indexes(cur, table: str) -> list[tuple[str, str]]:
    """(name, CREATE INDEX statement) of every index on `table` that does not back a constraint."""
    cur.execute(
        """
        SELECT i.relname, pg_get_indexdef(i.oid)
        FROM pg_index x JOIN pg_class i ON i.oid = x.indexrelid
        WHERE x.indrelid = %s::regclass
          AND NOT EXISTS (SELECT 1 FROM pg_constraint c WHERE c.conindid = i.oid)
        ORDER BY i.relname
        """,
        [table],
    )
    return list(cur.fetchall())


def load_data(*, users: int, rows: int) -> None:
    from django.contrib.auth import get_user_model
    from django.db import connection, transaction

    from workspace.models import Note, Project, Task

    User = get_user_model()
    task_t, note_t, proj_t = Task._meta.db_table, Note._meta.db_table, Project._meta.db_table
    total = users * rows
    print(f"loading {users} users x {rows:,} tasks + {rows:,} notes ({total:,} + {total:,} rows) ...", flush=True)
    t_all = time.perf_counter()

    def step(label: str, sql: str, params=None) -> None:
        t = time.perf_counter()
        cur.execute(sql, params)
        n = cur.rowcount
        print(f"  {label:<44} {time.perf_counter() - t:6.1f} s" + (f"  ({n:,} rows)" if n and n > 0 else ""), flush=True)

    with transaction.atomic(), connection.cursor() as cur:
        # One transaction: a crash rolls back the index drops as well as the rows.
        cur.execute("SET LOCAL maintenance_work_mem = '1GB'")
        cur.execute("SET LOCAL work_mem = '256MB'")
        # Skip per-row FK triggers; every id below comes from a join on rows inserted here.
        cur.execute("SET LOCAL session_replication_role = replica")

        # 1. Remove earlier bench rows (TRUNCATE when the tables hold nothing else).
        old_ids = list(User.objects.filter(username__startswith=USER_PREFIX).values_list("id", flat=True))
        cur.execute(
            f"SELECT (SELECT count(*) FROM {task_t} WHERE owner_id <> ALL(%s))"
            f"     + (SELECT count(*) FROM {note_t} WHERE owner_id <> ALL(%s))"
            f"     + (SELECT count(*) FROM {proj_t} WHERE owner_id <> ALL(%s))",
            [old_ids] * 3,
        )
        if cur.fetchone()[0] == 0:
            step("truncate workspace tables", f"TRUNCATE {task_t}, {note_t}, {proj_t}")
        else:
            for t in (task_t, note_t, proj_t):
                step(f"delete bench rows from {t}", f"DELETE FROM {t} WHERE owner_id = ANY(%s)", [old_ids])
        User.objects.filter(username__startswith=USER_PREFIX).exclude(username__in=usernames(users)).delete()
        for name in usernames(users):
            User.objects.get_or_create(username=name, defaults={"password": "!bench-unusable"})
        user_ids = [User.objects.get(username=name).id for name in usernames(users)]

        # 2. Drop secondary indexes; rebuilt in bulk below (much faster than maintaining them row by row).
        indexes = {t: _secondary_indexes(cur, t) for t in (task_t, note_t)}
        for idx in indexes.values():
            for name, _ in idx:
                cur.execute(f'DROP INDEX "{name}"')

        cur.execute("SELECT setseed(%s)", [SEED])
        cur.execute(
            "CREATE TEMP TABLE bench_users ON COMMIT DROP AS "
            "SELECT (ord - 1)::int AS uidx, uid AS user_id FROM unnest(%s::bigint[]) WITH ORDINALITY AS u(uid, ord)",
            [user_ids],
        )
        step(
            "projects",
            f"""
            INSERT INTO {proj_t} (owner_id, name, description, archived, created_at, updated_at)
            SELECT u.user_id, initcap(a.w) || ' ' || initcap(n.w) || ' ' || k, '',
                   k > {PROJECTS_PER_USER - 3}, now() - interval '800 days', now() - interval '1 day'
            FROM bench_users u
            CROSS JOIN generate_series(1, {PROJECTS_PER_USER}) k
            CROSS JOIN LATERAL (SELECT (%(adj)s::text[])[1 + (k * 7 + u.uidx) %% cardinality(%(adj)s::text[])] AS w) a
            CROSS JOIN LATERAL (SELECT (%(noun)s::text[])[1 + (k * 13 + u.uidx) %% cardinality(%(noun)s::text[])] AS w) n
            ORDER BY u.uidx, k
            """,
            {"adj": TASK_ADJECTIVES, "noun": TASK_NOUNS},
        )
        cur.execute(
            f"CREATE TEMP TABLE bench_projects ON COMMIT DROP AS "
            f"SELECT u.uidx, (row_number() OVER (PARTITION BY p.owner_id ORDER BY p.id) - 1)::int AS k, p.id "
            f"FROM {proj_t} p JOIN bench_users u ON u.user_id = p.owner_id"
        )

        # 3. Tasks: users interleaved in time order (as real appends are), one row a minute.
        step(
            "tasks",
            f"""
            INSERT INTO {task_t} (owner_id, project_id, title, description, status, priority, due_date,
                                  created_at, updated_at)
            SELECT u.user_id,
                   CASE WHEN b.r_proj < 0.7 THEN p.id END,
                   v.w || ' ' || CASE WHEN b.r_plant < %(plant)s THEN '{PLANTED_TASK_WORD}' ELSE a.w END
                       || ' ' || n.w || ' for ' || ar.w || ' #' || b.g,
                   '',
                   CASE WHEN b.r_status < 0.4 THEN 'todo' WHEN b.r_status < 0.6 THEN 'in_progress'
                        ELSE 'completed' END,
                   CASE WHEN b.r_prio < 0.25 THEN 'low' WHEN b.r_prio < 0.65 THEN 'medium'
                        WHEN b.r_prio < 0.9 THEN 'high' ELSE 'urgent' END,
                   CASE WHEN b.r_due < 0.4 THEN (b.ts + make_interval(days => (b.r_due * 100)::int))::date END,
                   b.ts,
                   b.ts + make_interval(secs => b.r_upd * 86400 * 5)
            FROM (
                SELECT g, g %% {users} AS uidx,
                       now() - make_interval(mins => {total} - g) AS ts,
                       random() AS r_proj, random() AS r_plant, random() AS r_status, random() AS r_prio,
                       random() AS r_due, random() AS r_upd, floor(random() * {PROJECTS_PER_USER})::int AS k,
                       random() AS r1, random() AS r2, random() AS r3, random() AS r4
                FROM generate_series(0, {total} - 1) g
            ) b
            JOIN bench_users u ON u.uidx = b.uidx
            JOIN bench_projects p ON p.uidx = b.uidx AND p.k = b.k
            CROSS JOIN LATERAL (SELECT (%(verbs)s::text[])[1 + floor(b.r1 * cardinality(%(verbs)s::text[]))::int] AS w) v
            CROSS JOIN LATERAL (SELECT (%(adj)s::text[])[1 + floor(b.r2 * cardinality(%(adj)s::text[]))::int] AS w) a
            CROSS JOIN LATERAL (SELECT (%(noun)s::text[])[1 + floor(b.r3 * cardinality(%(noun)s::text[]))::int] AS w) n
            CROSS JOIN LATERAL (SELECT (%(area)s::text[])[1 + floor(b.r4 * cardinality(%(area)s::text[]))::int] AS w) ar
            ORDER BY b.g
            """,
            {"plant": TASK_PLANT_RATE, "verbs": TASK_VERBS, "adj": TASK_ADJECTIVES, "noun": TASK_NOUNS, "area": TASK_AREAS},
        )

        # 4. Notes: title + 2-4 sentences drawn from a table of generated sentences.
        step(
            "sentence pool",
            f"""
            CREATE TEMP TABLE bench_sentences ON COMMIT DROP AS
            SELECT s AS id,
                   initcap(left(body, 1)) || substr(body, 2) || '.' AS text
            FROM (
                SELECT s,
                       (SELECT string_agg(
                                   CASE WHEN i = 3 AND s %% {round(1 / SENTENCE_PLANT_RATE)} = 7
                                        THEN '{PLANTED_NOTE_WORD}'
                                        ELSE (%(words)s::text[])[1 + floor(random() * cardinality(%(words)s::text[]))::int]
                                   END, ' ' ORDER BY i)
                        FROM generate_series(1, 6 + s %% 6) i) AS body
                FROM generate_series(0, {SENTENCES - 1}) s
            ) x
            """,
            {"words": SENTENCE_WORDS},
        )
        step(
            "notes",
            f"""
            INSERT INTO {note_t} (owner_id, project_id, title, content, created_at, updated_at)
            SELECT u.user_id,
                   CASE WHEN b.r_proj < 0.6 THEN p.id END,
                   t.w || ': ' || n.w || ' ' || ar.w,
                   s1.text || ' ' || s2.text
                       || CASE WHEN b.nsent >= 3 THEN ' ' || s3.text ELSE '' END
                       || CASE WHEN b.nsent >= 4 THEN ' ' || s4.text ELSE '' END,
                   b.ts,
                   least(now(), b.ts + make_interval(secs => b.r_upd * 86400 * 10))
            FROM (
                SELECT g, g %% {users} AS uidx,
                       now() - make_interval(mins => {total} - g) AS ts,
                       random() AS r_proj, random() AS r_upd, floor(random() * {PROJECTS_PER_USER})::int AS k,
                       2 + floor(random() * 3)::int AS nsent,
                       floor(random() * {SENTENCES})::int AS i1, floor(random() * {SENTENCES})::int AS i2,
                       floor(random() * {SENTENCES})::int AS i3, floor(random() * {SENTENCES})::int AS i4,
                       random() AS r1, random() AS r2, random() AS r3
                FROM generate_series(0, {total} - 1) g
            ) b
            JOIN bench_users u ON u.uidx = b.uidx
            JOIN bench_projects p ON p.uidx = b.uidx AND p.k = b.k
            JOIN bench_sentences s1 ON s1.id = b.i1
            JOIN bench_sentences s2 ON s2.id = b.i2
            JOIN bench_sentences s3 ON s3.id = b.i3
            JOIN bench_sentences s4 ON s4.id = b.i4
            CROSS JOIN LATERAL (SELECT (%(topic)s::text[])[1 + floor(b.r1 * cardinality(%(topic)s::text[]))::int] AS w) t
            CROSS JOIN LATERAL (SELECT (%(noun)s::text[])[1 + floor(b.r2 * cardinality(%(noun)s::text[]))::int] AS w) n
            CROSS JOIN LATERAL (SELECT (%(area)s::text[])[1 + floor(b.r3 * cardinality(%(area)s::text[]))::int] AS w) ar
            ORDER BY b.g
            """,
            {"topic": NOTE_TOPICS, "noun": TASK_NOUNS, "area": TASK_AREAS},
        )

        # 5. Rebuild the indexes exactly as they were defined (migrations stay the source of truth).
        for idx in indexes.values():
            for name, ddl in idx:
                step(f"index {name}", ddl)

    # 6. Statistics and visibility map, as autovacuum would leave them after a bulk insert.
    with connection.cursor() as cur:
        for t in (proj_t, task_t, note_t):
            step(f"VACUUM (ANALYZE) {t}", f"VACUUM (ANALYZE) {t}")
    print(f"loaded in {time.perf_counter() - t_all:.1f} s", flush=True)


def describe_data(acting) -> None:
    from django.db import connection

    from workspace.models import Note, Task

    with connection.cursor() as cur:
        cur.execute(
            f"SELECT count(*), count(*) FILTER (WHERE status = 'todo'), count(*) FILTER (WHERE status = 'in_progress'),"
            f" count(*) FILTER (WHERE status = 'completed'), count(project_id),"
            f" count(*) FILTER (WHERE upper(title) LIKE '%%{PLANTED_TASK_WORD.upper()}%%')"
            f" FROM {Task._meta.db_table} WHERE owner_id = %s",
            [acting.id],
        )
        n, todo, prog, done, with_proj, plant = cur.fetchone()
        print(
            f"acting user {acting.username}: {n:,} tasks (todo {todo / n:.0%}, in_progress {prog / n:.0%}, "
            f"completed {done / n:.0%}; {with_proj / n:.0%} in a project; '{PLANTED_TASK_WORD}' in {plant / n:.2%})"
        )
        cur.execute(
            f"SELECT count(*), count(project_id),"
            f" count(*) FILTER (WHERE to_tsvector('english', title || ' ' || content) @@ websearch_to_tsquery('english', %s))"
            f" FROM {Note._meta.db_table} WHERE owner_id = %s",
            [PLANTED_NOTE_WORD, acting.id],
        )
        n, with_proj, plant = cur.fetchone()
        print(f"  {n:,} notes ({with_proj / n:.0%} in a project; '{PLANTED_NOTE_WORD}' in {plant / n:.2%})")
        cur.execute(
            "SELECT relname, pg_size_pretty(pg_total_relation_size(oid)) FROM pg_class WHERE relname IN (%s, %s) ORDER BY relname",
            [Task._meta.db_table, Note._meta.db_table],
        )
        print("  table sizes (with indexes): " + ", ".join(f"{r} {s}" for r, s in cur.fetchall()))


# ---------------------------------------------------------------------------------------- timing


@dataclass
class Result:
    label: str
    returned: int
    total: int
    p50: float
    p99: float
    max: float
    sql: list[str]
    sql_p50: float  # summed time of the statements of one call, inside cursor.execute
    sql_p99: float
    full_gcs: int  # generation-2 collections that ran during the timed calls
    full_gc_ms: float

    @property
    def missed(self) -> bool:
        return self.p99 >= TARGET_P99_MS


def percentile(sorted_values: list[float], q: float) -> float:
    """Nearest-rank percentile."""
    return sorted_values[max(0, math.ceil(q * len(sorted_values)) - 1)]


def measure(label: str, call: Callable, *, repeat: int, warmup: int) -> Result:
    from django.db import connection
    from django.test.utils import CaptureQueriesContext

    for _ in range(warmup):
        page = call()
        list(page.items)
    with CaptureQueriesContext(connection) as ctx:
        page = call()
    sql = [q["sql"] for q in ctx.captured_queries]

    sql_ms: list[float] = []

    def time_sql(execute, sql, params, many, context):
        t = time.perf_counter()
        try:
            return execute(sql, params, many, context)
        finally:
            sql_ms.append((time.perf_counter() - t) * 1000)

    full_gc: list[float] = []
    gc_start = [0.0]

    def on_gc(phase, info):
        if info["generation"] == 2:
            if phase == "start":
                gc_start[0] = time.perf_counter()
            else:
                full_gc.append((time.perf_counter() - gc_start[0]) * 1000)

    samples, sql_samples = [], []
    gc.callbacks.append(on_gc)
    try:
        with connection.execute_wrapper(time_sql):
            for _ in range(repeat):
                sql_ms.clear()
                t = time.perf_counter()
                page = call()
                items = list(page.items)
                for item in items:  # touch the select_related project, as a renderer would
                    _ = item.project
                samples.append((time.perf_counter() - t) * 1000)
                sql_samples.append(sum(sql_ms))
    finally:
        gc.callbacks.remove(on_gc)
    samples.sort()
    sql_samples.sort()
    return Result(
        label,
        len(page.items),
        page.total,
        statistics.median(samples),
        percentile(samples, 0.99),
        samples[-1],
        sql,
        statistics.median(sql_samples),
        percentile(sql_samples, 0.99),
        len(full_gc),
        sum(full_gc),
    )


def explain(result: Result) -> None:
    from django.db import connection

    print(f"\n### EXPLAIN (ANALYZE, BUFFERS): {result.label}\n")
    for i, sql in enumerate(result.sql, 1):
        print(f"-- statement {i}/{len(result.sql)}:\n{sql}\n")
        with connection.cursor() as cur:
            cur.execute("EXPLAIN (ANALYZE, BUFFERS) " + sql)
            print("\n".join(row[0] for row in cur.fetchall()))
        print()


def run_queries(acting, *, repeat: int, warmup: int) -> list[Result]:
    from workspace.models import Project
    from workspace.selectors import notes_for_user, tasks_for_user

    project = Project.objects.filter(owner=acting).order_by("id").first()
    queries = [
        ('tasks status="in_progress" limit=500', lambda: tasks_for_user(user=acting, status="in_progress", limit=500)),
        ('tasks status="all" limit=500', lambda: tasks_for_user(user=acting, status="all", limit=500)),
        (
            'tasks status="todo" project_id=<project> limit=500',
            lambda: tasks_for_user(user=acting, status="todo", project_id=project.id, limit=500),
        ),
        (f'tasks search="{PLANTED_TASK_WORD}" limit=500', lambda: tasks_for_user(user=acting, search=PLANTED_TASK_WORD, limit=500)),
        (
            f'notes search_term="{PLANTED_NOTE_WORD}" limit=200',
            lambda: notes_for_user(user=acting, search_term=PLANTED_NOTE_WORD, limit=200),
        ),
        ("notes (no filter) limit=200", lambda: notes_for_user(user=acting, limit=200)),
    ]
    results = []
    for label, call in queries:
        r = measure(label, call, repeat=repeat, warmup=warmup)
        print(f"  {label:<52} p50 {r.p50:6.1f} ms  p99 {r.p99:6.1f} ms  max {r.max:6.1f} ms", flush=True)
        results.append(r)
    return results


def markdown_table(results: list[Result]) -> str:
    lines = ["| query | rows returned | total | p50 ms | p99 ms | max ms |", "| --- | ---: | ---: | ---: | ---: | ---: |"]
    for r in results:
        mark = " ❌ (p99 ≥ 50 ms)" if r.missed else ""
        lines.append(f"| `{r.label}`{mark} | {r.returned:,} | {r.total:,} | {r.p50:.1f} | {r.p99:.1f} | {r.max:.1f} |")
    return "\n".join(lines)


def breakdown_table(results: list[Result]) -> str:
    lines = [
        "| query | SQL p50 ms | SQL p99 ms | statements | full GCs during the timed calls | their total ms |",
        "| --- | ---: | ---: | ---: | ---: | ---: |",
    ]
    for r in results:
        lines.append(f"| `{r.label}` | {r.sql_p50:.1f} | {r.sql_p99:.1f} | {len(r.sql)} | {r.full_gcs} | {r.full_gc_ms:.0f} |")
    return "\n".join(lines)


def main(argv=None) -> int:
    args = parse_args(argv)
    setup_django(force_database=args.force_database)
    from django.contrib.auth import get_user_model
    from django.db import connection

    with connection.cursor() as cur:
        cur.execute("SHOW server_version")
        server_version = cur.fetchone()[0]
        print(f"Postgres {server_version}")

    if not args.reload and data_present(users=args.users, rows=args.rows_per_user):
        print(f"data already present: {args.users} users x {args.rows_per_user:,} tasks + notes; not reloading")
    else:
        load_data(users=args.users, rows=args.rows_per_user)

    acting = get_user_model().objects.get(username=usernames(args.users)[0])
    describe_data(acting)
    if args.gc == "freeze":
        gc.collect()
        gc.freeze()
    print(f"python gc: {args.gc} ({len(gc.get_objects()):,} tracked objects, {gc.get_freeze_count():,} frozen)")
    print(f"\ntiming {args.repeat} calls per query ({args.warmup} warm-up calls first) ...")
    load_before = os.getloadavg()[0]
    results = run_queries(acting, repeat=args.repeat, warmup=args.warmup)
    load_after = os.getloadavg()[0]

    print(f"\n## Results ({args.users} users x {args.rows_per_user:,} tasks + notes; target p99 < {TARGET_P99_MS:.0f} ms)\n")
    print(
        f"{time.strftime('%Y-%m-%d')}, {os.cpu_count()} CPUs, Postgres {server_version}, python gc {args.gc}; "
        f"1-min load average {load_before:.2f} before timing, {load_after:.2f} after "
        "(the benchmark itself keeps about 1 busy; more means something else shared the machine)\n"
    )
    print(markdown_table(results))
    print(
        "\nWhere the time goes: SQL = summed time inside cursor.execute for one call (server + transfer); "
        "the rest of a call is the ORM building model instances. A full (generation-2) GC pause lands "
        "inside whichever call triggers it.\n"
    )
    print(breakdown_table(results))
    missed = [r for r in results if r.missed]
    print(f"\n{len(results) - len(missed)}/{len(results)} queries meet the target.")
    for r in results if args.explain_all else missed:
        explain(r)
    return 1 if missed else 0


if __name__ == "__main__":
    sys.exit(main())
