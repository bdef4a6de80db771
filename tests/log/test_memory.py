from contextwright.clock import FixedClock
from contextwright.log import InMemoryEventLog
from contextwright.testing.contract import EventLogContract


class TestInMemoryEventLog(EventLogContract):
    def make_log(self, clock: FixedClock) -> InMemoryEventLog:
        return InMemoryEventLog(clock=clock)
