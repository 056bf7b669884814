import pytest

from chat import agent
from tests.fake_openai import fake_openai  # noqa: F401  (fixture)


@pytest.fixture(autouse=True)
async def _turns_finish_before_teardown(fake_openai):  # noqa: F811
    # Turns run as background tasks; neither the database nor the fake model server may go away
    # under a running one (depending on fake_openai makes it outlive this teardown).
    yield
    await agent.wait_for_running_turns()


@pytest.fixture
def model_endpoint(settings, fake_openai):  # noqa: F811
    """Point Clarion at the fake OpenAI-compatible server, through the real SDK."""
    settings.LLM_BASE_URL = fake_openai.base_url
    settings.LLM_API_KEY = "sk-test-not-a-real-key"
    settings.LLM_MODEL = "fake-model"
    settings.LLM_TIMEOUT_SECONDS = 1.0
    settings.LLM_MAX_RETRIES = 1
    fake_openai.default = None  # an unscripted call is a test bug: answer 500
    # The loop's own tests script only chat calls; the question features' extra structured
    # calls (clarification, detector) are scripted explicitly in tests/questions.
    settings.CLARIFICATION_ENABLED = False
    settings.QUESTION_DETECTOR_ENABLED = False
    settings.QUESTION_GUESSER_ENABLED = False
    return fake_openai
