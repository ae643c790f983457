"""`relay-app chats`: the chats and topics the bot has seen, from getUpdates on the fake Telegram.

The updates are built as Telegram sends them (Bot API `Update` objects): a bot added to a group,
messages in a forum's topics, a channel post, a bot removed, a group upgraded to a supergroup.
"""

from __future__ import annotations

import io
from collections.abc import Iterator
from typing import Any

import pytest

from relay_app.cli import main
from relay_app.operating.chats import seen_chats
from tests.e2e.relay_process import free_port
from tests.fake_telegram import BOT, TOKEN, FakeTelegram, running_fake_telegram

GROUP: dict[str, Any] = {"id": -4012345678, "type": "group", "title": "Backend team"}
FORUM: dict[str, Any] = {
    "id": -1001234567890,
    "type": "supergroup",
    "title": "Ops",
    "is_forum": True,
}
CHANNEL: dict[str, Any] = {"id": -1009876543210, "type": "channel", "title": "Status"}
ADA = {"id": 4242, "is_bot": False, "first_name": "Ada", "username": "ada"}


class Updates:
    """Numbers updates as Telegram does, and builds the kinds `relay-app chats` reads."""

    def __init__(self) -> None:
        self.next_id = 700_000_001
        self.next_message = 1

    def _update(self, **body: Any) -> dict[str, Any]:
        update = {"update_id": self.next_id, **body}
        self.next_id += 1
        return update

    def _message(self, chat: dict[str, Any], **fields: Any) -> dict[str, Any]:
        message = {"message_id": self.next_message, "date": 1796000000, "chat": chat, **fields}
        self.next_message += 1
        return message

    def bot_added(self, chat: dict[str, Any], status: str = "member") -> dict[str, Any]:
        return self._update(
            my_chat_member={
                "chat": chat,
                "from": ADA,
                "date": 1796000000,
                "old_chat_member": {"user": BOT, "status": "left"},
                "new_chat_member": {"user": BOT, "status": status},
            }
        )

    def message(self, chat: dict[str, Any], text: str = "@relay_bot hello") -> dict[str, Any]:
        return self._update(message=self._message(chat, **{"from": ADA, "text": text}))

    def topic_created(self, chat: dict[str, Any], name: str) -> tuple[dict[str, Any], int]:
        """The service message that opens a topic: its id is the topic's id."""
        thread = self.next_message
        message = self._message(
            chat,
            message_thread_id=thread,
            is_topic_message=True,
            forum_topic_created={"name": name, "icon_color": 7322096},
        )
        return self._update(message=message), thread

    def topic_message(
        self, chat: dict[str, Any], thread: int, name: str | None = None
    ) -> dict[str, Any]:
        """A message in a topic; it replies to the topic's first message, which names it."""
        fields: dict[str, Any] = {
            "from": ADA,
            "text": "@relay_bot here",
            "message_thread_id": thread,
            "is_topic_message": True,
        }
        if name is not None:
            fields["reply_to_message"] = {
                "message_id": thread,
                "date": 1796000000,
                "chat": chat,
                "message_thread_id": thread,
                "is_topic_message": True,
                "forum_topic_created": {"name": name, "icon_color": 7322096},
            }
        return self._update(message=self._message(chat, **fields))

    def channel_post(self, chat: dict[str, Any]) -> dict[str, Any]:
        return self._update(channel_post=self._message(chat, text="hello"))

    def migrated(self, chat: dict[str, Any], to: int) -> dict[str, Any]:
        return self._update(message=self._message(chat, **{"from": ADA, "migrate_to_chat_id": to}))


@pytest.fixture
def fake() -> Iterator[FakeTelegram]:
    with running_fake_telegram() as fake:
        yield fake


def chats(environ: dict[str, str]) -> tuple[int, str, str]:
    out, err = io.StringIO(), io.StringIO()
    code = main(["chats"], environ=environ, out=out, err=err)
    assert TOKEN not in out.getvalue() + err.getvalue()
    return code, out.getvalue(), err.getvalue()


def env_for(fake: FakeTelegram) -> dict[str, str]:
    # Only the token (and where Telegram is): a first run has no chat id yet.
    return {"TELEGRAM_BOT_TOKEN": TOKEN, "TELEGRAM_API_URL": fake.url}


def test_a_group_the_bot_was_added_to_is_listed_with_the_line_to_set(fake: FakeTelegram) -> None:
    fake.updates = [Updates().bot_added(GROUP)]
    code, out, err = chats(env_for(fake))
    assert (code, err) == (0, "")
    assert out == (
        "Chats @relay_bot has seen (Telegram keeps a bot's updates for 24 hours):\n"
        "\n"
        "  ID           TYPE   TITLE\n"
        "  -4012345678  group  Backend team\n"
        "\n"
        "To send GlitchTip's alerts to one of them, paste one of these blocks into the shell "
        "that starts the relay (in a service's environment file, leave out 'export '):\n"
        "\n"
        "  # Backend team\n"
        "  export TELEGRAM_CHAT_ID='-4012345678'\n"
    )


