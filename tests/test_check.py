"""`relay-app check` and `relay-app preview`, against the fake Telegram on 127.0.0.1."""

from __future__ import annotations

import io
import json
import re
import secrets
import sqlite3
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from relay_app.cli import main
from relay_app.core.logs import REDACTED, redact, redacted_url
from relay_app.glitchtip.webhook import read_kept
from relay_app.message.formatting import format_alert
from relay_app.message.spans import visible_length
from relay_app.spool import open_spool
from relay_app.spool.legacy_sqlite import STEPS
from relay_app.telegram.updates_webhook import fingerprint, telegram_secret_token
from relay_app.words import ENGLISH, RUSSIAN
from tests.conftest import put_in_spool
from tests.e2e.relay_process import free_port
from tests.fake_glitchtip import FakeGlitchTip, running_fake_glitchtip
from tests.fake_telegram import TOKEN, FakeTelegram, running_fake_telegram
from tests.payloads import issue, issue_alert
from tests.postgres import PASSWORD

CHAT = "-1001234567890"
OTHER_CHAT = "-1009876543210"
TOPIC = 77
SECRET = "check-test-webhook-secret-0123456789"


@pytest.fixture
def fake() -> Iterator[FakeTelegram]:
    """The bot is in both chats; the default one is a forum with topic 77."""
    with running_fake_telegram() as fake:
        fake.add_chat(CHAT)
        fake.add_chat(OTHER_CHAT, forum=False)
        yield fake


def environment(fake: FakeTelegram, spool_path: str, **overrides: str) -> dict[str, str]:
    return {
        "TELEGRAM_BOT_TOKEN": TOKEN,
        "TELEGRAM_CHAT_ID": CHAT,
        "TELEGRAM_THREAD_ID": str(TOPIC),
        "TELEGRAM_ALLOWED_CHAT_IDS": OTHER_CHAT,
        "TELEGRAM_API_URL": fake.url,
        "RELAY_WEBHOOK_SECRET": SECRET,
        "RELAY_SEND_TIMEOUT": "2",
        "RELAY_SPOOL_PATH": spool_path,
        **overrides,
    }


def check(environ: dict[str, str], *argv: str) -> tuple[int, list[str]]:
    out, err = io.StringIO(), io.StringIO()
    code = main(["check", *argv], environ=environ, out=out, err=err)
    output = out.getvalue() + err.getvalue()
    assert TOKEN not in output
    assert environ.get("TELEGRAM_BOT_TOKEN", TOKEN) not in output
    return code, output.splitlines()


def line_for(lines: list[str], check_name: str) -> str:
    [line] = [line for line in lines if line.split(None, 1)[1].startswith(f"{check_name}:")]
    return line


def test_a_working_configuration_passes_every_check(fake: FakeTelegram, spool_path: str) -> None:
    code, lines = check(environment(fake, spool_path))
    assert code == 0
    assert [line.split(":")[0] for line in lines] == [
        "ok    configuration",
        "ok    sources",
        "ok    spool",
        "ok    token",
        f"ok    chat {CHAT}",
        f"ok    topic {TOPIC} of chat {CHAT}",
        f"ok    chat {OTHER_CHAT}",
    ]
    # Each source's state: GlitchTip's webhook alone here, and no Sentry.
    assert line_for(lines, "sources") == (
        "ok    sources: GlitchTip: alerts only (no GLITCHTIP_API_TOKEN: no buttons); Sentry off"
        " (no SENTRY_CLIENT_SECRET); no presses (no source's token)"
    )
    assert "the bot is @relay_bot" in line_for(lines, "token")
    assert "does not exist yet; the relay creates it" in line_for(lines, "spool")
    assert fake.messages == []  # nothing is posted without --send


def test_send_posts_a_test_message_to_the_default_topic(
    fake: FakeTelegram, spool_path: str
) -> None:
    code, lines = check(environment(fake, spool_path), "--send")
    assert code == 0
    assert lines[-1].startswith(f"ok    test message: posted to chat {CHAT} topic {TOPIC}")
    [message] = fake.messages
    assert (message["chat_id"], message["message_thread_id"]) == (int(CHAT), TOPIC)
    assert message["text"] == ENGLISH.test_message


