"""Clarion settings. Every knob comes from the environment (or `.env`); `.env.example` lists them."""

from __future__ import annotations

import os
import sys
from datetime import timedelta
from pathlib import Path

import environ

from project.channel_layer import REDIS_POOL_OPTIONS, redis_layer_config
from project.embedded_pg import embedded_database_settings

BASE_DIR = Path(__file__).resolve().parent.parent

env = environ.Env()
environ.Env.read_env(BASE_DIR / ".env", overwrite=False)

DATA_DIR = Path(env("CLARION_DATA_DIR", default=str(BASE_DIR / ".data")))

DEBUG = env.bool("DEBUG", default=False)


def _secret_key() -> str:
    if key := env("SECRET_KEY", default=""):
        return key
    # `manage.py up` writes a per-install key here on first run (see project/bootstrap.py).
    key_file = DATA_DIR / "secret_key"
    if key_file.exists():
        return key_file.read_text().strip()
    if DEBUG:
        return "django-insecure-development-only"
    sys.exit("clarion: SECRET_KEY is required when DEBUG is off (set it in the environment or .env)")


SECRET_KEY = _secret_key()
ALLOWED_HOSTS = env.list("ALLOWED_HOSTS", default=["127.0.0.1", "localhost"])
CSRF_TRUSTED_ORIGINS = env.list("CSRF_TRUSTED_ORIGINS", default=[])

INSTALLED_APPS = [
    "daphne",
    "django.contrib.admin",
    "django.contrib.auth",
    "django.contrib.contenttypes",
    "django.contrib.sessions",
    "django.contrib.messages",
    "django.contrib.staticfiles",
    "django.contrib.postgres",
    "channels",
    "django_htmx",
    "axes",
    "workspace",
    "chat",
    "questions",
    "knowledge",
    "project",  # hosts `manage.py up`
]

MIDDLEWARE = [
    "django.middleware.security.SecurityMiddleware",
    "knowledge.api.JsonErrorsMiddleware",
    "project.security.ContentSecurityPolicyMiddleware",
    "django.contrib.sessions.middleware.SessionMiddleware",
    "django.middleware.common.CommonMiddleware",
    "django.middleware.csrf.CsrfViewMiddleware",
    "django.contrib.auth.middleware.AuthenticationMiddleware",
    "project.middleware.UnavailableMiddleware",
    "django.contrib.auth.middleware.LoginRequiredMiddleware",
    "django.contrib.messages.middleware.MessageMiddleware",
    "django.middleware.clickjacking.XFrameOptionsMiddleware",
    "django_htmx.middleware.HtmxMiddleware",
    "axes.middleware.AxesMiddleware",  # last of those that act, as django-axes requires
    "project.middleware.MiddlewareInOneThread",  # innermost: the chain runs in one thread hop
]

ROOT_URLCONF = "project.urls"
ASGI_APPLICATION = "project.asgi.application"

TEMPLATES = [
    {
        "BACKEND": "django.template.backends.django.DjangoTemplates",
        "DIRS": [BASE_DIR / "templates"],
        "APP_DIRS": True,
        "OPTIONS": {
            "context_processors": [
                "django.template.context_processors.request",
                "django.contrib.auth.context_processors.auth",
                "django.contrib.messages.context_processors.messages",
                "project.theme.theme",
            ],
        },
    },
]

# --- Database: Postgres always. DATABASE_URL wins; otherwise the embedded server in .data/postgres.
# DATABASE_NAME overrides the name from either source: a test starts server processes on the
# test database with it, a benchmark uses its own database (created on the embedded server).
DATABASE_NAME = env("DATABASE_NAME", default="")
if env("DATABASE_URL", default=""):
    DATABASES = {"default": env.db_url("DATABASE_URL")}
    DATABASES["default"]["ENGINE"] = "django.db.backends.postgresql"
    if DATABASE_NAME:
        DATABASES["default"]["NAME"] = DATABASE_NAME
else:
    # Describes the embedded server without starting it: the first connection starts it.
    DATABASES = {"default": embedded_database_settings(DATA_DIR, database=DATABASE_NAME or "clarion")}
