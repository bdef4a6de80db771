"""Gateway sessions in the HTTP service on the same store: listed for the gateway's tenant, read and shown in the console."""

from __future__ import annotations

from collections.abc import Callable, Iterator
from typing import Any

import httpx2
import pytest

pytest.importorskip("fastapi", reason='the service needs its extra: pip install "contextwright[service]"')

from contextwright.gateway import GatewayConfig
from contextwright.gateway.tenancy import service_session_id
from contextwright.service import ServiceConfig, create_app
from contextwright.testing.service import serving
from contextwright.testing.upstream import Reply
from tests.gateway.test_observe import ANSWER_1, ANSWER_2, CC_SESSION, FIRST, SECOND, claude_body, post
from tests.service.test_console_browser import browser  # noqa: F401  # the headless Chromium fixture

SERVICE_ID = "claude-code:" + CC_SESSION.split("/", 1)[1]


def _drive(gateway: Any) -> None:
    """Two requests of one Claude Code session through the gateway, both answers recorded."""
    gateway.replies(Reply(body=ANSWER_1), Reply(body=ANSWER_2))
    assert post(gateway.url, claude_body(FIRST)).status_code == 200
    gateway.settled(CC_SESSION, 1)
    assert post(gateway.url, claude_body(SECOND)).status_code == 200
    gateway.settled(CC_SESSION, 2)


@pytest.fixture
def shared(make_gateway: Callable[..., Any]) -> Iterator[tuple[Any, str, Any]]:
    """A gateway that recorded a session, and a service on its store."""
    gateway = make_gateway()
    _drive(gateway)
    app = create_app(ServiceConfig(store=f"sqlite:///{gateway.store}"))
    with serving(app) as url:
        yield gateway, url, app


def _get(url: str, key: str, path: str) -> httpx2.Response:
    return httpx2.get(url + path, headers={"Authorization": f"Bearer {key}"}, timeout=30)


def test_a_gateway_session_is_listed_and_read_for_the_gateway_tenant_only(shared: tuple[Any, str, Any]) -> None:
    gateway, url, app = shared
    _, key = app.state.store.create_key("gateway")
    _, other = app.state.store.create_key("team-b")

    listed = _get(url, key, "/v1/sessions").json()["sessions"]
    assert [(s["session_id"], s["model"], s["provider"]) for s in listed] == [(SERVICE_ID, "claude-sonnet-4-5", "anthropic")]
    assert listed[0]["last_seq"] == gateway.log.last_seq(CC_SESSION)
    assert _get(url, other, "/v1/sessions").json()["sessions"] == []
    assert _get(url, other, f"/v1/sessions/{SERVICE_ID}").status_code == 404

    session = _get(url, key, f"/v1/sessions/{SERVICE_ID}").json()
    assert session["requests"] == 2 and session["awaiting_model"] is False
    assert session["agent"]["instructions"] == "You are a coding agent." and session["agent"]["control_tools"] is False
    # The request the gateway recorded rebuilds from the log with the same hash, as for a session of the API.
    rebuilt = _get(url, key, f"/v1/sessions/{SERVICE_ID}/requests/1").json()
    built = [e for e in gateway.events(CC_SESSION) if e.type == "context.request.built"][1].payload
    assert rebuilt["verified"] is True and rebuilt["recorded_sha256"] == built.request_sha256
    stats = _get(url, key, f"/v1/sessions/{SERVICE_ID}/stats").json()["summary"]
    assert stats["requests"] == 2


def test_the_tenant_is_the_one_configured(make_gateway: Callable[..., Any]) -> None:
    gateway = make_gateway(tenant="team-a")
    _drive(gateway)
    app = create_app(ServiceConfig(store=f"sqlite:///{gateway.store}"))
    with serving(app) as url:
        _, team = app.state.store.create_key("team-a")
        _, default = app.state.store.create_key("gateway")
        assert [s["session_id"] for s in _get(url, team, "/v1/sessions").json()["sessions"]] == [SERVICE_ID]
        assert _get(url, default, "/v1/sessions").json()["sessions"] == []


def test_a_service_id_holds_no_slash_and_fits_the_service() -> None:
    assert service_session_id("claude-code/abc~2") == "claude-code:abc~2"
    long = service_session_id("openai/" + "k" * 180)
    assert len(long) == 128 and "/" not in long
    assert long != service_session_id("openai/" + "k" * 179 + "j")
    with pytest.raises(Exception, match="tenant"):
        GatewayConfig(tenant="Not A Tenant")


# -- the console ------------------------------------------------------------------------


def test_the_console_lists_a_gateway_session_and_shows_its_requests(browser: Any, shared: tuple[Any, str, Any]) -> None:  # noqa: F811  # the imported fixture
    from selenium.webdriver.common.by import By
    from selenium.webdriver.common.keys import Keys
    from selenium.webdriver.support.ui import WebDriverWait

    gateway, url, app = shared
    _, key = app.state.store.create_key("gateway")
    driver, wait = browser, WebDriverWait(browser, 20)
    driver.get(f"{url}/console")
    driver.switch_to.active_element.send_keys(key, Keys.ENTER)
    opener = wait.until(lambda d: d.find_element(By.CSS_SELECTOR, f'[data-session="{SERVICE_ID}"]'))
    opener.send_keys(Keys.ENTER)
    rows = lambda d: d.find_elements(By.CSS_SELECTOR, "#series-table tbody tr")
    wait.until(lambda d: len(rows(d)) == 2)
    assert driver.find_element(By.ID, "session-name").text == SERVICE_ID

    # A third request through the gateway shows up without a reload.
    gateway.replies(Reply(body=ANSWER_1))
    third = SECOND + [
        {"role": "assistant", "content": ANSWER_2["content"]},
        {"role": "user", "content": "And the tests?"},
    ]
    assert post(gateway.url, claude_body(third)).status_code == 200
    wait.until(lambda d: len(rows(d)) == 3)

    # The inspector rebuilds request 1 of the gateway session and checks its hash.
    field = driver.find_element(By.ID, "inspect-index")
    field.clear()
    field.send_keys("1", Keys.ENTER)
    assert wait.until(lambda d: d.find_element(By.ID, "inspect-verdict")).text == "Hash verified"
    assert "README.md" in driver.find_element(By.ID, "inspect-result").text
    assert [e["message"] for e in driver.get_log("browser") if e["level"] == "SEVERE"] == []
