"""Errors of the HTTP service, in the project's tree.

::

    ContextwrightError
    └── ServiceError
        ├── Unauthenticated        no key, a malformed key, an unknown or revoked key
        ├── SessionNotFound        no such session for this tenant (another tenant's reads the same)
        ├── SessionExists          the id is taken by a session with another agent or model
        ├── KeyNotFound            ``keys revoke`` named a key that does not exist
        ├── LeaseBusy              another worker holds the session's compaction lease past the wait
        └── InvalidTenant (also UsageError)
"""

from __future__ import annotations

from contextwright.errors import ContextwrightError, UsageError


class ServiceError(ContextwrightError):
    """Root of the errors the HTTP service raises on purpose."""


class Unauthenticated(ServiceError):
    """The request carries no usable API key."""


class SessionNotFound(ServiceError):
    """The tenant has no session with this id."""


class SessionExists(ServiceError):
    """The session id is taken by a session opened with another agent spec or model."""


class KeyNotFound(ServiceError):
    """No API key has this id."""


class LeaseBusy(ServiceError):
    """Another worker holds the lease this operation needs (it is compacting the session); retry shortly."""


class InvalidTenant(ServiceError, UsageError):
    """A tenant name that is not lowercase letters, digits and dashes."""
