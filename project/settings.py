"""Clarion settings. Every knob comes from the environment (or `.env`); `.env.example` lists them."""
from __future__ import annotations

import sys
from pathlib import Path

import environ

from project.embedded_pg import PostgresUnavailable, embedded_database_settings

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
    "workspace",
    "chat",
    "questions",
    "knowledge",
    "project",  # hosts `manage.py up`
]

MIDDLEWARE = [
    "django.middleware.security.SecurityMiddleware",
    "django.contrib.sessions.middleware.SessionMiddleware",
    "django.middleware.common.CommonMiddleware",
    "django.middleware.csrf.CsrfViewMiddleware",
    "django.contrib.auth.middleware.AuthenticationMiddleware",
    "django.contrib.auth.middleware.LoginRequiredMiddleware",
    "django.contrib.messages.middleware.MessageMiddleware",
    "django.middleware.clickjacking.XFrameOptionsMiddleware",
    "django_htmx.middleware.HtmxMiddleware",
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
    try:
        DATABASES = {"default": embedded_database_settings(DATA_DIR, database=DATABASE_NAME or "clarion")}
    except PostgresUnavailable as exc:
        sys.exit(f"clarion: {exc}")
# Persistent connections: every database_sync_to_async hop would otherwise pay for a new
# Postgres backend (~5 ms each, several per agent turn). Health checks drop dead ones.
DATABASES["default"]["CONN_MAX_AGE"] = env.int("CONN_MAX_AGE", default=60)
DATABASES["default"]["CONN_HEALTH_CHECKS"] = True
DATABASES["default"].setdefault("OPTIONS", {})
DATABASES["default"]["OPTIONS"].setdefault("connect_timeout", 5)
DEFAULT_AUTO_FIELD = "django.db.models.BigAutoField"

# --- Channels: one process → in-memory; REDIS_URL → shared groups across Daphne workers.
REDIS_URL = env("REDIS_URL", default="")
if REDIS_URL:
    CHANNEL_LAYERS = {
        "default": {
            "BACKEND": "channels_redis.core.RedisChannelLayer",
            # channels_redis blocks 5 s reading an idle channel; redis-py's socket timeout must be
            # longer, or an idle tab's read times out and Daphne closes its websocket (1011).
            "CONFIG": {"hosts": [{"address": REDIS_URL, "socket_timeout": 30}], "prefix": env("CHANNELS_PREFIX", default="clarion")},
        }
    }
else:
    CHANNEL_LAYERS = {"default": {"BACKEND": "channels.layers.InMemoryChannelLayer"}}

AUTH_PASSWORD_VALIDATORS = [
    {"NAME": "django.contrib.auth.password_validation.UserAttributeSimilarityValidator"},
    {"NAME": "django.contrib.auth.password_validation.MinimumLengthValidator"},
]
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

SESSION_COOKIE_HTTPONLY = True
SESSION_COOKIE_SAMESITE = "Lax"
CSRF_COOKIE_SAMESITE = "Lax"
X_FRAME_OPTIONS = "DENY"
SECURE_CONTENT_TYPE_NOSNIFF = True
SECURE_REFERRER_POLICY = "same-origin"

# --- Chat limits
CHAT_MESSAGE_MAX_CHARS = env.int("CHAT_MESSAGE_MAX_CHARS", default=8000)
# A websocket frame carries one form submission; anything larger is refused before parsing.
WS_FRAME_MAX_BYTES = env.int("WS_FRAME_MAX_BYTES", default=64 * 1024)

# --- LLM (llm/): no endpoint configured → the offline engine.
LLM_BASE_URL = env("LLM_BASE_URL", default="")
LLM_API_KEY = env("LLM_API_KEY", default="") or env("OPENAI_API_KEY", default="")
LLM_MODEL = env("LLM_MODEL", default="gpt-4o-mini")
LLM_TIMEOUT_SECONDS = env.float("LLM_TIMEOUT_SECONDS", default=60.0)
LLM_MAX_RETRIES = env.int("LLM_MAX_RETRIES", default=2)
AGENT_MAX_LLM_CALLS = env.int("AGENT_MAX_LLM_CALLS", default=8)
# Messages of history sent with each turn (older ones are dropped at a user-message boundary).
AGENT_HISTORY_MESSAGES = env.int("AGENT_HISTORY_MESSAGES", default=40)
# Pause between streamed words of the offline engine, so its replies visibly stream.
OFFLINE_STREAM_DELAY = env.float("OFFLINE_STREAM_DELAY", default=0.012)

# --- Questions (questions/): timeouts in seconds, limits from seed 000, thresholds from seed 002
QUESTION_TIMEOUTS = {
    "low": env.float("QUESTION_TIMEOUT_LOW", default=8),
    "medium": env.float("QUESTION_TIMEOUT_MEDIUM", default=15),
    "high": env.float("QUESTION_TIMEOUT_HIGH", default=25),
    "ask": env.float("QUESTION_TIMEOUT_ASK", default=300),
}
QUESTION_PAUSE_CAP_SECONDS = env.float("QUESTION_PAUSE_CAP_SECONDS", default=120)
QUESTION_SWEEP_SECONDS = env.float("QUESTION_SWEEP_SECONDS", default=2)
QUESTIONS_MAX_PENDING_PER_USER = env.int("QUESTIONS_MAX_PENDING_PER_USER", default=10)
QUESTIONS_MIN_INTERVAL_SECONDS = env.float("QUESTIONS_MIN_INTERVAL_SECONDS", default=5)
CLARIFICATION_ENABLED = env.bool("CLARIFICATION_ENABLED", default=True)
CLARIFICATION_THRESHOLD = env.float("CLARIFICATION_THRESHOLD", default=0.7)
QUESTION_DETECTOR_ENABLED = env.bool("QUESTION_DETECTOR_ENABLED", default=True)
QUESTION_GUESSER_ENABLED = env.bool("QUESTION_GUESSER_ENABLED", default=True)

LOGGING = {
    "version": 1,
    "disable_existing_loggers": False,
    "formatters": {"plain": {"format": "%(asctime)s %(levelname)s %(name)s %(message)s"}},
    "handlers": {"console": {"class": "logging.StreamHandler", "formatter": "plain"}},
    "root": {"handlers": ["console"], "level": env("LOG_LEVEL", default="INFO")},
    "loggers": {
        "django.channels.server": {"level": "WARNING"},
        "daphne": {"level": "WARNING"},
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
KNOWLEDGE_URL_TIMEOUT_SECONDS = env.float("KNOWLEDGE_URL_TIMEOUT_SECONDS", default=20.0)
# Larger files and pages are reported as failed rather than indexed.
KNOWLEDGE_MAX_SOURCE_BYTES = env.int("KNOWLEDGE_MAX_SOURCE_BYTES", default=2_000_000)
# Above this many indexed sources the selector sees only the best full-text candidates.
KNOWLEDGE_PREFILTER_THRESHOLD = env.int("KNOWLEDGE_PREFILTER_THRESHOLD", default=200)
# How many full-text candidates the selector sees then.
KNOWLEDGE_PREFILTER_CANDIDATES = env.int("KNOWLEDGE_PREFILTER_CANDIDATES", default=40)
# First back-off step between retries of a model call (full jitter, doubling, capped at 8 s).
KNOWLEDGE_RETRY_BACKOFF_SECONDS = env.float("KNOWLEDGE_RETRY_BACKOFF_SECONDS", default=0.5)
# `/metrics` answers staff sessions, and `Authorization: Bearer <METRICS_TOKEN>` when set.
METRICS_TOKEN = env("METRICS_TOKEN", default="")
