"""Part of the queue stage: a queued alert given its issues' details from their source's API
when they come within their budget (the one way details reach a message: an alert waits for
them, within RELAY_DETAILS_BUDGET, and one that waits its turn gets them whenever they come
before it goes). What the webhook itself said of its issues (Sentry's event) is what the
look-ups fill in."""

from __future__ import annotations

import logging
import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass, replace
from typing import Any

from ..core.alerts import ALERT_KEY, Alert, Issue, IssueAlert, alert_as_json
from ..core.issue_details import IssueDetails, details_as_json, details_by_issue, filled
from ..core.lookups import Lookups, scoped
from ..core.routing import Destination
from ..core.sources import Sources
from ..message.subjects import IssueHomes, Subjects, issue_ref
from ..spool.model import Job
from .queue import AlertQueue
from .receive import Received

log = logging.getLogger(__name__)


class Detailed:
    """The queue stage with the issues' details: an alert queued with those known now, due
    when the rest come within their budget, or when the budget is spent."""

    def __init__(
        self,
        queue: AlertQueue,
        lookups: Lookups | None,
        homes: IssueHomes,
        sources: Sources,
    ) -> None:
        """`lookups`: where each source's issues' details are asked for (None: not at all);
        `homes`: where each source's issues must be to be looked up (its own)."""
        self._queue = queue
        self._lookups = lookups
        self._homes = homes
        self._sources = sources

    def queued(
        self,
        part: Received,
        called: Mapping[str, Any],
        subjects: Subjects,
        text: str,
        destination: Destination,
    ) -> Job | None:
        """The alert's job, with its issues' details that are known now. Without a first
        attempt of its webhook's (`part.attempt` False), the webhook's answer does not wait
        for them."""
        about: dict[str, Any] = {ALERT_KEY: alert_as_json(part.alert), **called}
        started, by, attempt = part.started, part.deadline, part.attempt
        keys = self._detail_keys(subjects)
        if self._lookups is None or not keys:
            return self._queue.admit(about, destination, by=by, text=text, held=attempt)
        found = _Found(part.alert, details_by_issue(called.get("details")), keys, self._sources)
        known = self._lookups.within(list(keys.values()), 0.0)
        coming = [key for key in keys.values() if key not in known]
        about |= found.with_details(known)
        due_in = self._lookups.budget if coming else 0.0
        job = self._queue.admit(about, destination, by=by, text=text, due_in=due_in, held=attempt)
        if job is not None and coming:
            if attempt:
                self._wait_for_details(job, found, coming, dict(known), by, started)
            else:
                self._given_later(job, found, coming, dict(known))
        return job

    def _detail_keys(self, subjects: Subjects) -> dict[str, str]:
        """The look-up key of each of the alert's issues whose details their source's API is
        asked for, by the relay's id of it: those of a source's own (the issues that get
        buttons: `homes`), a GlitchTip issue as the organization its link names (a webhook may
        name any link: it is read as that organization's, or not at all), a Sentry issue by
        its id (its alert came signed)."""
        if self._lookups is None:
            return {}
        return {
            issue.id: scoped(issue.org, issue.id) if issue.org else issue.id
            for issue in subjects.issues
            if self._homes.owns(issue)
        }

    def _wait_for_details(
        self,
        job: Job,
        found: _Found,
        coming: list[str],
        known: dict[str, IssueDetails],
        by: float,
        started: float,
    ) -> None:
        """Wait for the details still coming, within the budget from the webhook's arrival
        and by its deadline, and add what came to the job; what comes later is added while it
        waits its turn."""
        assert self._lookups is not None
        until = min(started + self._lookups.budget, by)
        try:
            came = self._lookups.within(coming, max(0.0, until - time.monotonic()))
        except Exception:  # a bug here must not cost the alert: it goes without them
            log.exception("looking up the details of issue(s) %s failed", ", ".join(coming))
            return
        known.update(came)
        # Due now, with what came: the budget is spent.
        self._queue.merge(job, found.with_details(known), wake=False)
        missing = [key for key in coming if key not in came]
        if missing:
            self._given_later(job, found, missing, known)

    def _given_later(
        self, job: Job, found: _Found, coming: list[str], known: dict[str, IssueDetails]
    ) -> None:
        """The details still coming, given to the job while it waits its turn (due at once)."""
        assert self._lookups is not None

        def later(came: Mapping[str, IssueDetails]) -> None:
            if came:
                self._queue.merge(job, found.with_details({**known, **came}))

        self._lookups.when_known(coming, later)


@dataclass(frozen=True)
class _Found:
    """An alert and the details its webhook gave of its issues itself (by issue id), to which
    its sources' answers add: what a job keeps of them."""

    alert: Alert
    given: Mapping[str, IssueDetails]
    # Each issue's look-up key, by the relay's id of it.
    keys: Mapping[str, str]
    sources: Sources

    def with_details(self, looked_up: Mapping[str, IssueDetails]) -> dict[str, Any]:
        """The job's `details` by issue (the webhook's own, filled in by those looked up by
        key), and its alert, naming each issue's short id where it did not and its source
        does."""
        details = {issue: looked_up[key] for issue, key in self.keys.items() if key in looked_up}
        for issue, own in self.given.items():
            details[issue] = filled(own, details[issue]) if issue in details else own
        return {
            "details": {issue: details_as_json(found) for issue, found in details.items()},
            ALERT_KEY: alert_as_json(self._short_ids_named(details)),
        }

    def _short_ids_named(self, details: Mapping[str, IssueDetails]) -> Alert:
        """The alert naming the short ids its source gave of its issues where it did not (a
        Sentry event alert names none): what every reader of the job then reads."""
        alert = self.alert
        if not isinstance(alert, IssueAlert):
            return alert
        source = self.sources.named(alert.source)

        def short_id_of(link: str) -> str | None:
            ref = issue_ref(link, None, source=source)
            known = details.get(ref.id) if ref is not None else None
            return known.short_id if known is not None else None

        return with_short_ids(alert, short_id_of)


def with_short_ids(alert: Alert, short_id_of: Callable[[str], str | None]) -> Alert:
    """The alert naming its issues' short ids where it did not and `short_id_of` knows them
    (by the issue's link); never in place of one it named (GlitchTip's own webhook names
    them)."""
    if not isinstance(alert, IssueAlert):
        return alert

    def named(issue: Issue) -> Issue:
        if issue.short_id or not issue.link:
            return issue
        short_id = short_id_of(issue.link)
        return replace(issue, short_id=short_id) if short_id else issue

    issues = tuple(named(issue) for issue in alert.issues)
    return alert if issues == alert.issues else replace(alert, issues=issues)
