import pytest

from contextwright.clock import FixedClock
from contextwright.errors import NotAStore, StorageCorrupted
from contextwright.log import open_log
from contextwright.log.postgres import PostgresEventLog
from contextwright.testing.contract import EventLogContract, user

pytestmark = pytest.mark.postgres


class TestPostgresEventLog(EventLogContract):
    @pytest.fixture(autouse=True)
    def _schema(self, postgres_dsn, postgres_schema):
        self.dsn = postgres_dsn
        self.schema = postgres_schema

    def make_log(self, clock: FixedClock) -> PostgresEventLog:
        return PostgresEventLog(self.dsn, schema=self.schema, clock=clock, pool_size=self.race_writers + 1)

    def store_url(self, log: PostgresEventLog) -> str:
        return f"{self.dsn}?schema={self.schema}"

    def peer(self, log: PostgresEventLog) -> PostgresEventLog:
        other = PostgresEventLog(self.dsn, schema=self.schema, clock=log.clock)
        self.__dict__.setdefault("_opened", []).append(other)
        return other

    def tamper(self, log: PostgresEventLog, what: str, **details) -> None:
        import psycopg

        with psycopg.connect(self.dsn, autocommit=True) as conn:
            if what == "artifact":
                conn.execute(
                    f"UPDATE {self.schema}.cw_artifacts SET content = %s WHERE ref = %s", (details["content"], details["ref"])
                )
            elif what == "checkpoint":
                column = {"body": "body", "head_sha256": "head_sha256", "seq": "seq"}[details["column"]]
                conn.execute(
                    f"UPDATE {self.schema}.cw_checkpoints SET {column} = %s WHERE session_id = %s",
                    (details["value"], details["session_id"]),
                )
            else:
                conn.execute(
                    f"UPDATE {self.schema}.cw_sessions SET last_seq = %s WHERE session_id = %s",
                    (details["seq"], details["session_id"]),
                )


def test_open_by_url_with_schema(postgres_dsn, postgres_schema):
    with open_log(f"{postgres_dsn}?schema={postgres_schema}", clock=FixedClock()) as log:
        log.append("s", [user("a")], expected_seq=0)
        assert log.schema == postgres_schema
    with open_log(f"{postgres_dsn}?schema={postgres_schema}", create=False) as log:
        assert [e.payload.text for e in log.read("s")] == ["a"]


def test_opening_without_create_needs_an_existing_store(postgres_dsn, postgres_schema):
    with pytest.raises(NotAStore):
        PostgresEventLog(postgres_dsn, schema=postgres_schema, create=False)


def test_tampered_payload_is_reported_not_returned(postgres_dsn, postgres_schema):
    import psycopg

    with PostgresEventLog(postgres_dsn, schema=postgres_schema, clock=FixedClock()) as log:
        log.append("s", [user("original")], expected_seq=0)
        with psycopg.connect(postgres_dsn, autocommit=True) as conn:
            conn.execute(f"UPDATE {postgres_schema}.cw_events SET payload = replace(payload, 'original', 'tampered')")
        with pytest.raises(StorageCorrupted):
            log.read("s")


@pytest.mark.postgres
def test_a_keyed_read_seeks_in_the_key_index(postgres_dsn, postgres_schema):
    """The prefix range is answered from the code point order index, not by scanning the session."""
    import psycopg

    from contextwright.log.base import key_prefix_range
    from contextwright.log.postgres import _READ_KEYED

    with PostgresEventLog(postgres_dsn, schema=postgres_schema, clock=FixedClock()) as log:
        log.append("s", [user(str(i), key=f"k{i % 7}:{i}") for i in range(50)], expected_seq=0)
        assert [e.payload.text for e in log.read_keyed("s", "k3:")] == ["3", "10", "17", "24", "31", "38", "45"]
        statement = log._sql(_READ_KEYED)
    with psycopg.connect(postgres_dsn, autocommit=True) as conn:
        conn.execute("SET enable_seqscan = off")  # a table this small would be scanned whatever the indexes
        plan = " ".join(r[0] for r in conn.execute(f"EXPLAIN {statement}", ("s", *key_prefix_range("k3:"))))
    assert "Index Scan using cw_events_idempotency_c" in plan and "idempotency_key" in plan.split("Index Cond:")[1], plan