def test_send_posts_the_test_message_in_the_chats_language(
    fake: FakeTelegram, spool_path: str
) -> None:
    code, _ = check(environment(fake, spool_path, RELAY_LANGUAGE="ru"), "--send")
    assert code == 0
    [message] = fake.messages
    assert message["text"] == RUSSIAN.test_message
    assert message["text"].startswith("✅ <b>Проверка связи от relay_app</b>")


def test_a_wrong_token_fails_with_a_hint_and_never_shows_the_token(
    fake: FakeTelegram, spool_path: str
) -> None:
    wrong = "987654321:another-token-abcdefghijklmnopq"
    code, lines = check(environment(fake, spool_path, TELEGRAM_BOT_TOKEN=wrong))
    assert code == 1
    token = line_for(lines, "token")
    assert token.startswith("FAIL  token: Telegram refused getMe (401): Unauthorized")
    assert "copy it again from @BotFather" in token
    assert line_for(lines, "chats").startswith("FAIL  chats: not checked")


def test_a_chat_the_bot_is_not_in_fails_with_a_hint(fake: FakeTelegram, spool_path: str) -> None:
    stranger = "-1005555555555"
    code, lines = check(environment(fake, spool_path, TELEGRAM_ALLOWED_CHAT_IDS=stranger))
    assert code == 1
    line = line_for(lines, f"chat {stranger}")
    assert line.startswith(f"FAIL  chat {stranger}: Telegram refused getChat (400): ")
    assert "chat not found" in line
    assert "add the bot to the group" in line


def test_a_bot_that_left_a_public_group_fails(fake: FakeTelegram, spool_path: str) -> None:
    fake.add_chat(OTHER_CHAT, status="left")  # getChat still answers for public groups
    code, lines = check(environment(fake, spool_path))
    assert code == 1
    line = line_for(lines, f"chat {OTHER_CHAT}")
    assert "the bot is not a member, and cannot post there" in line
    assert "add the bot to the group again" in line


def test_a_channel_needs_the_bot_as_an_admin(fake: FakeTelegram, spool_path: str) -> None:
    fake.add_chat(OTHER_CHAT, kind="channel", forum=False, status="member")
    code, lines = check(environment(fake, spool_path))
    assert code == 1
    assert "make the bot an administrator of the channel" in line_for(lines, f"chat {OTHER_CHAT}")


def test_a_migrated_group_names_its_new_id(fake: FakeTelegram, spool_path: str) -> None:
    old = "-4001234"
    fake.migrated[old] = -1004001234
    code, lines = check(environment(fake, spool_path, TELEGRAM_ALLOWED_CHAT_IDS=old))
    assert code == 1
    line = line_for(lines, f"chat {old}")
    assert "upgraded to a supergroup" in line
    assert "set TELEGRAM_CHAT_ID (or TELEGRAM_ALLOWED_CHAT_IDS and GlitchTip's ?chat_id=) to " in (
        line
    )
    assert line.endswith("-1004001234)")


def test_a_missing_topic_fails_with_a_hint(fake: FakeTelegram, spool_path: str) -> None:
    fake.missing_threads.add(TOPIC)
    code, lines = check(environment(fake, spool_path))
    assert code == 1
    line = line_for(lines, f"topic {TOPIC} of chat {CHAT}")
    assert "message thread not found" in line
    assert "set TELEGRAM_THREAD_ID" in line


