import pytest

from chat import agent, deadlines


@pytest.fixture(autouse=True)
async def _background_work_finishes(fake_openai):
    yield
    await agent.wait_for_running_turns()
    deadlines.stop_sweepers()


@pytest.fixture
def fast_questions(settings):
    """Short deadlines and no rate limit between asks, so flows run in test time."""
    settings.QUESTIONS_MIN_INTERVAL_SECONDS = 0
    settings.QUESTION_SWEEP_SECONDS = 0.2
    return settings