def test_a_forum_lists_its_topics_by_id_and_name(fake: FakeTelegram) -> None:
    updates = Updates()
    created, alerts = updates.topic_created(FORUM, "Alerts")
    fake.updates = [
        updates.bot_added(FORUM),
        updates.message(FORUM),  # the General topic: no thread id
        created,
        updates.topic_message(FORUM, alerts),
        updates.topic_message(FORUM, 55, name="Deploys"),  # created before the bot came
        updates.topic_message(FORUM, 61),  # no update names this one
    ]
    code, out, _ = chats(env_for(fake))
    assert code == 0
    assert (
        "  ID              TYPE        TITLE\n"
        "  -1001234567890  supergroup  Ops (forum)\n"
        f"                  topic {alerts}     Alerts\n"
        "                  topic 55    Deploys\n"
        "                  topic 61    (name not seen)\n"
    ) in out
    assert (
        "  # Ops, topic Deploys\n  export TELEGRAM_CHAT_ID='-1001234567890'\n"
        "  export TELEGRAM_THREAD_ID='55'\n"
    ) in out
    assert (
        f"  # Ops, topic Alerts\n  export TELEGRAM_CHAT_ID='-1001234567890'\n"
        f"  export TELEGRAM_THREAD_ID='{alerts}'\n" in out
    )
    assert "  # Ops (its General topic)\n  export TELEGRAM_CHAT_ID='-1001234567890'\n" in out


def test_a_channel_says_the_bot_must_be_an_admin_there(fake: FakeTelegram) -> None:
    updates = Updates()
    fake.updates = [updates.bot_added(CHANNEL, "administrator"), updates.channel_post(CHANNEL)]
    code, out, _ = chats(env_for(fake))
    assert code == 0
    assert "  -1009876543210  channel  Status\n" in out
    assert (
        "  # Status (a channel: the bot must be an administrator allowed to post)\n"
        "  export TELEGRAM_CHAT_ID='-1009876543210'\n"
    ) in out


def test_several_chats_each_get_their_block_in_the_order_seen(fake: FakeTelegram) -> None:
    updates = Updates()
    fake.updates = [updates.bot_added(GROUP), updates.bot_added(CHANNEL, "administrator")]
    _, out, _ = chats(env_for(fake))
    assert out.index("TELEGRAM_CHAT_ID='-4012345678'") < out.index(
        "TELEGRAM_CHAT_ID='-1009876543210'"
    )


def test_with_no_updates_it_says_how_to_make_the_bot_see_the_chat(fake: FakeTelegram) -> None:
    code, out, _ = chats(env_for(fake))
    assert code == 1
    assert out.startswith("@relay_bot has seen no chat in the last 24 hours")
    assert "add the bot (group info → Add members → @relay_bot)" in out
    assert "send a\n    message in the group that mentions @relay_bot" in out
    assert "make the bot an administrator" in out
    assert "TELEGRAM_CHAT_ID" not in out


def test_a_webhook_set_on_the_bot_is_named_with_what_to_do(fake: FakeTelegram) -> None:
    fake.webhook_url = "https://bots.example.com/hook/its-own-secret-path"
    code, out, err = chats(env_for(fake))
    assert (code, out) == (1, "")
    assert err.startswith(
        "relay-app: error: Telegram refused getUpdates (409): Conflict: can't use getUpdates "
        "method while webhook is active"
    )
    assert "this bot has a Telegram webhook set (to bots.example.com)" in err
    assert "deleteWebhook" in err
    assert "give the relay a bot of its own" in err
    assert "its-own-secret-path" not in err


def test_reading_the_updates_confirms_none_of_them(fake: FakeTelegram) -> None:
    fake.updates = [Updates().bot_added(GROUP)]
    chats(env_for(fake))
    chats(env_for(fake))
    [first, second] = [r.body for r in fake.received if r.method == "getUpdates"]
    assert "offset" not in first
    assert "allowed_updates" not in first  # Telegram would keep it for every later caller
    assert first == second
    assert len(fake.updates) == 1


def test_it_needs_only_the_token_and_names_it_when_missing() -> None:
    code, out, err = chats({"TELEGRAM_CHAT_ID": "not read"})
    assert (code, out) == (2, "")
    assert err.startswith("relay-app: error: TELEGRAM_BOT_TOKEN: is not set;")


def test_a_wrong_token_and_an_unreachable_telegram_are_told_apart(fake: FakeTelegram) -> None:
    wrong = {**env_for(fake), "TELEGRAM_BOT_TOKEN": "987654321:AAE-not-the-token-the-fake-knows"}
    code, _, err = chats(wrong)
    assert code == 1
    assert "the token is wrong or revoked" in err
    code, _, err = chats({**env_for(fake), "TELEGRAM_API_URL": f"http://127.0.0.1:{free_port()}"})
    assert code == 1
    assert "Telegram cannot be reached from this host" in err


def test_a_removed_bot_and_an_upgraded_group_are_marked_and_offer_no_block() -> None:
    updates = Updates()
    supergroup = {"id": -1005555555555, "type": "supergroup", "title": "Backend team"}
    seen = seen_chats(
        [
            updates.bot_added(CHANNEL, "administrator"),
            updates.bot_added(GROUP),
            updates.migrated(GROUP, to=-1005555555555),
            updates.message(supergroup),
            updates.bot_added(CHANNEL, "kicked"),
        ]
    )
    by_id = {chat.id: chat for chat in seen}
    assert by_id[CHANNEL["id"]].bot_is_gone
    assert by_id[GROUP["id"]].migrated_to == -1005555555555
    assert not by_id[-1005555555555].bot_is_gone


def test_removed_and_upgraded_chats_are_shown_but_not_offered(fake: FakeTelegram) -> None:
    updates = Updates()
    fake.updates = [
        updates.bot_added(GROUP),
        updates.migrated(GROUP, to=-1005555555555),
        updates.bot_added(CHANNEL, "administrator"),
        updates.bot_added(CHANNEL, "left"),
    ]
    code, out, _ = chats(env_for(fake))
    assert code == 1
    assert "Backend team (became a supergroup: its id is now -1005555555555)" in out
    assert "Status (the bot is no longer in it: add it again)" in out
    assert "@relay_bot can post in none of them now." in out
    assert "TELEGRAM_CHAT_ID=" not in out
