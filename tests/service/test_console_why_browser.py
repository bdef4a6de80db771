"""The console's diff of a request, its why answer and its cache misses by cause, in headless Chromium (driven as in
test_console_browser)."""

from __future__ import annotations

from collections.abc import Iterator

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
from contextwright.events import AssistantMessage, ToolCall  # noqa: E402
from contextwright.service import ServiceConfig, create_app  # noqa: E402
from contextwright.testing.provider import ScriptedProvider  # noqa: E402
from contextwright.testing.service import serving  # noqa: E402
from tests.service.conftest import AGENT  # noqa: E402
from tests.service.test_console_browser import _severe, _shots, browser  # noqa: E402, F401

PASSING = "\n".join(f"tests/test_mod.py::test_ok_{i} PASSED" for i in range(300))
TEST_RUN = f"{PASSING}\ntests/test_mod.py::test_round FAILED\nE   AssertionError: 10.004 != 10.0\n==== 1 failed, 300 passed ===="


@pytest.fixture(scope="module")
def compacted(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[str, str]]:
    """A session whose test run was compressed on arrival and whose history a compaction folded (requests 0-2)."""
    app = create_app(ServiceConfig(store=f"sqlite:///{tmp_path_factory.mktemp('console-why')}/store.db"))
    _, key = app.state.store.create_key("console")
    provider = ScriptedProvider(
        [
            AssistantMessage(text="Running the tests.", tool_calls=(ToolCall(id="t1", name="run_tests", arguments={}),)),
            AssistantMessage(text="One failure in test_round; fixing it."),
            AssistantMessage(text="Done."),
        ]
    )
    with serving(app) as url, Client(url, key) as client:
        session = client.session("ticket-4712", agent=AGENT, model=models.anthropic("claude-sonnet-4-6"))
        session.user("CI fails on main: fix test_round in billing/ledger.py.")
        session.send(provider.create)
        session.tool_result("t1", TEST_RUN, exit_code=1)
        session.send(provider.create)
        session.user("Anything else?")
        assert session.compact() is not None
        session.send(provider.create)
        yield url, key


def test_the_console_shows_a_requests_diff_and_why_a_text_is_missing(browser, compacted, tmp_path):  # noqa: F811 (the fixture)
    url, key = compacted
    driver, wait = browser, WebDriverWait(browser, 20)
    driver.get(f"{url}/console")
    driver.execute_script("sessionStorage.clear()")
    driver.get(f"{url}/console#session=ticket-4712")
    wait.until(lambda d: d.find_element(By.ID, "api-key").is_displayed())
    driver.find_element(By.ID, "api-key").send_keys(key, Keys.ENTER)
    rows = lambda d: d.find_elements(By.CSS_SELECTOR, "#series-table tbody tr")
    wait.until(lambda d: len(rows(d)) == 3)

    # Check: the Diff button of request 2 shows what the compaction removed, with its cause, and the kept prefix.
    rows(driver)[2].find_element(By.CSS_SELECTOR, "button[aria-label='What changed in request 2']").send_keys(Keys.ENTER)
    table = wait.until(lambda d: d.find_element(By.ID, "diff-table"))
    assert driver.switch_to.active_element.get_attribute("id") == "diff-title"
    removed = table.find_elements(By.CSS_SELECTOR, "tr[data-status='removed']")
    assert removed and all("folded by the compaction" in row.text for row in removed)
    assert "kept" in table.find_element(By.CSS_SELECTOR, "tr.kept").text
    assert "context.compacted" in driver.find_element(By.ID, "diff-result").text
    counts = driver.find_element(By.ID, "diff-counts").text
    assert f"{len(removed)} removed" in counts
    assert "compacted ×" in driver.find_element(By.ID, "diff-causes").text
    driver.save_screenshot(str(_shots(tmp_path) / "console-diff.png"))

    # Check: why a passing test line is missing from request 1: compressed on arrival, with the pointer.
    index = driver.find_element(By.ID, "inspect-index")
    index.clear()
    index.send_keys("1")
    field = driver.find_element(By.ID, "why-text")
    field.send_keys("test_ok_250", Keys.ENTER)
    fate = wait.until(lambda d: d.find_element(By.ID, "why-fate"))
    assert fate.text == "compressed"
    answer = driver.find_element(By.ID, "why-result").text
    assert "compressed on arrival (pytest)" in answer and "The original: sha256:" in answer
    assert driver.find_elements(By.CSS_SELECTOR, "#why-steps tr.hid")

    # Check: the failure line was shown in request 1 and folded by the compaction by request 2.
    field.clear()
    field.send_keys("10.004 != 10.0", Keys.ENTER)
    wait.until(lambda d: d.find_element(By.ID, "why-fate").text == "shown")
    index.clear()
    index.send_keys("2")
    driver.find_element(By.CSS_SELECTOR, "#why-form button").send_keys(Keys.ENTER)
    wait.until(lambda d: d.find_element(By.ID, "why-fate").text == "compacted")
    assert "Left of it:" in driver.find_element(By.ID, "why-result").text
    driver.save_screenshot(str(_shots(tmp_path) / "console-why.png"))

    # Check: the cache misses of every request, by cause; the compaction's request names the compaction.
    driver.find_element(By.ID, "misses-button").send_keys(Keys.ENTER)
    # One rebuild per request and a simulated cache: give a loaded machine time.
    missed = WebDriverWait(driver, 60).until(lambda d: d.find_elements(By.CSS_SELECTOR, "#misses-table tbody tr"))
    assert [row.get_attribute("data-request") for row in missed] == ["0", "1", "2"]
    assert "compaction" in missed[2].text
    driver.find_element(By.ID, "misses").screenshot(str(_shots(tmp_path) / "console-misses.png"))
    assert _severe(driver) == []
