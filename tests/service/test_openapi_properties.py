"""Property tests of the API against its own OpenAPI document (schemathesis), bounded in examples.

Generated requests, valid and invalid, must never crash the server, and every answer
must be documented: status, media type, and body schema (problem documents included).
"""

from __future__ import annotations

import tempfile
from collections.abc import Iterator

import pytest

schemathesis = pytest.importorskip("schemathesis", reason='property tests need schemathesis: pip install "contextwright[dev]"')
from tests.service.conftest import NEEDS  # noqa: E402

pytest.importorskip("fastapi", reason=NEEDS)
pytest.importorskip("uvicorn", reason=NEEDS)
pytest.importorskip("httpx2", reason=NEEDS)
from hypothesis import HealthCheck, settings  # noqa: E402
from schemathesis.checks import not_a_server_error  # noqa: E402
from schemathesis.specs.openapi.checks import positive_data_acceptance  # noqa: E402

from contextwright.client import Client  # noqa: E402
from contextwright.service import ServiceConfig, create_app  # noqa: E402
from contextwright.service.limits import RateLimit  # noqa: E402
from contextwright.testing.service import serving  # noqa: E402
from tests.service.conftest import AGENT  # noqa: E402


@pytest.fixture(scope="module")
def running(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[str, str]]:
    app = create_app(
        ServiceConfig(
            store=f"sqlite:///{tmp_path_factory.mktemp('props')}/store.db",
            max_body_bytes=256 * 1024,
            rate_limit=RateLimit(per_second=10_000, burst=10_000),
            # Generated cases send invalid keys on purpose: they must meet a 401, not the limit on failures.
            auth_failure_limit=RateLimit(per_second=10_000, burst=10_000),
        )
    )
    _, key = app.state.store.create_key("props")
    with serving(app) as url:
        # A session with a built request, so generated ids sometimes hit a real one.
        from contextwright import models

        with Client(url, key) as client:
            session = client.session("s", agent=AGENT, model=models.anthropic("claude-sonnet-4-6"))
            session.user("hello")
            session.next_request()
        yield url, key


def _api_schema():  # type: ignore[no-untyped-def]
    """The API's OpenAPI document, read from an app at collection time.

    Loading it here, not from a fixture, keeps schemathesis's lazy pytest plugin (which reaches into
    pytest's private node attributes) out of the run; requests still go to the served app.
    """
    from schemathesis.config import SchemathesisConfig

    with tempfile.TemporaryDirectory() as folder:
        document = create_app(ServiceConfig(store=f"sqlite:///{folder}/openapi.db")).openapi()
    # A body over the size limit is rejected too, with 413, before it is parsed.
    rejected = ["400", "401", "404", "405", "409", "413", "415", "422", "429"]
    config = SchemathesisConfig.from_dict({"checks": {"negative_data_rejection": {"expected-statuses": rejected}}})
    return schemathesis.openapi.from_dict(document, config=config)


schema = _api_schema()


@schema.parametrize()
@settings(max_examples=10, suppress_health_check=list(HealthCheck), deadline=None)
def test_every_answer_is_documented_and_nothing_crashes(case, running):  # type: ignore[no-untyped-def]
    url, key = running
    # Valid-looking data may still name a session that does not exist (404), so "positive data
    # is accepted" does not hold for this API; every other check does.
    response = case.call_and_validate(
        base_url=url, headers={"Authorization": f"Bearer {key}"}, excluded_checks=[positive_data_acceptance]
    )
    not_a_server_error  # noqa: B018 - named to say it is among the checks that ran
    assert response.status_code < 500
