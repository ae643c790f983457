"""An on-call handoff's message (oncall/handoffs.py keeps its data): the rotation, who is on
call now, called by name as a route's mention is, until when in the rotation's zone, and who
comes next. Made from the data its job keeps when it is sent, in the chat's language. Pure
functions, no I/O."""

from __future__ import annotations

import html
from collections.abc import Mapping
from datetime import datetime
from typing import Any
from zoneinfo import ZoneInfo

from ..delivery.render import Shape
from ..message.formatting import Message, shown_mention
from ..message.open_issues import OpenIssue, open_lines
from ..words import Words


def handoff_message(about: Mapping[str, Any], words: Words) -> Message:
    zone = ZoneInfo(str(about.get("zone") or "UTC"))
    until = datetime.fromtimestamp(float(about["until"]), zone)
    person_html, person_text = shown_mention(str(about["person"]), words)
    if about.get("covering"):
        # Whose turn a cover takes: said, not called (they are off).
        covering = words.oncall_covering.format(person=str(about["covering"]))
        person_html, person_text = person_html + html.escape(covering), person_text + covering
    next_html, next_text = shown_mention(str(about["next"]), words)
    fields = {"rotation": str(about["rotation"]), "until": f"{until:%d.%m %H:%M} ({zone.key})"}
    text = words.handoff.format(**fields, person=person_text, next=next_text)
    # The template escaped with the people held out, then their HTML (a link for tg:<id>) put in.
    held = html.escape(words.handoff.format(**fields, person="\x00", next="\x01"), quote=False)
    shown = held.replace("\x00", person_html).replace("\x01", next_html)
    if "open_count" in about:  # what the person taking over finds open there
        issues = [OpenIssue(**issue) for issue in about.get("open", [])]
        still = "\n".join(open_lines(int(about["open_count"]), issues, words))
        text += f"\n\n{still}"
        shown += f"\n\n{html.escape(still, quote=False)}"
    return Message(html=shown, text=text, fallback=text)


# An on-call handoff, as its job holds it: one alert of the routes' places.
SHAPE = Shape("handoff", lambda job, renderer: handoff_message(job.data["handoff"], renderer.words))