# One bounded pool of connections per process — Django's own (psycopg_pool underneath) — shared by
# requests, consumers and background work. Under ASGI every request runs its database work in a
# thread of its own, so a connection kept per thread (CONN_MAX_AGE > 0) would stay open until the
# garbage collector found it; pooled connections go back when each request or hop ends, and a
# burst waits for one (at most DATABASE_POOL_TIMEOUT_SECONDS, then a clear 503) instead of
# exhausting Postgres. The pool tests a connection before lending it (health checks), so
# connections Postgres dropped or lost in a restart are replaced, not handed out.
DATABASE_POOL_MAX_SIZE = env.int("DATABASE_POOL_MAX_SIZE", default=20)
DATABASE_POOL_TIMEOUT_SECONDS = env.float("DATABASE_POOL_TIMEOUT_SECONDS", default=10.0)
DATABASES["default"]["CONN_MAX_AGE"] = 0
DATABASES["default"]["CONN_HEALTH_CHECKS"] = True
DATABASES["default"].setdefault("OPTIONS", {})
DATABASES["default"]["OPTIONS"].setdefault("connect_timeout", 5)
# Each process's connections carry its pid in pg_stat_activity (the turn locks' too).
DATABASES["default"]["OPTIONS"].setdefault("application_name", f"clarion-{os.getpid()}")
DATABASES["default"]["OPTIONS"]["pool"] = {
    "min_size": min(2, DATABASE_POOL_MAX_SIZE),
    "max_size": DATABASE_POOL_MAX_SIZE,
    "timeout": DATABASE_POOL_TIMEOUT_SECONDS,
    "max_idle": 300.0,
    "name": "clarion",
}
DEFAULT_AUTO_FIELD = "django.db.models.BigAutoField"

# --- Channels: one process → in-memory; REDIS_URL → shared groups across Daphne workers.
REDIS_URL = env("REDIS_URL", default="")
CHANNELS_PREFIX = env("CHANNELS_PREFIX", default="clarion")  # Redis keys: the channel layer's and the cache's
if REDIS_URL:
    CHANNEL_LAYERS = {"default": redis_layer_config(REDIS_URL, prefix=CHANNELS_PREFIX)}
else:
    CHANNEL_LAYERS = {"default": {"BACKEND": "project.channel_layer.InProcessChannelLayer"}}

# Sessions are read on every request and every websocket connect: a cache in front of the
# database answers those reads; every write still goes to the database, so a cleared cache loses
# nothing. One process keeps it in its own memory; several workers (REDIS_URL) share it in Redis,
# so that a logout in one worker is a logout in all of them.
SESSION_ENGINE = "django.contrib.sessions.backends.cached_db"
if REDIS_URL:
    CACHES = {
        "default": {
            "BACKEND": "django.core.cache.backends.redis.RedisCache",
            "LOCATION": REDIS_URL,
            "KEY_PREFIX": CHANNELS_PREFIX,
            "OPTIONS": REDIS_POOL_OPTIONS,
        }
    }
else:
    # Django's default of 300 entries would send most session reads back to Postgres once a few
    # hundred people are signed in.
    CACHES = {"default": {"BACKEND": "django.core.cache.backends.locmem.LocMemCache", "OPTIONS": {"MAX_ENTRIES": 10_000}}}

AUTH_PASSWORD_VALIDATORS = [
    {"NAME": "django.contrib.auth.password_validation.UserAttributeSimilarityValidator"},
    {"NAME": "django.contrib.auth.password_validation.MinimumLengthValidator"},
]
# --- Login throttling (django-axes, hooks in project/throttle.py): LOGIN_FAILURE_LIMIT failures for
# one account, or from one client address, lock it out for LOGIN_LOCKOUT_MINUTES — on the login
# page, the admin login and the adapter API's token check. Each attempt while locked out restarts
# the wait; a successful login clears the count.
AUTHENTICATION_BACKENDS = ["axes.backends.AxesStandaloneBackend", "django.contrib.auth.backends.ModelBackend"]
AXES_FAILURE_LIMIT = env.int("LOGIN_FAILURE_LIMIT", default=5)
AXES_COOLOFF_TIME = timedelta(minutes=env.float("LOGIN_LOCKOUT_MINUTES", default=15))
AXES_LOCKOUT_PARAMETERS = "project.throttle.lockout_parameters"
AXES_LOCKOUT_CALLABLE = "project.throttle.lockout_response"
AXES_CLIENT_IP_CALLABLE = "project.throttle.client_address"
AXES_RESET_ON_SUCCESS = True
AXES_SENSITIVE_PARAMETERS = ["username", "ip_address", "token", "access_token", "api_key"]
# Proxies in front of Clarion that append the client's address to X-Forwarded-For. 0: the
# connection's own peer is the client, and X-Forwarded-For (which anyone can send) is ignored.
TRUSTED_PROXY_COUNT = env.int("TRUSTED_PROXY_COUNT", default=0)

