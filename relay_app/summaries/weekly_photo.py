"""The weekly report as a picture: on a route's `report` day, once its summary is queued (due a
little later: daily.py's PICTURE_FIRST), the report's picture (report_chart.py) is drawn off
the upkeep's thread, on this process's one drawing thread (core/drawing.py's bounded process),
and queued as a photo due at once, so that it goes before the summary, in the place's turn, with
the report's first lines as its caption, the summary's text the message after. A picture that
cannot be drawn costs itself (logged at ERROR): the summary's text holds the report whole."""

from __future__ import annotations

import base64
import binascii
import html
import logging
from collections.abc import Callable, Mapping
from typing import Any
from zoneinfo import ZoneInfo

from ..core.drawing import draw
from ..core.errors import DrawingFailed, SpoolError, Unreadable
from ..core.off_thread import OffThread
from ..core.routing import Destination
from ..delivery.outbox import Outbox, chat_lane
from ..delivery.render import Photo, Renderer, Write
from ..spool.model import Job, Precedence
from ..telegram.courier import Picture
from ..words import Words
from .report import Report
from .report_chart import report_spec
from .report_text import report_lines

log = logging.getLogger(__name__)

KIND = "report_chart"
# Pictures waiting to be drawn in a process, at most (one a place a week).
WAITING = 8


class WeeklyPhotos:
    def __init__(
        self,
        outbox: Outbox,
        words: Words,
        *,
        names: Mapping[str, str] | None = None,
        drawing: Callable[[dict[str, Any]], bytes] = draw,
    ) -> None:
        """`names`: each place's route name, by its key, for the picture's places."""
        self._outbox = outbox
        self._words = words
        self._names = dict(names or {})
        self._draw = drawing
        self._worker = OffThread("relay-report-chart", threads=1, most_waiting=WAITING)

    def post(self, destination: Destination, report: Report, zone: ZoneInfo) -> None:
        """Draw the report's picture, then queue it to the place (off this thread)."""
        if not self._worker.submit(lambda: self._made(destination, report, zone)):
            log.warning(
                "the weekly report's picture of %s was not drawn: too many wait", destination
            )

    def shutdown(self) -> None:
        self._worker.shutdown()

    def _made(self, destination: Destination, report: Report, zone: ZoneInfo) -> None:
        try:
            png = self._draw(report_spec(report, self._words, zone, self._names))
        except DrawingFailed as exc:
            log.error("the weekly report's picture of %s was not drawn: %s", destination, exc)
            return
        chat = str(destination.chat)
        about = {
            "report_chart": {
                "png": base64.b64encode(png).decode("ascii"),
                "report": report.as_json(),
                "zone": zone.key,
            }
        }
        try:
            self._outbox.write(
                KIND,
                chat,
                destination.thread,
                0,
                about,
                Precedence.CALL,
                lane=chat_lane(chat, "report"),
            )
        except SpoolError as exc:
            log.warning("the weekly report's picture of %s was not queued: %s", destination, exc)


def write(job: Job, renderer: Renderer) -> Write | None:
    """The picture's job as it goes: the photo, captioned with the report's first lines."""
    kept = job.data.get("report_chart")
    if not isinstance(kept, dict) or not isinstance(kept.get("png"), str):
        raise Unreadable(f"report picture job {job.label} holds no picture")
    try:
        png = base64.b64decode(kept["png"], validate=True)
        report = Report.from_json(dict(kept["report"]))
        zone = ZoneInfo(str(kept["zone"]))
    except (binascii.Error, ValueError, TypeError, KeyError) as exc:
        raise Unreadable(f"report picture job {job.label} cannot be read: {exc}") from None
    lines = report_lines(report, renderer.words, zone)[:2]
    caption = html.escape("\n".join(lines), quote=False)
    chat = str(job.destination.chat)
    return Photo(Picture(png, caption, caption, said=f"the weekly report's picture to {chat}"))
