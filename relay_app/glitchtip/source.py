"""GlitchTip as a source of alerts, as the core reads its issues: ids kept bare (it was the
relay's first source), links `<domain>/<org_slug>/issues/<id>`, and each button acting in the
organization its link names."""

from __future__ import annotations

import re

from ..core.sources import Source
from .webhook import read_heading, read_kept, read_webhook

GLITCHTIP = Source(
    name="glitchtip",
    shown="GlitchTip",
    prefix="",
    issue_path=re.compile(r"/issues/(?P<number>[0-9]{1,20})/?$"),
    org_in_link=True,
    reads_webhook=read_webhook,
    reads_kept_bodies=read_kept,
    # Its webhooks name a project by its name, and head an alert of one issue 'GlitchTip'.
    project_named_by="name",
    card_heading="GlitchTip",
    reads_heading=read_heading,
)