LOGIN_URL = "login"
LOGIN_REDIRECT_URL = "chat:home"
LOGOUT_REDIRECT_URL = "login"

LANGUAGE_CODE = "en-us"
TIME_ZONE = env("TIME_ZONE", default="UTC")
USE_I18N = False
USE_TZ = True

STATIC_URL = "/static/"
STATICFILES_DIRS = [BASE_DIR / "static"]
STATIC_ROOT = BASE_DIR / "staticfiles"

# --- Security headers and cookies
SESSION_COOKIE_HTTPONLY = True
SESSION_COOKIE_SAMESITE = "Lax"
CSRF_COOKIE_SAMESITE = "Lax"
X_FRAME_OPTIONS = "DENY"
SECURE_CONTENT_TYPE_NOSNIFF = True
SECURE_REFERRER_POLICY = "same-origin"
SECURE_CROSS_ORIGIN_OPENER_POLICY = "same-origin"
# Only the app's own scripts, styles and images run (project/security.py); nothing inline, no eval.
# 'self' also covers the same-origin websocket (ws:// or wss://) of the chat.
CONTENT_SECURITY_POLICY = {
    "default-src": ["'self'"],
    "script-src": ["'self'"],
    "style-src": ["'self'"],
    "img-src": ["'self'", "data:"],
    "font-src": ["'self'"],
    "connect-src": ["'self'"],
    "object-src": ["'none'"],
    "base-uri": ["'none'"],
    "form-action": ["'self'"],
    "frame-ancestors": ["'none'"],
}
# Report violations (in the browser console) without blocking: for trying a changed policy.
CONTENT_SECURITY_POLICY_REPORT_ONLY = env.bool("CSP_REPORT_ONLY", default=False)

# Served over TLS (directly, or behind a proxy that terminates it): cookies only over https, HSTS,
# http redirected to https. Behind a proxy also set SECURE_PROXY_SSL_HEADER=true, and make the
# proxy set X-Forwarded-Proto (and strip it from clients), so Django knows a request was https.
SECURE_TLS = env.bool("SECURE_TLS", default=False)
SESSION_COOKIE_SECURE = CSRF_COOKIE_SECURE = SECURE_TLS
SECURE_SSL_REDIRECT = env.bool("SECURE_SSL_REDIRECT", default=SECURE_TLS)
SECURE_HSTS_SECONDS = env.int("SECURE_HSTS_SECONDS", default=31_536_000 if SECURE_TLS else 0)
SECURE_HSTS_INCLUDE_SUBDOMAINS = env.bool("SECURE_HSTS_INCLUDE_SUBDOMAINS", default=False)
SECURE_HSTS_PRELOAD = env.bool("SECURE_HSTS_PRELOAD", default=False)
if env.bool("SECURE_PROXY_SSL_HEADER", default=False):
    SECURE_PROXY_SSL_HEADER = ("HTTP_X_FORWARDED_PROTO", "https")
# HSTS for every subdomain and the browsers' preload list bind hosts other than Clarion's own:
# opt-ins for the operator (the variables above), so `check --deploy` does not ask for them.
SILENCED_SYSTEM_CHECKS = [
    *([] if SECURE_HSTS_INCLUDE_SUBDOMAINS else ["security.W005"]),
    *([] if SECURE_HSTS_PRELOAD else ["security.W021"]),
]

