"""The web console in headless Chromium (Debian's chromium and chromium-driver, through Selenium).

It loads with no console errors, shows a scripted session's series, updates when a new
request is built, and its inspector shows request N with the hash check. Screenshots
go to the test's temporary directory (and to $CONTEXTWRIGHT_SCREENSHOTS when set).
"""

from __future__ import annotations

import os
import shutil
from collections.abc import Iterator
from pathlib import Path

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

MODEL = models.anthropic("claude-sonnet-4-6")


def _binary(env: str, *names: str) -> str | None:
    found = os.environ.get(env) or next((shutil.which(n) for n in names if shutil.which(n)), None)
    return found if found and Path(found).exists() else None


@pytest.fixture(scope="module")
def browser() -> Iterator[object]:
    chromium = _binary("CHROMIUM", "chromium", "chromium-browser")
    driver_path = _binary("CHROMEDRIVER", "chromedriver")
    if chromium is None or driver_path is None:
        pytest.skip("needs Debian's chromium and chromium-driver (apt-get install -y chromium chromium-driver)")
    options = webdriver.ChromeOptions()
    options.binary_location = chromium
    for flag in ("--headless=new", "--no-sandbox", "--disable-dev-shm-usage", "--window-size=1280,2000", "--disable-gpu"):
        options.add_argument(flag)
    options.set_capability("goog:loggingPrefs", {"browser": "ALL"})
    driver = webdriver.Chrome(options=options, service=webdriver.ChromeService(executable_path=driver_path))
    try:
        yield driver
    finally:
        driver.quit()


@pytest.fixture(scope="module")
def console(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[str, str, Client, object]]:
    app = create_app(ServiceConfig(store=f"sqlite:///{tmp_path_factory.mktemp('console')}/store.db"))
    _, key = app.state.store.create_key("console")
    with serving(app) as url, Client(url, key) as client:
        session = client.session("ticket-4711", agent=AGENT, model=MODEL)
        provider = ScriptedProvider(
            [
                AssistantMessage(text="Running the tests.", tool_calls=(ToolCall(id="t1", name="run_tests", arguments={}),)),
                AssistantMessage(text="One failure in billing; fixing it."),
                AssistantMessage(text="Running them again.", tool_calls=(ToolCall(id="t2", name="run_tests", arguments={}),)),
                AssistantMessage(text="All green."),
            ]
        )
        session.user("CI fails on main. Fix it without changing the public API.")
        session.send(provider.create)
        session.tool_result("t1", "FAILED tests/test_billing.py::test_total\n1 failed, 41 passed", exit_code=1)
        session.send(provider.create)
        session.user("Go ahead and rerun the suite.")
        session.send(provider.create)
        session.tool_result("t2", "42 passed", exit_code=0)
        session.send(provider.create)
        yield url, key, client, session


def _shots(tmp_path: Path) -> Path:
    target = Path(os.environ.get("CONTEXTWRIGHT_SCREENSHOTS", tmp_path))
    target.mkdir(parents=True, exist_ok=True)
    return target


def _severe(driver) -> list[str]:  # type: ignore[no-untyped-def]
    return [entry["message"] for entry in driver.get_log("browser") if entry["level"] == "SEVERE"]


