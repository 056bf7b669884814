"""Settings for the test suite: the real settings, with a throwaway key and fast hashing."""

import os

os.environ.setdefault("SECRET_KEY", "clarion-test-only-secret-key")

from project.settings import *  # noqa: F403

PASSWORD_HASHERS = ["django.contrib.auth.hashers.MD5PasswordHasher"]

OFFLINE_STREAM_DELAY = env.float("OFFLINE_STREAM_DELAY", default=0.0)  # noqa: F405

# The test servers answer `GET /__test__/idle/` once their work is done, so the e2e tests empty
# the database only then (project/testing.py). Test settings only.
ROOT_URLCONF = "project.urls_test"
MIDDLEWARE = ["project.testing.InFlightRequestsMiddleware", *MIDDLEWARE]  # noqa: F405