def test_every_routes_topic_is_checked_and_a_wrong_one_names_its_route(
    fake: FakeTelegram, spool_path: str, tmp_path: Path
) -> None:
    routes = tmp_path / "routes.toml"
    routes.write_text(
        "[[route]]\nname = 'payments'\nproject = 'pay'\nthread = 78\n"
        "[[route]]\nname = 'ops'\nproject = 'ops'\nthread = 79\n"
        f"[[route]]\nname = 'elsewhere'\nproject = 'web'\nchat = {OTHER_CHAT}\nthread = 5\n"
    )
    fake.missing_threads.add(79)
    code, lines = check(environment(fake, spool_path, RELAY_ROUTES=str(routes)))
    assert code == 1
    assert line_for(lines, f"topic {TOPIC} of chat {CHAT}").startswith("ok")
    assert line_for(lines, f"topic 78 of chat {CHAT}").startswith("ok")
    missing = line_for(lines, f"topic 79 of chat {CHAT}")
    assert "message thread not found" in missing
    assert "set route 'ops''s thread in RELAY_ROUTES" in missing
    no_forum = line_for(lines, f"topic 5 of chat {OTHER_CHAT}")
    assert "the chat is not a forum" in no_forum
    assert "route 'elsewhere'" in no_forum


def test_a_topic_in_a_chat_without_topics_fails(fake: FakeTelegram, spool_path: str) -> None:
    fake.add_chat(CHAT, forum=False)
    code, lines = check(environment(fake, spool_path))
    assert code == 1
    assert "the chat is not a forum" in line_for(lines, f"topic {TOPIC} of chat {CHAT}")


def test_unreachable_telegram_suggests_a_proxy_or_another_api_url(
    fake: FakeTelegram, spool_path: str
) -> None:
    fake.stop()
    code, lines = check(environment(fake, spool_path))
    assert code == 1
    line = line_for(lines, "token")
    assert "connection to Telegram failed" in line
    assert "set HTTPS_PROXY" in line
    assert "TELEGRAM_API_URL" in line
    # Unreachable is not refused: nothing was said about the token.
    assert line_for(lines, "chats") == "FAIL  chats: not checked: Telegram could not be reached"
    assert not any("accept" in line for line in lines)


def test_a_chat_question_unanswered_after_getme_blames_no_proxy(
    fake: FakeTelegram, spool_path: str
) -> None:
    fake.set("hang", methods={"getChat"})  # answers getMe, never getChat
    code, lines = check(environment(fake, spool_path, RELAY_SEND_TIMEOUT="0.5"))
    assert code == 1
    assert line_for(lines, "token").startswith("ok")
    line = line_for(lines, f"chat {CHAT}")
    assert "Telegram answered getMe just before but not this in time" in line
    assert "run the check again" in line
    assert "PROXY" not in line


def test_a_refused_token_is_why_the_chats_were_not_checked(
    fake: FakeTelegram, spool_path: str
) -> None:
    wrong = "987654321:AAE-not-the-token-the-fake-knows_xyz"
    code, lines = check(environment(fake, spool_path, TELEGRAM_BOT_TOKEN=wrong))
    assert code == 1
    assert line_for(lines, "chats") == (
        "FAIL  chats: not checked: Telegram did not accept the token"
    )


def test_a_bad_variable_fails_the_first_check(fake: FakeTelegram, spool_path: str) -> None:
    code, lines = check(environment(fake, spool_path, TELEGRAM_CHAT_ID="general"))
    assert code == 1
    assert lines == [
        "FAIL  configuration: TELEGRAM_CHAT_ID: 'general' is neither an integer chat id (like "
        "-1001234567890) nor an @channelname (hint: fix it and run this again)"
    ]


def test_every_bad_variable_gets_its_own_line(fake: FakeTelegram, spool_path: str) -> None:
    code, lines = check({"TELEGRAM_API_URL": fake.url, "RELAY_SEND_TIMEOUT": "forever"})
    assert code == 1
    assert [line.split(":", 2)[1].strip() for line in lines] == [
        "TELEGRAM_BOT_TOKEN",
        "TELEGRAM_CHAT_ID",
        "RELAY_WEBHOOK_SECRET",
        "RELAY_SEND_TIMEOUT",
    ]
    assert all(line.startswith("FAIL  configuration: ") for line in lines)


def test_a_spool_directory_that_does_not_exist_is_called_missing(
    fake: FakeTelegram, tmp_path: Path
) -> None:
    missing = tmp_path / "no-such-dir"
    code, lines = check(environment(fake, str(missing / "spool.sqlite3")))
    assert code == 1
    assert line_for(lines, "spool") == (
        f"FAIL  spool: {missing / 'spool.sqlite3'} cannot be created: the directory {missing} "
        f"does not exist (hint: create it (mkdir -p {missing}) and let the relay's user write "
        "there, or set RELAY_SPOOL_PATH to a file in a directory that exists)"
    )


