"""What can go wrong, said in the relay's own terms: delivering to Telegram, and keeping alerts.

`telegram.py` is the one place that turns requests' exceptions and Telegram's replies into the
delivery errors, and `spool/database.py` the one place that turns SQLite's into the spool
errors; everything above them decides only between "try again later" and "never going to work".
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal

from .routing import ChatId


class DeliveryError(Exception):
    """Telegram did not accept the message."""

    # Telegram's error_code when Telegram itself answered (429, 500, 400, ...); None when the
    # network failed first. Metrics and logs report it.
    error_code: int | None = None


class RetryableDeliveryError(DeliveryError):
    """Worth another attempt: network trouble, a timeout, a 5xx, a garbled reply or a 429."""

    def __init__(
        self,
        message: str,
        *,
        retry_after: float | None = None,
        maybe_delivered: bool = True,
        error_code: int | None = None,
    ) -> None:
        super().__init__(message)
        self.error_code = error_code
        # Telegram's own minimum pause (from a 429); retrying sooner only earns another 429.
        self.retry_after = retry_after
        # sendMessage is not idempotent: a request that was sent and then timed out or lost its
        # connection may have been posted, and retrying it may post it twice. False only when
        # the request certainly never reached Telegram (refused, unresolvable, connect timeout,
        # 429), or when the method cannot post anything twice (an edit, a reaction: the
        # Telegram client's POSTING_METHODS), which makes a retry free of that risk.
        self.maybe_delivered = maybe_delivered


class RateLimited(RetryableDeliveryError):
    """Telegram's 429: too many messages; nothing was posted, and it names the pause it wants."""

    def __init__(self, message: str, *, retry_after: float | None) -> None:
        super().__init__(message, retry_after=retry_after, maybe_delivered=False, error_code=429)


def says_telegram_is_failing(error: BaseException) -> bool:
    """Network trouble, a timeout, a 5xx: Telegram may be down. A 429 or a refusal is Telegram
    answering, however unwelcome the answer."""
    return isinstance(error, RetryableDeliveryError) and not isinstance(error, RateLimited)


class PermanentDeliveryError(DeliveryError):
    """Telegram refused the request and will refuse it again (bad token, bot kicked, ...)."""

    def __init__(self, message: str, *, error_code: int, description: str) -> None:
        super().__init__(message)
        self.error_code = error_code
        self.description = description


class MarkupRejected(PermanentDeliveryError):
    """Telegram could not parse our HTML or found it too long; plain text will still go through."""


class ChatMigrated(PermanentDeliveryError):
    """The group became a supergroup with a new id; the same message goes through there."""

    def __init__(
        self, message: str, *, error_code: int, description: str, new_chat_id: ChatId
    ) -> None:
        super().__init__(message, error_code=error_code, description=description)
        self.new_chat_id = new_chat_id


class ThreadNotFound(PermanentDeliveryError):
    """The forum topic does not exist (deleted, or a wrong id): the chat itself still works."""


class SpoolError(Exception):
    """The spool cannot be used right now: not openable, read-only, full disk, corrupt."""


class SpoolBusy(SpoolError):
    """Another connection held the spool's lock past the caller's budget. Contention, not
    damage: the spool still counts as usable."""


class SpoolMissing(SpoolError):
    """There is no spool where a person's tool looked (relay-app never creates one)."""


class SpoolOutdated(SpoolError):
    """An older relay_app wrote the file; only the service upgrades it (relay-app does not)."""


class Unreadable(ValueError):
    """A job whose data this relay cannot read (a person's edit of the spool, say)."""


class QueueFull(Exception):
    """The queue holds as many pending alerts as it may (RELAY_SPOOL_MAX_PENDING on disk,
    MAX_MEMORY_ALERTS in memory)."""


@dataclass(frozen=True)
class SourceSetup:
    """What an operator's fix names of the source whose API refused: its name, its token's
    variable, its address's, how to make a token, and what a token that may not change issues
    lacks (cards/notices.py). Each source's package declares its own."""

    name: str
    token: str
    url: str
    new_token: str
    lacking: str


class TrackerError(Exception):
    """A tracker's API (GlitchTip's, Sentry's) did not do what a press, a reply or a look-up
    asked. The message is for the relay's log; `detail` is what the tracker said (or where it
    redirected), for the notice the person in the chat gets (cards/notices.py), in the chat's
    language; `setup` is whose API it was, as the operator's fix names it (None: no API was
    asked, the relay itself could not)."""

    def __init__(
        self,
        message: str,
        *,
        detail: str = "",
        status: int | None = None,
        setup: SourceSetup | None = None,
    ) -> None:
        super().__init__(message)
        self.detail = detail
        self.status = status
        self.setup = setup


# Why a tracker could not be reached at all: no answer in time, a refused connection, its
# address's host not resolved, another network failure.
Unreached = Literal["timeout", "refused", "unresolvable", "connection"]


class TrackerUnreachable(TrackerError):
    """The tracker is down, restarting, slow, or behind a proxy that failed: try again later.
    `cause` says why it was not reached; None when it answered with a failure (a 5xx)."""

    def __init__(
        self,
        message: str,
        *,
        cause: Unreached | None = None,
        detail: str = "",
        status: int | None = None,
        setup: SourceSetup | None = None,
    ) -> None:
        super().__init__(message, detail=detail, status=status, setup=setup)
        self.cause = cause


class TrackerRedirected(TrackerError):
    """The tracker's address answers with a redirect, which the relay does not follow (the
    token would go wherever it points); `detail` is where to."""


class TokenRefused(TrackerError):
    """The tracker's token is wrong or revoked (GlitchTip answers a bad token's PUT with 403
    "CSRF check Failed", its GET with 401)."""


class ScopeMissing(TrackerError):
    """The token is valid but lacks the scope a status change needs."""


class IssueGone(TrackerError):
    """No such issue for the token's user: deleted, or in an organization it is not in."""


class DrawingFailed(Exception):
    """A picture could not be drawn within its bounds (time, memory), or its drawing process
    failed: what it would have shown goes as text."""
