import pytest

from chat import agent


@pytest.fixture(autouse=True)
async def _turns_finish_before_teardown(fake_openai):
    # Turns run as background tasks; neither the database nor the fake model server may go away
    # under a running one (depending on fake_openai makes it outlive this teardown).
    yield
    await agent.wait_for_running_turns()
