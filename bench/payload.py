"""The webhook the benchmarks post: an issue alert as GlitchTip sends it, 3 issues of 12."""

from tests.payloads import issue, issue_alert

PAYLOAD = issue_alert(issue(1), issue(2), issue(3), total=12)