def test_the_spool_check_reports_what_is_in_it(fake: FakeTelegram, spool_path: str) -> None:
    made = open_spool(path=spool_path)  # the service made it; no webhook yet
    assert made is not None
    made.admin.counts()
    made.close()
    code, lines = check(environment(fake, spool_path))
    assert code == 0
    assert line_for(lines, "spool") == (
        f"ok    spool: {spool_path}: 0 pending, 0 dead; no webhook accepted yet: if GlitchTip "
        "has sent alerts, they did not reach the relay (relay-app glitchtip connect --test "
        "proves the whole path)"
    )
    put_in_spool(
        spool_path,
        issue_alert(issue(1)),
        received_at=0,
        dead_because="Forbidden",
    )
    code, lines = check(environment(fake, spool_path))
    assert code == 0
    # put_in_spool takes it in as a webhook would, at 0: the arrival is noted with it.
    assert line_for(lines, "spool").startswith(
        f"ok    spool: {spool_path}: 0 pending, 1 dead; see them with: relay-app spool list "
        "--dead; last webhook accepted 1970-01-01 00:00:00 UTC ("
    )
    opened = open_spool(path=spool_path)
    assert opened is not None
    opened.arrivals.record("silenced", "an alert", now=time.time() - 125)
    opened.close()
    code, lines = check(environment(fake, spool_path))
    assert re.search(
        r"; last webhook accepted 20\S+ \S+ UTC \(2 min( \d+ s)? ago\)$", line_for(lines, "spool")
    )


def test_a_spool_from_an_older_relay_passes_since_the_relay_upgrades_it(
    fake: FakeTelegram, spool_path: str
) -> None:
    with sqlite3.connect(spool_path) as db:
        for statement in STEPS[1]:
            assert isinstance(statement, str)
            db.execute(statement)
        db.execute("PRAGMA user_version = 1")
    db.close()
    code, lines = check(environment(fake, spool_path))
    assert code == 0
    assert line_for(lines, "spool") == (
        f"ok    spool: {spool_path}: the relay upgrades it when it next starts"
    )


def test_the_spool_check_asks_a_postgresql_spool(fake: FakeTelegram, pg_url: str) -> None:
    environ = environment(fake, "", RELAY_SPOOL_URL=pg_url)
    del environ["RELAY_SPOOL_PATH"]
    shown = redacted_url(pg_url)
    code, lines = check(environ)
    assert code == 0
    assert line_for(lines, "spool") == (
        f"ok    spool: {shown}: no spool yet; the relay creates it when it starts"
    )
    put_in_spool(pg_url, issue_alert(issue(1)), received_at=0)
    code, lines = check(environ)
    assert line_for(lines, "spool").startswith(f"ok    spool: {shown}: 1 pending, 0 dead; ")
    assert not any(PASSWORD in line for line in lines)


def test_an_unreachable_database_fails_the_spool_check_with_a_hint(fake: FakeTelegram) -> None:
    url = f"postgresql://relay:{PASSWORD}@127.0.0.1:{free_port()}/relay"
    environ = environment(fake, "", RELAY_SPOOL_URL=url)
    del environ["RELAY_SPOOL_PATH"]
    code, lines = check(environ)
    assert code == 1
    line = line_for(lines, "spool")
    assert line.startswith(f"FAIL  spool: the database {redacted_url(url)} cannot be reached")
    assert "check RELAY_SPOOL_URL" in line
    assert not any(PASSWORD in line for line in lines)


def test_a_spool_that_cannot_be_read_fails(fake: FakeTelegram, spool_path: str) -> None:
    Path(spool_path).write_bytes(b"this is not a database" * 100)
    code, lines = check(environment(fake, spool_path))
    assert code == 1
    assert line_for(lines, "spool").startswith("FAIL  spool: ")


# --- preview ---------------------------------------------------------------------------------