# --- Chat limits
CHAT_MESSAGE_MAX_CHARS = env.int("CHAT_MESSAGE_MAX_CHARS", default=8000)
# A websocket frame carries one form submission; anything larger is refused before parsing.
WS_FRAME_MAX_BYTES = env.int("WS_FRAME_MAX_BYTES", default=64 * 1024)

# --- LLM (llm/): no endpoint configured → the offline engine.
LLM_BASE_URL = env("LLM_BASE_URL", default="")
LLM_API_KEY = env("LLM_API_KEY", default="") or env("OPENAI_API_KEY", default="")
LLM_MODEL = env("LLM_MODEL", default="gpt-4o-mini")
# A call's limits (llm/budget.py): the first streamed chunk (or a whole non-streamed answer) within
# LLM_TIMEOUT_SECONDS, then no silence longer than LLM_IDLE_TIMEOUT_SECONDS between chunks, and the
# whole call, retries included, within LLM_TOTAL_TIMEOUT_SECONDS — so a long, steady answer finishes.
LLM_TIMEOUT_SECONDS = env.float("LLM_TIMEOUT_SECONDS", default=60.0)
LLM_IDLE_TIMEOUT_SECONDS = env.float("LLM_IDLE_TIMEOUT_SECONDS", default=30.0)
LLM_TOTAL_TIMEOUT_SECONDS = env.float("LLM_TOTAL_TIMEOUT_SECONDS", default=600.0)
LLM_CONNECT_TIMEOUT_SECONDS = env.float("LLM_CONNECT_TIMEOUT_SECONDS", default=10.0)
LLM_MAX_RETRIES = env.int("LLM_MAX_RETRIES", default=2)
# Auxiliary calls (clarification, question detection, option guessing) have their own short
# budget covering every attempt (at most one retry); when it runs out the turn goes on without them.
LLM_AUX_TIMEOUT_SECONDS = env.float("LLM_AUX_TIMEOUT_SECONDS", default=15.0)
LLM_AUX_MAX_RETRIES = env.int("LLM_AUX_MAX_RETRIES", default=1)
AGENT_MAX_LLM_CALLS = env.int("AGENT_MAX_LLM_CALLS", default=8)
# Messages of history sent with each turn (older ones are dropped at a user-message boundary).
AGENT_HISTORY_MESSAGES = env.int("AGENT_HISTORY_MESSAGES", default=40)
# Pause between streamed words of the offline engine, so its replies visibly stream.
OFFLINE_STREAM_DELAY = env.float("OFFLINE_STREAM_DELAY", default=0.012)

# --- Questions (questions/): deployment limits. The question timeouts and the clarification
# threshold are product policy, edited in the admin (AIConfig) only.
QUESTION_PAUSE_CAP_SECONDS = env.float("QUESTION_PAUSE_CAP_SECONDS", default=120)
# The guesser's top option becomes the timeout default only at or above this confidence.
QUESTION_DEFAULT_MIN_CONFIDENCE = env.float("QUESTION_DEFAULT_MIN_CONFIDENCE", default=0.5)
QUESTION_SWEEP_SECONDS = env.float("QUESTION_SWEEP_SECONDS", default=2)
QUESTIONS_MAX_PENDING_PER_USER = env.int("QUESTIONS_MAX_PENDING_PER_USER", default=10)
QUESTIONS_MIN_INTERVAL_SECONDS = env.float("QUESTIONS_MIN_INTERVAL_SECONDS", default=5)
CLARIFICATION_ENABLED = env.bool("CLARIFICATION_ENABLED", default=True)
QUESTION_DETECTOR_ENABLED = env.bool("QUESTION_DETECTOR_ENABLED", default=True)
QUESTION_GUESSER_ENABLED = env.bool("QUESTION_GUESSER_ENABLED", default=True)

# LOG_FORMAT=plain (default): one line per record, with ` key=value` for the record's extra fields;
# LOG_FORMAT=json: one JSON object per line (python-json-logger). Either way, lines logged during a
# chat turn carry its turn_id (llm/logs.py).
LOG_FORMAT = env("LOG_FORMAT", default="plain").strip().lower()
if LOG_FORMAT not in ("plain", "json"):
    sys.exit(f"clarion: LOG_FORMAT must be 'plain' or 'json', not {LOG_FORMAT!r}")
