"""What on call counts: its escalation steps and its handoffs (registered in plugin.py)."""

from __future__ import annotations

from ..core.metrics import CounterSpec

ESCALATION_STEPS = CounterSpec(
    "relay_escalation_steps",
    (
        "Escalation steps of routes (docs/oncall.md), by outcome: fired (a reply under the "
        "alert called their people), stopped (someone acted on the alert first), recalled "
        "(a taker who went quiet past take_for called) or lapsed (their take ended)"
    ),
    ("outcome",),
    ("fired", "stopped", "recalled", "lapsed"),
)

HANDOFFS = CounterSpec(
    "relay_handoffs",
    (
        "On-call handoffs said in the chat (a rotation's announce), once a handoff per place "
        "for the fleet"
    ),
)