def preview(*argv: str, stdin: str = "") -> tuple[int, str, str]:
    out, err = io.StringIO(), io.StringIO()
    code = main(["preview", *argv], environ={}, out=out, err=err, stdin=io.StringIO(stdin))
    return code, out.getvalue(), err.getvalue()


def test_preview_prints_the_exact_html_and_its_visible_length(tmp_path: Path) -> None:
    payload = issue_alert(issue(1, title="Crash <in> checkout & co"), issue(2), total=5)
    expected = format_alert(read_kept(payload), ENGLISH)
    path = tmp_path / "alert.json"
    path.write_text(json.dumps(payload))
    for code, out, err in (preview(str(path)), preview(stdin=json.dumps(payload))):
        assert (code, out) == (0, expected.html + "\n")
        assert err == (
            f"visible length: {visible_length(expected.text)} of 4096 characters "
            "(parse_mode HTML, link previews off)\n"
        )


@pytest.mark.parametrize(
    ("body", "problem"),
    [
        ("", "the body is empty"),
        ("{oops", "the body is not valid JSON"),
        ("[1, 2]", "expected a JSON object, got a JSON array"),
    ],
)
def test_preview_refuses_what_the_webhook_refuses(body: str, problem: str) -> None:
    code, out, err = preview(stdin=body)
    assert (code, out) == (1, "")
    assert err.startswith(f"relay-app: error: {problem}")


def test_preview_of_a_missing_file_fails(tmp_path: Path) -> None:
    code, _, err = preview(str(tmp_path / "nope.json"))
    assert code == 1
    assert (
        err
        == f"relay-app: error: cannot read {tmp_path / 'nope.json'}: No such file or directory\n"
    )


GLITCHTIP_TOKEN = "0123456789abcdef" * 4


def test_check_asks_glitchtip_about_the_token_and_telegram_how_presses_arrive(
    fake: FakeTelegram, spool_path: str
) -> None:
    with running_fake_glitchtip() as glitchtip:
        environ = environment(
            fake, spool_path, GLITCHTIP_API_TOKEN=GLITCHTIP_TOKEN, GLITCHTIP_URL=glitchtip.url
        )
        code, lines = check(environ)
        assert code == 0
        assert "accepted at" in line_for(lines, "GlitchTip token")
        assert "GlitchTip: alerts, buttons, details and the watcher" in line_for(lines, "sources")
        assert "read by polling" in line_for(lines, "button presses")

        glitchtip.tokens.clear()  # GlitchTip no longer knows the token
        fake.webhook_url = "https://elsewhere.example/hook"
        code, lines = check(environ)
        assert code == 1
        assert line_for(lines, "GlitchTip token").startswith("FAIL")
        assert "Profile → Auth Tokens" in line_for(lines, "GlitchTip token")
        assert "relay-app telegram-webhook delete" in line_for(lines, "button presses")
        assert all(GLITCHTIP_TOKEN not in line for line in lines)


def test_check_wants_glitchtip_url_with_a_glitchtip_token_and_never_shows_the_token(
    fake: FakeTelegram, spool_path: str
) -> None:
    code, lines = check(environment(fake, spool_path, GLITCHTIP_API_TOKEN=GLITCHTIP_TOKEN))
    assert code == 1
    [line] = lines
    assert line.startswith("FAIL  configuration: GLITCHTIP_URL: is not set")
    assert GLITCHTIP_TOKEN not in line


