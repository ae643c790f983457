"""How `relay-app glitchtip connect` decides what to do with a project's alert rules
(glitchtip/connect.py): one rule of each kind sends to the relay, never two."""

from __future__ import annotations

from typing import Any

import pytest

from relay_app.glitchtip.api import ProjectPath
from relay_app.glitchtip.connect import RULE_NAME, plan_rule, webhook_url
from relay_app.operating.console import Usage

RELAY = "http://relay:8780"
URL = f"{RELAY}/webhook/new-secret"


def rule(rule_id: int, name: str, *urls: str, uptime: bool = False, **more: Any) -> dict[str, Any]:
    return {
        "id": rule_id,
        "name": name,
        "timespanMinutes": 1,
        "quantity": 1,
        "uptime": uptime,
        "alertRecipients": [
            {"id": n, "recipientType": more.get("kind", "webhook"), "url": url}
            for n, url in enumerate(urls)
        ],
    }


def plan(rules: list[dict[str, Any]], *, uptime: bool = False, force: bool = False) -> Any:
    return plan_rule(rules, name=RULE_NAME, uptime=uptime, url=URL, relay_url=RELAY, force=force)


def test_no_rule_of_the_kind_is_created() -> None:
    made = plan([rule(1, RULE_NAME, URL, uptime=True)])
    assert made.action == "create"
    assert made.body == {
        "name": RULE_NAME,
        "timespanMinutes": 1,
        "quantity": 1,
        "uptime": False,
        "alertRecipients": [{"recipientType": "webhook", "url": URL}],
    }


def test_a_rule_already_sending_here_is_kept_whoever_made_it() -> None:
    assert plan([rule(4, RULE_NAME, URL)]).action == "keep"
    made_in_the_ui = plan([rule(5, "Ops", "https://hooks.slack.com/x", URL)])
    assert (made_in_the_ui.action, made_in_the_ui.rule_id) == ("keep", 5)
    assert made_in_the_ui.why == "made elsewhere, already sends to this relay"


def test_the_relays_rule_with_an_old_secret_is_rewritten_keeping_its_other_recipients() -> None:
    old = rule(3, "Ops", "https://hooks.slack.com/x", f"{RELAY}/webhook/old-secret")
    rewritten = plan([rule(2, "Unrelated", "https://elsewhere.example/hook"), old])
    assert (rewritten.action, rewritten.rule_id) == ("update", 3)
    assert rewritten.body["alertRecipients"] == [
        {"id": 0, "recipientType": "webhook", "url": "https://hooks.slack.com/x"},
        {"recipientType": "webhook", "url": URL},
    ]
    assert rewritten.sent_to == (f"{RELAY}/webhook/old-secret",)


def test_a_rule_of_the_relays_name_at_another_relay_is_taken_only_with_force() -> None:
    elsewhere = "http://old-host:8780/webhook/s"
    refused = plan([rule(6, RULE_NAME, elsewhere)])
    assert (refused.action, refused.rule_id, refused.sent_to) == ("refuse", 6, (elsewhere,))
    forced = plan([rule(6, RULE_NAME, elsewhere)], force=True)
    assert (forced.action, forced.rule_id, forced.sent_to) == ("update", 6, (elsewhere,))
    assert forced.body["alertRecipients"] == [{"recipientType": "webhook", "url": URL}]


def test_the_relays_address_and_the_project_are_checked() -> None:
    assert webhook_url("http://relay:8780/", "s3cret") == "http://relay:8780/webhook/s3cret"
    for wrong in ("relay:8780", "http://relay:8780/webhook/s3cret", "http://relay/?chat_id=1"):
        with pytest.raises(Usage):
            webhook_url(wrong, "s3cret")
    assert ProjectPath.parse("acme/backend").api_path == "/api/0/projects/acme/backend"
    for wrong in ("acme", "acme/back end", "../x/y", "acme/backend/more"):
        with pytest.raises(ValueError, match="is not ORG/PROJECT"):
            ProjectPath.parse(wrong)
