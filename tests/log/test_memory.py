from contextwright.clock import FixedClock
from contextwright.log import InMemoryEventLog
from contextwright.testing.contract import EventLogContract


class TestInMemoryEventLog(EventLogContract):
    def make_log(self, clock: FixedClock) -> InMemoryEventLog:
        return InMemoryEventLog(clock=clock)

    def tamper(self, log: InMemoryEventLog, what: str, **details) -> None:
        if what != "artifact":
            raise NotImplementedError  # the in-memory log keeps no counter apart from its rows
        log._artifacts[details["ref"]] = details["content"]
