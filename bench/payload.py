"""The webhook the benchmarks post: an issue alert as GlitchTip sends it, 3 issues of 12."""

import copy
from typing import Any

from tests.payloads import issue, issue_alert

PAYLOAD = issue_alert(issue(1), issue(2), issue(3), total=12)


def with_new_issue(title: str, number: int) -> dict[str, Any]:
    """The payload with its first issue a new one each time: its own title, and its own link
    (a backlog's digest shows one line per issue, and counts the same link once)."""
    payload = copy.deepcopy(PAYLOAD)
    payload["attachments"][0]["title"] = title
    payload["attachments"][0]["title_link"] = f"https://glitchtip.example.org/acme/issues/{number}"
    return payload