def test_the_console_shows_a_session_live_and_inspects_request_n(browser, console, tmp_path):
    url, key, client, session = console
    driver, wait = browser, WebDriverWait(browser, 20)
    shots = _shots(tmp_path)

    # Check: the page loads from the service alone and asks for a key, without errors.
    driver.get(f"{url}/console")
    assert driver.title == "Contextwright console"
    for src in driver.execute_script("return [...document.querySelectorAll('[src],[href]')].map(e => e.src || e.href)"):
        assert src.startswith(url) or src.startswith("about:"), src

    # Sign in with the keyboard only: the key field has focus, Enter submits.
    active = driver.switch_to.active_element
    assert active.get_attribute("id") == "api-key"
    active.send_keys(key, Keys.ENTER)
    opener = wait.until(lambda d: d.find_element(By.CSS_SELECTOR, '[data-session="ticket-4711"]'))
    opener.send_keys(Keys.ENTER)

    # Check: the series of the scripted run: four requests, charts drawn, totals filled in.
    rows = lambda d: d.find_elements(By.CSS_SELECTOR, "#series-table tbody tr")
    wait.until(lambda d: len(rows(d)) == 4)
    assert len(driver.find_elements(By.CSS_SELECTOR, "#chart-tokens rect")) >= 4 * 3
    assert len(driver.find_elements(By.CSS_SELECTOR, "#chart-cache circle")) == 4
    totals = {
        e.get_attribute("data-total"): e.find_element(By.TAG_NAME, "dd").text
        for e in driver.find_elements(By.CSS_SELECTOR, "#totals > div")
    }
    assert totals["Requests"] == "4" and totals["Cost"].startswith("$") and totals["Cache-read share"].endswith("%")
    driver.save_screenshot(str(shots / "console-series.png"))

    # Check: a request built now shows up without a reload.
    session.user("Summarise what you changed.")
    session.next_request()
    wait.until(lambda d: len(rows(d)) == 5)
    assert driver.find_element(By.ID, "session-status").text.startswith("5 requests")

    # Check: the inspector rebuilds request 1 from the log and says the hash matches.
    field = driver.find_element(By.ID, "inspect-index")
    field.clear()
    field.send_keys("1", Keys.ENTER)
    verdict = wait.until(lambda d: d.find_element(By.ID, "inspect-verdict"))
    assert verdict.text == "Hash verified"
    expected = client.call("GET", "/v1/sessions/ticket-4711/requests/1")
    result = driver.find_element(By.ID, "inspect-result").text
    assert expected["recorded_sha256"] in result and "test_billing" in result
    assert driver.switch_to.active_element.get_attribute("id") == "inspect-title"
    driver.save_screenshot(str(shots / "console-inspector.png"))
    assert (shots / "console-series.png").stat().st_size > 10_000

    # Check: a compaction shows up live, as a change in the table and a marker on the chart.
    assert session.compact() is not None
    session.adapter.record_assistant(AssistantMessage(text="Changed the billing total to a float."))
    session.user("Thanks. Anything else?")
    session.next_request()
    wait.until(lambda d: len(rows(d)) == 6)
    last = rows(driver)[-1].text
    assert "compacted:manual" in last
    assert driver.find_elements(By.CSS_SELECTOR, "#chart-tokens line title")
    totals = {
        e.get_attribute("data-total"): e.find_element(By.TAG_NAME, "dd").text
        for e in driver.find_elements(By.CSS_SELECTOR, "#totals > div")
    }
    assert totals["Compactions"] == "1"
    driver.find_element(By.ID, "chart-tokens").screenshot(str(shots / "console-compaction-chart.png"))

    assert _severe(driver) == []


def test_the_console_is_usable_without_a_mouse_or_sight(browser, console):
    url, key, _, _ = console
    driver = browser
    driver.get(f"{url}/console#session=ticket-4711")
    WebDriverWait(driver, 20).until(lambda d: d.find_elements(By.CSS_SELECTOR, "#series-table tbody tr"))
    problems = driver.execute_script(
        """
        const out = [];
        for (const field of document.querySelectorAll('input, select')) {
          if (!field.labels || !field.labels.length) out.push('unlabelled ' + field.id);
        }
        for (const button of document.querySelectorAll('button')) {
          const name = button.getAttribute('aria-label') || button.textContent.trim();
          if (!name) out.push('nameless button');
        }
        for (const chart of document.querySelectorAll('svg.chart')) {
          if (chart.getAttribute('role') !== 'img' || !chart.getAttribute('aria-labelledby')) out.push('chart without a name ' + chart.id);
        }
        if (!document.querySelector('[aria-live]')) out.push('no live region');
        if (document.documentElement.lang !== 'en') out.push('no page language');
        return out;
        """
    )
    assert problems == []
    # Check: a wrong key is announced, not silently ignored.
    driver.execute_script("sessionStorage.clear()")
    driver.get(f"{url}/console")
    driver.switch_to.active_element.send_keys("cw_0000000000000000_" + "A" * 43, Keys.ENTER)
    alert = WebDriverWait(driver, 20).until(
        lambda d: d.find_element(By.ID, "login-error").text and d.find_element(By.ID, "login-error")
    )
    assert alert.get_attribute("role") == "alert" and "not valid" in alert.text
    # A 401 from the API is an expected answer here; nothing else may fail.
    assert [m for m in _severe(driver) if "401" not in m] == []
