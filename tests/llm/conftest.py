from tests.fake_openai import fake_openai  # noqa: F401
