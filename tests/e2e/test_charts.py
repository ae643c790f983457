"""Charts end to end: the real `gunicorn wsgi:app` with the fake Telegram (sendPhoto as multipart
form data, editMessageCaption, its refusals) and the fake GlitchTip's stats. 📈 under a card and
`/chart` answer with a PNG photo under the message that carries the issue's buttons; Resolve on
the photo edits its caption; a chat where the bot may not send photos gets the chart's text."""

from __future__ import annotations

import time

import requests

from tests.e2e.conftest import StartRelay
from tests.e2e.helpers import (
    CHAT_SCALE,
    alert_for,
    answered,
    card_kept,
    labels,
    once_edited,
    only_message,
    post,
    wait_until,
)
from tests.e2e.relay_process import CHAT_ID
from tests.fake_glitchtip import TOKEN, FakeGlitchTip
from tests.fake_telegram import PNG_SIGNATURE, FakeTelegram, Posted
from tests.prometheus import parse, value

# Drawing takes a process start and matplotlib's import: about a second, a few on a busy host.
DRAWN_WITHIN = 30.0


def _with_events(fake_glitchtip: FakeGlitchTip, issue: int) -> None:
    hour = int(time.time() // 3600) * 3600
    fake_glitchtip.hourly[str(issue)] = [[hour - 3600 * n, 3 + n % 4] for n in range(0, 30, 2)]


def _photo_under(fake: FakeTelegram, card: Posted, count: int = 1) -> Posted:
    """The `count`-th message the relay posted in reply to `card` (a chart, or its text)."""

    def replies() -> list[Posted]:
        return [m for m in fake.posted_to(CHAT_ID) if m.reply_to == card.message_id]

    assert wait_until(lambda: len(replies()) >= count, DRAWN_WITHIN), fake.texts()
    return replies()[count - 1]


def test_the_chart_button_posts_a_photo_card_whose_caption_its_buttons_edit(
    start_relay: StartRelay,
    fake_telegram: FakeTelegram,
    fake_glitchtip: FakeGlitchTip,
    spool_path: str,
) -> None:
    relay = start_relay(
        GLITCHTIP_API_TOKEN=TOKEN, GLITCHTIP_URL=fake_glitchtip.url, RELAY_TIME_SCALE=CHAT_SCALE
    )
    payload = alert_for(fake_glitchtip, 4)
    _with_events(fake_glitchtip, 4)
    reply, _ = post(relay.webhook_url, payload)
    assert reply.status_code == 200
    card = only_message(fake_telegram)
    assert wait_until(lambda: card_kept(spool_path, card), timeout=10)
    answer = answered(fake_telegram, fake_telegram.press(card, "📈"))
    assert answer["text"] == "📈 The chart of BACKEND-4A is on its way"

    photo = _photo_under(fake_telegram, card)
    assert photo.photo is not None
    assert photo.photo.startswith(PNG_SIGNATURE)
    [sent] = fake_telegram.photos_sent
    assert sent["caption"] == photo.text  # multipart: the caption a form field, the PNG a file
    # The issue's short id and the title its card shows, then its counts from the stats.
    assert photo.visible().splitlines()[:2] == [
        "📈 BACKEND-4A ZeroDivisionError: division by zero #4",
        "Events: 48 in 24 h, 59 in 7 days",
    ]
    assert labels(photo) == ["👀 On it", "✅ Resolve", "🔕 Ignore…", "🔇 Mute 1 h", "📈"]
    # Asked by day as by hour (which the watcher asks too), as GlitchTip answers: issues-stats.
    by_day = [r.path for r in fake_glitchtip.requests if "statsPeriod=14d" in r.path]
    assert by_day == ["/api/0/organizations/acme/issues-stats/?groups=4&statsPeriod=14d"]

    assert wait_until(lambda: card_kept(spool_path, photo), timeout=10)
    answer = answered(fake_telegram, fake_telegram.press(photo, "✅ Resolve"))
    assert answer["text"] == "Resolved BACKEND-4A in GlitchTip"
    edited = once_edited(fake_telegram, photo, r"✅ Resolved by @ada at \d\d:\d\d UTC$")
    assert labels(edited) == ["↩️ Reopen", "🔇 Mute 1 h", "📈"]
    assert edited.photo == photo.photo  # a caption's edit: the picture stays
    methods = {e["method"] for e in fake_telegram.edits if e["message_id"] == photo.message_id}
    assert methods == {"editMessageCaption"}
    # The card the chart answers is in step too: one issue, one state.
    once_edited(fake_telegram, card, r"✅ Resolved by @ada at \d\d:\d\d UTC$")

    # /chart by short id, within the minute: the same picture, by the file_id Telegram gave it.
    asked = fake_telegram.say(CHAT_ID, "/chart backend-4a", user_id=77, username="bo")
    again = _photo_under_message(fake_telegram, asked)
    assert again.photo == photo.photo
    first, second = fake_telegram.requests_for("sendPhoto")
    assert isinstance(first["photo"], bytes)  # uploaded as a file of the form
    assert second["photo"] == sent_file_id(fake_telegram)  # named, as JSON
    samples = parse(metrics_of(relay.url))
    assert value(samples, "relay_charts_total", outcome="drawn") == 1
    assert value(samples, "relay_charts_total", outcome="cached") == 1
    assert value(samples, "relay_charts_total", outcome="sent") == 2


def _photo_under_message(fake: FakeTelegram, message_id: int) -> Posted:
    def replies() -> list[Posted]:
        return [m for m in fake.posted_to(CHAT_ID) if m.reply_to == message_id]

    assert wait_until(lambda: bool(replies()), DRAWN_WITHIN), fake.texts()
    return replies()[0]


def sent_file_id(fake: FakeTelegram) -> str:
    """The file_id Telegram gave the first photo it took."""
    return next(name for name in fake.files if not name.endswith("-small"))


def metrics_of(url: str) -> str:
    return requests.get(f"{url}/metrics", timeout=5).text


def test_a_chat_that_takes_no_photos_gets_the_charts_text_and_nothing_is_lost(
    start_relay: StartRelay,
    fake_telegram: FakeTelegram,
    fake_glitchtip: FakeGlitchTip,
    spool_path: str,
) -> None:
    fake_telegram.add_chat(CHAT_ID, forum=False, rights={"can_send_photos": False})
    relay = start_relay(
        GLITCHTIP_API_TOKEN=TOKEN, GLITCHTIP_URL=fake_glitchtip.url, RELAY_TIME_SCALE=CHAT_SCALE
    )
    payload = alert_for(fake_glitchtip, 5)
    _with_events(fake_glitchtip, 5)
    post(relay.webhook_url, payload)
    card = only_message(fake_telegram)
    assert wait_until(lambda: card_kept(spool_path, card), timeout=10)
    fake_telegram.press(card, "📈")
    text = _photo_under(fake_telegram, card)
    assert text.photo is None
    lines = text.visible().splitlines()
    assert lines[0] == "📈 BACKEND-5A ZeroDivisionError: division by zero #5"
    assert lines[-1].startswith("Last 24 h: ")
    assert labels(text) == ["👀 On it", "✅ Resolve", "🔕 Ignore…", "🔇 Mute 1 h", "📈"]
    [tried] = fake_telegram.requests_for("sendPhoto")  # as a photo first, refused
    assert tried["photo"].startswith(PNG_SIGNATURE)
    # Its buttons work as a card's, edited as text.
    assert wait_until(lambda: card_kept(spool_path, text), timeout=10)
    answered(fake_telegram, fake_telegram.press(text, "✅ Resolve"))
    once_edited(fake_telegram, text, r"✅ Resolved by @ada at \d\d:\d\d UTC$")
    methods = {e["method"] for e in fake_telegram.edits if e["message_id"] == text.message_id}
    assert methods == {"editMessageText"}
    samples = parse(metrics_of(relay.url))
    assert value(samples, "relay_charts_total", outcome="as_text") == 1
