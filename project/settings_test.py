"""Settings for the test suite: the real settings, with a throwaway key and fast hashing."""
import os

os.environ.setdefault("SECRET_KEY", "clarion-test-only-secret-key")

from project.settings import *  # noqa: E402,F403

PASSWORD_HASHERS = ["django.contrib.auth.hashers.MD5PasswordHasher"]

OFFLINE_STREAM_DELAY = env.float("OFFLINE_STREAM_DELAY", default=0.0)  # noqa: F405
# Tests run turns in throwaway event loops and threads; connections must not outlive them, or
# the test database cannot be dropped at the end.
DATABASES["default"]["CONN_MAX_AGE"] = 0  # noqa: F405