def test_check_of_webhook_mode_wants_the_relays_own_address_registered(
    fake: FakeTelegram, spool_path: str, fake_glitchtip: FakeGlitchTip
) -> None:
    environ = environment(
        fake,
        spool_path,
        GLITCHTIP_API_TOKEN=GLITCHTIP_TOKEN,
        GLITCHTIP_URL=fake_glitchtip.url,
        TELEGRAM_UPDATES="webhook",
    )
    code, lines = check(environ)
    assert code == 1
    assert "accepted at" in line_for(lines, "GlitchTip token")
    assert "relay-app telegram-webhook set" in line_for(lines, "button presses")

    out, err = io.StringIO(), io.StringIO()
    assert (
        main(
            ["telegram-webhook", "set", "https://relay.example.com/"],
            environ=environ,
            out=out,
            err=err,
        )
        == 0
    )
    assert fake.webhook_url == f"https://relay.example.com/telegram/{SECRET}"
    # Derived from the bot token: whoever reads GlitchTip's webhook URL cannot compute it.
    assert fake.webhook_secret_token == telegram_secret_token(TOKEN)
    assert fake.webhook_secret_token != telegram_secret_token(SECRET)
    assert SECRET not in out.getvalue() + err.getvalue()
    code, lines = check(environ)
    assert code == 0
    shown = f"https://relay.example.com/telegram/[secret {fingerprint(SECRET)}]"
    assert shown in line_for(lines, "button presses")

    # Registered with an old secret: both shown, each by its fingerprint, neither in clear.
    fake.webhook_url = "https://relay.example.com/telegram/an-old-secret-0123456789"
    code, lines = check(environ)
    assert code == 1
    said = line_for(lines, "button presses")
    assert f"/telegram/[secret {fingerprint('an-old-secret-0123456789')}]" in said
    assert f"expects …/telegram/[secret {fingerprint(SECRET)}]" in said
    assert "an-old-secret" not in said

    assert main(["telegram-webhook", "delete"], environ=environ, out=out, err=err) == 0
    assert fake.webhook_url == ""
    assert (
        main(["telegram-webhook", "set", "relay.example.com"], environ=environ, out=out, err=err)
        == 2
    )


def test_a_command_that_reads_the_settings_redacts_the_glitchtip_token_from_its_output(
    fake: FakeTelegram, spool_path: str, fake_glitchtip: FakeGlitchTip
) -> None:
    token = secrets.token_hex(32)  # one that nothing in this process has registered yet
    environ = environment(
        fake, spool_path, GLITCHTIP_API_TOKEN=token, GLITCHTIP_URL=fake_glitchtip.url
    )
    assert redact(f"token {token}") == f"token {token}"
    out, err = io.StringIO(), io.StringIO()
    assert main(["telegram-webhook", "delete"], environ=environ, out=out, err=err) == 0
    assert redact(f"token {token}") == f"token {REDACTED}"


def test_rooms_and_boards_need_a_forum_and_the_rights_to_manage_topics_and_pin(
    fake: FakeTelegram, spool_path: str, tmp_path: Path
) -> None:
    routes = tmp_path / "routes.toml"
    routes.write_text(
        "[[route]]\nname = 'ops'\nproject = 'ops'\nthread = 78\ntopics = 'per_issue'\n"
        "board = true\n"
        f"[[route]]\nname = 'web'\nproject = 'web'\nchat = {OTHER_CHAT}\n"
        "topics = 'per_issue'\nboard = true\n"
    )
    fake.add_chat(CHAT, rights={"can_manage_topics": True, "can_pin_messages": False})
    code, lines = check(environment(fake, spool_path, RELAY_ROUTES=str(routes)))
    assert code == 1
    assert line_for(lines, f"topics per issue in chat {CHAT}").startswith(
        "ok    topics per issue in chat -1001234567890: a forum, and the bot may manage"
    )
    no_pin = line_for(lines, f"board in chat {CHAT}")
    assert no_pin.startswith("FAIL")
    assert "the right to pin messages" in no_pin
    no_forum = line_for(lines, f"topics per issue in chat {OTHER_CHAT}")
    assert "the chat is not a forum" in no_forum
    assert "turn Topics on" in no_forum
    # The bot a member, not an administrator: it may neither manage topics nor pin.
    assert line_for(lines, f"board in chat {OTHER_CHAT}").startswith("FAIL")
    fake.add_chat(CHAT, rights={"can_manage_topics": True, "can_pin_messages": True})
    fake.add_chat(OTHER_CHAT, rights={"can_manage_topics": True, "can_pin_messages": True})
    code, lines = check(environment(fake, spool_path, RELAY_ROUTES=str(routes)))
    assert line_for(lines, f"board in chat {CHAT}").startswith("ok")