LOGGING = {
    "version": 1,
    "disable_existing_loggers": False,
    "filters": {"context": {"()": "llm.logs.ContextFilter"}, "without_query": {"()": "llm.logs.WithoutQueryStrings"}},
    "formatters": {
        "plain": {"()": "llm.logs.PlainFormatter", "fmt": "%(asctime)s %(levelname)s %(name)s %(message)s"},
        "json": {
            "()": "pythonjsonlogger.json.JsonFormatter",
            "fmt": "%(asctime)s %(levelname)s %(name)s %(message)s",
            "rename_fields": {"asctime": "time", "levelname": "level", "name": "logger"},
        },
    },
    "handlers": {"console": {"class": "logging.StreamHandler", "formatter": LOG_FORMAT, "filters": ["context", "without_query"]}},
    "root": {"handlers": ["console"], "level": env("LOG_LEVEL", default="INFO")},
    "loggers": {
        "django.channels.server": {"level": "WARNING"},
        "daphne": {"level": "WARNING"},
        # One warning per failed login and per lockout is enough (without the username or address).
        "axes": {"level": "WARNING"},
    },
}

# --- Knowledge base (knowledge/)
# Folders (recursively: .md .txt .rst .html) and URLs that `manage.py rebuild_kb_index` reads.
# Relative folders are resolved against the project directory.
KNOWLEDGE_SOURCE_DIRS = [
    (BASE_DIR / p) if not Path(p).is_absolute() else Path(p)
    for p in env.list("KNOWLEDGE_SOURCE_DIRS", default=[str(BASE_DIR / "docs" / "user-guide")])
]
KNOWLEDGE_SOURCE_URLS = env.list("KNOWLEDGE_SOURCE_URLS", default=[])
# Summaries written at once during a rebuild (model calls in flight).
KNOWLEDGE_REBUILD_CONCURRENCY = env.int("KNOWLEDGE_REBUILD_CONCURRENCY", default=4)
# A running rebuild writes a heartbeat every few seconds; one silent this long (and no process
# holding the rebuild lock) belonged to a process that died and is reported as failed.
KNOWLEDGE_REBUILD_STALE_SECONDS = env.float("KNOWLEDGE_REBUILD_STALE_SECONDS", default=15.0)
KNOWLEDGE_URL_TIMEOUT_SECONDS = env.float("KNOWLEDGE_URL_TIMEOUT_SECONDS", default=20.0)
# Larger files and pages are reported as failed rather than indexed.
KNOWLEDGE_MAX_SOURCE_BYTES = env.int("KNOWLEDGE_MAX_SOURCE_BYTES", default=2_000_000)
# Above this many indexed sources the selector sees only the best full-text candidates.
KNOWLEDGE_PREFILTER_THRESHOLD = env.int("KNOWLEDGE_PREFILTER_THRESHOLD", default=200)
# How many full-text candidates the selector sees then.
KNOWLEDGE_PREFILTER_CANDIDATES = env.int("KNOWLEDGE_PREFILTER_CANDIDATES", default=40)
# First back-off step between retries of a model call (full jitter, doubling, capped at 8 s).
KNOWLEDGE_RETRY_BACKOFF_SECONDS = env.float("KNOWLEDGE_RETRY_BACKOFF_SECONDS", default=0.5)
# Where Clarion is reachable from outside (https://clarion.example.org): adapters' citation links
# are made absolute with it (without it, with the host the adapter called).
PUBLIC_BASE_URL = env("PUBLIC_BASE_URL", default="")
# How long a signed citation link given to an adapter opens its source without a login.
KNOWLEDGE_LINK_MAX_AGE_SECONDS = env.int("KNOWLEDGE_LINK_MAX_AGE_SECONDS", default=7 * 24 * 3600)
# `/metrics` answers staff sessions, and `Authorization: Bearer <METRICS_TOKEN>` when set.
METRICS_TOKEN = env("METRICS_TOKEN", default="")
