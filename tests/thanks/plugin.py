"""Thanks, as a capability: all it adds, in one declaration."""

from __future__ import annotations

from relay_app.cards.card import Button
from relay_app.cards.verbs import Pressed
from relay_app.core.errors import Unreadable
from relay_app.core.metrics import CounterSpec
from relay_app.delivery.render import Renderer, ReplyUnder, Writer
from relay_app.operating.capability import Capability, Core, Running
from relay_app.spool.model import Job
from relay_app.words import Said

from .store import ThanksStore

THANKS = Button("thanks", "k", "button_thanks", lambda button: True)
THANKED = CounterSpec("relay_thanks", "Thanks said from a card's button", ("outcome",), ("said",))
KIND = "thanks"


def _write(job: Job, renderer: Renderer) -> ReplyUnder:
    """The reply under the card, in the chat's language when it goes."""
    try:
        values = {"user": str(job.data["user"]), "count": str(int(job.data["count"]))}
        message_id = int(job.data["message_id"])
    except (KeyError, TypeError, ValueError) as exc:
        raise Unreadable(f"a thanks without {exc}") from None
    text = Said("thanks_said", values).text(renderer.words)
    return ReplyUnder(str(job.destination.chat), job.destination.thread, message_id, text)


def _start(core: Core) -> Running:
    store = core.shared.of(ThanksStore)
    counted = core.metrics.of(THANKED)

    def thank(pressed: Pressed) -> None:
        message = pressed.message
        count = store.thank(message.chat, message.message_id, pressed.by_id, now=core.clock())
        about = {"user": pressed.by, "count": count}
        core.outbox.write(KIND, message.chat, message.thread, message.message_id, about)
        counted.labels("said").inc()
        pressed.count("thanked")
        pressed.answer(pressed.words.word("thanks_answer"), False)

    return Running(presses={THANKS.verb: thank})


CAPABILITY = Capability(
    "thanks",
    counters=(THANKED,),
    buttons=(THANKS,),
    writers=(Writer(KIND, _write),),
    words={
        "en": {
            "button_thanks": "🙏 Thanks",
            "thanks_answer": "Thanked",
            "thanks_said": "🙏 {user} says thanks ({count})",
        },
        "ru": {
            "button_thanks": "🙏 Спасибо",
            "thanks_answer": "Спасибо сказано",
            "thanks_said": "🙏 {user} говорит спасибо ({count})",
        },
    },
    tables=("thanks",),
    start=_start,
)
