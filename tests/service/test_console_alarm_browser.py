"""The console marks, on the cache-read chart, a request whose share fell well below the session's running level."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest

webdriver = pytest.importorskip("selenium.webdriver", reason='the console test needs selenium: pip install "contextwright[dev]"')
from tests.service.conftest import NEEDS  # noqa: E402

pytest.importorskip("fastapi", reason=NEEDS)
pytest.importorskip("uvicorn", reason=NEEDS)
pytest.importorskip("httpx2", reason=NEEDS)
from selenium.webdriver.common.by import By  # noqa: E402
from selenium.webdriver.common.keys import Keys  # noqa: E402
from selenium.webdriver.support.ui import WebDriverWait  # noqa: E402

from contextwright import models  # noqa: E402
from contextwright.client import Client  # noqa: E402
from contextwright.events import AssistantMessage  # noqa: E402
from contextwright.service import ServiceConfig, create_app  # noqa: E402
from contextwright.testing.provider import ScriptedProvider  # noqa: E402
from contextwright.testing.service import serving  # noqa: E402
from tests.service.conftest import AGENT  # noqa: E402
from tests.service.test_console_browser import browser  # noqa: E402,F401  # the headless Chromium fixture

READS = (9_000, 9_000, 9_000, 9_000, 1_000)


def _reporting(provider: ScriptedProvider, reads: Iterator[int]) -> Any:
    """The scripted provider's answer, with the cache read the test wants reported."""

    def create(**kwargs: Any) -> Any:
        answer = provider.create(**kwargs)
        read = next(reads)
        answer["usage"].update(input_tokens=10_000 - read, cache_read_input_tokens=read, cache_creation_input_tokens=0)
        return answer

    return create


@pytest.fixture(scope="module")
def dropped(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[str, str]]:
    app = create_app(ServiceConfig(store=f"sqlite:///{tmp_path_factory.mktemp('alarm')}/store.db"))
    _, key = app.state.store.create_key("console")
    with serving(app) as url, Client(url, key) as client:
        session = client.session("dropping", agent=AGENT, model=models.anthropic("claude-sonnet-4-6"))
        provider = ScriptedProvider([AssistantMessage(text=f"Step {i}.") for i in range(len(READS))])
        create = _reporting(provider, iter(READS))
        for i in range(len(READS)):
            session.user(f"Do step {i}.")
            session.send(create, wire="anthropic")
        yield url, key


def test_the_cache_chart_marks_the_drop_with_its_cause(browser, dropped):  # noqa: F811  # the imported fixture
    url, key = dropped
    driver, wait = browser, WebDriverWait(browser, 20)
    driver.get(f"{url}/console")
    driver.switch_to.active_element.send_keys(key, Keys.ENTER)
    wait.until(lambda d: d.find_element(By.CSS_SELECTOR, '[data-session="dropping"]')).send_keys(Keys.ENTER)
    wait.until(lambda d: len(d.find_elements(By.CSS_SELECTOR, "#series-table tbody tr")) == len(READS))
    marks = wait.until(lambda d: d.find_elements(By.CSS_SELECTOR, "#chart-cache [data-alarm]"))
    # Check: one marker, on the request that dropped, naming the fall and its cause.
    assert [m.get_attribute("data-alarm") for m in marks] == ["4"]
    title = marks[0].find_element(By.TAG_NAME, "title").get_attribute("textContent")
    assert title == "Cache alarm, request 4: cache read 10.0% against a running 90.0%; cause: not known from the log"
