from __future__ import annotations

import pytest

from relay_app.core.timing import FLOOR, PRODUCTION
from relay_app.glitchtip.settings import GLITCHTIP_SETTINGS, GlitchTipConfig
from relay_app.operating.config import ConfigError, Settings
from tests.conftest import THEIRS

TOKEN = "123456789:AAE-config-test-token_abcdefghij"
SECRET = "config-test-secret-0123456789"


def env(**overrides: str) -> dict[str, str]:
    base = {
        "TELEGRAM_BOT_TOKEN": TOKEN,
        "TELEGRAM_CHAT_ID": "-1001234567890",
        "RELAY_WEBHOOK_SECRET": SECRET,
    }
    base.update(overrides)
    return {key: value for key, value in base.items() if value != "<unset>"}


def test_defaults_fill_everything_but_the_three_required_variables() -> None:
    settings = Settings.from_env(env(), THEIRS)
    assert settings == Settings(
        telegram_bot_token=TOKEN,
        telegram_chat_id=-1001234567890,
        webhook_secret=SECRET,
        telegram_thread_id=None,
        telegram_api_url="https://api.telegram.org",
        send_timeout=5.0,
        retry_attempts=3,
        retry_wait=30.0,
        retry_max_age=21600.0,
        spool_path="relay-spool.sqlite3",
        spool_max_pending=10000,
        late_after=60.0,
        allowed_chat_ids=frozenset(),
        coalesce=True,
        metrics=True,
        log_format="text",
        bind="127.0.0.1:8780",
        admin_bind=None,
    )
    assert settings.admin_port is None


def test_every_variable_is_read() -> None:
    settings = Settings.from_env(
        env(
            TELEGRAM_CHAT_ID="@alerts_channel",
            TELEGRAM_THREAD_ID="42",
            TELEGRAM_API_URL="http://127.0.0.1:8081/",
            RELAY_SEND_TIMEOUT="2.5",
            RELAY_RETRY_ATTEMPTS="7",
            RELAY_RETRY_WAIT="0.5",
            RELAY_RETRY_MAX_AGE="3600",
            RELAY_SPOOL_PATH="/var/lib/relay/spool.sqlite3",
            RELAY_SPOOL_MAX_PENDING="50",
            RELAY_LATE_AFTER="120",
            TELEGRAM_ALLOWED_CHAT_IDS=" -1001111111111, @Ops_Room ,,-42",
            RELAY_COALESCE="0",
            RELAY_METRICS="off",
            RELAY_LOG_FORMAT=" JSON ",
            RELAY_BIND="0.0.0.0:8780",
            RELAY_ADMIN_BIND="127.0.0.1:9187",
        ),
        THEIRS,
    )
    assert settings.telegram_chat_id == "@alerts_channel"
    assert settings.telegram_thread_id == 42
    assert settings.telegram_api_url == "http://127.0.0.1:8081"
    assert (settings.send_timeout, settings.retry_attempts, settings.retry_wait) == (2.5, 7, 0.5)
    assert settings.retry_max_age == 3600
    assert settings.spool_path == "/var/lib/relay/spool.sqlite3"
    assert settings.spool_max_pending == 50
    assert settings.late_after == 120
    assert settings.allowed_chat_ids == frozenset({"-1001111111111", "@ops_room", "-42"})
    assert settings.coalesce is False
    assert (settings.metrics, settings.log_format) == (False, "json")
    assert (settings.bind, settings.admin_bind, settings.admin_port) == (
        "0.0.0.0:8780",
        "127.0.0.1:9187",
        9187,
    )


def test_the_spool_can_be_switched_off() -> None:
    assert Settings.from_env(env(RELAY_SPOOL_PATH="off"), THEIRS).spool_path is None


@pytest.mark.parametrize(
    ("variable", "value", "says"),
    [
        ("TELEGRAM_BOT_TOKEN", "<unset>", "is not set"),
        ("TELEGRAM_BOT_TOKEN", "not-a-token", "does not look like a bot token"),
        ("TELEGRAM_CHAT_ID", "<unset>", "is not set"),
        ("TELEGRAM_CHAT_ID", "my group", "neither an integer chat id"),
        ("RELAY_WEBHOOK_SECRET", "<unset>", "is not set"),
        ("RELAY_WEBHOOK_SECRET", "short", "at least 16"),
        ("RELAY_WEBHOOK_SECRET", "has/a/slash/in/it/too", "URL-safe"),
        ("TELEGRAM_THREAD_ID", "-3", "positive integer"),
        ("TELEGRAM_API_URL", "api.telegram.org", "not an http(s) URL"),
        ("TELEGRAM_API_URL", "https://proxy.example/?x=1", "without '?'"),
        ("RELAY_SEND_TIMEOUT", "ten", "not a number"),
        ("RELAY_SEND_TIMEOUT", "12", "10 s"),
        ("RELAY_SEND_TIMEOUT", "nan", "out of range"),
        ("RELAY_RETRY_ATTEMPTS", "2.5", "not an integer"),
        ("RELAY_RETRY_ATTEMPTS", "0", "out of range"),
        ("RELAY_RETRY_WAIT", "-1", "out of range"),
        ("RELAY_RETRY_WAIT", "0", "out of range"),
        ("RELAY_RETRY_MAX_AGE", "six hours", "is not a number"),
        ("RELAY_SPOOL_PATH", "/var/lib/relay/", "names a directory"),
        ("RELAY_SPOOL_MAX_PENDING", "0", "out of range"),
        ("RELAY_SPOOL_MAX_PENDING", "1.5", "is not an integer"),
        ("RELAY_LATE_AFTER", "0", "out of range"),
        ("TELEGRAM_ALLOWED_CHAT_IDS", "-100111, ops room", "'ops room' is neither"),
        ("TELEGRAM_ALLOWED_CHAT_IDS", "-100111;-100222", "separated by commas"),
        ("RELAY_COALESCE", "maybe", "use 1 or 0"),
        ("RELAY_METRICS", "no thanks", "use 1 or 0"),
        ("RELAY_LOG_FORMAT", "logfmt", "use text (the default) or json"),
        ("RELAY_BIND", "8780", "not HOST:PORT"),
        ("RELAY_BIND", "0.0.0.0:99999", "up to 65535"),
        ("RELAY_ADMIN_BIND", "127.0.0.1:0", "needs a fixed port"),
        ("RELAY_SPOOL_URL", "mysql://u:p@db/relay", "is not a PostgreSQL URL"),
        ("RELAY_SPOOL_URL", "postgresql://u:p@db:5432", "names no database"),
        ("RELAY_ADMIN_BIND", "localhost", "not HOST:PORT"),
        ("RELAY_ADMIN_BIND", "0.0.0.0:8780", "uses the webhook listener's port"),
        ("RELAY_WATCH_INTERVAL", "0.5", "use a number of seconds from 1 to 3600"),
        ("RELAY_ESCALATING_MIN_EVENTS", "many", "is not an integer"),
        ("RELAY_SNOOZE_EVENTS", "0", "is out of range"),
    ],
)
def test_a_bad_variable_is_named_with_how_to_fix_it(variable: str, value: str, says: str) -> None:
    with pytest.raises(ConfigError) as raised:
        Settings.from_env(env(**{variable: value}), THEIRS)
    assert raised.value.variable == variable
    assert str(raised.value).startswith(f"{variable}: ")
    assert says in str(raised.value)


def test_secrets_stay_out_of_errors_and_repr() -> None:
    bad_token = "123456789:short"
    with pytest.raises(ConfigError) as raised:
        Settings.from_env(env(TELEGRAM_BOT_TOKEN=bad_token), THEIRS)
    assert bad_token not in str(raised.value)
    shown = repr(Settings.from_env(env(), THEIRS))
    assert TOKEN not in shown
    assert SECRET not in shown


def test_settings_are_frozen() -> None:
    settings = Settings.from_env(env(), THEIRS)
    with pytest.raises(AttributeError):
        settings.retry_attempts = 5  # type: ignore[misc]


def test_with_nothing_set_every_required_variable_is_named_at_once() -> None:
    with pytest.raises(ConfigError) as raised:
        Settings.from_env({}, THEIRS)
    assert raised.value.variables == [
        "TELEGRAM_BOT_TOKEN",
        "TELEGRAM_CHAT_ID",
        "RELAY_WEBHOOK_SECRET",
    ]
    lines = str(raised.value).splitlines()
    assert lines[0] == "3 problems:"
    assert lines[1].startswith("  TELEGRAM_BOT_TOKEN: is not set; set it to the token @BotFather")
    assert lines[2].startswith("  TELEGRAM_CHAT_ID: is not set; set it to the numeric chat id")
    assert lines[3].startswith("  RELAY_WEBHOOK_SECRET: is not set; generate one with:")


def test_bad_values_are_all_reported_with_the_missing_ones() -> None:
    with pytest.raises(ConfigError) as raised:
        Settings.from_env(
            env(
                TELEGRAM_CHAT_ID="<unset>",
                RELAY_SEND_TIMEOUT="soon",
                RELAY_COALESCE="maybe",
                RELAY_ADMIN_BIND="0.0.0.0:8780",
            ),
            THEIRS,
        )
    assert raised.value.variables == [
        "RELAY_ADMIN_BIND",
        "TELEGRAM_CHAT_ID",
        "RELAY_SEND_TIMEOUT",
        "RELAY_COALESCE",
    ]
    message = str(raised.value)
    assert message.startswith("4 problems:\n")
    assert "RELAY_SEND_TIMEOUT: 'soon' is not a number of seconds" in message
    assert "RELAY_COALESCE: 'maybe' is not a switch; use 1 or 0" in message


def test_the_admin_listener_must_differ_from_the_webhook_listener_given_in_relay_bind() -> None:
    with pytest.raises(ConfigError) as raised:
        Settings.from_env(env(RELAY_BIND="0.0.0.0:9000", RELAY_ADMIN_BIND="127.0.0.1:9000"), THEIRS)
    assert raised.value.variables == ["RELAY_ADMIN_BIND"]
    settings = Settings.from_env(
        env(RELAY_BIND="0.0.0.0:9000", RELAY_ADMIN_BIND="[::1]:9187"), THEIRS
    )
    assert settings.admin_port == 9187


def test_a_postgresql_url_replaces_the_spool_file_and_never_shows_its_password() -> None:
    url = "postgresql://relay:s3cret-pw@db.internal:5432/relay"
    settings = Settings.from_env(env(RELAY_SPOOL_URL=url), THEIRS)
    assert (settings.spool_url, settings.spool_path) == (url, None)
    assert "s3cret-pw" not in repr(settings)
    other = Settings.from_env(env(RELAY_SPOOL_URL="postgres://relay:pw@db/relay"), THEIRS)
    assert other.spool_url == "postgres://relay:pw@db/relay"


def test_a_spool_url_and_a_spool_path_together_are_refused_without_showing_the_url() -> None:
    url = "postgresql://relay:s3cret-pw@db.internal:5432/relay"
    with pytest.raises(ConfigError) as raised:
        Settings.from_env(env(RELAY_SPOOL_URL=url, RELAY_SPOOL_PATH="/data/spool.sqlite3"), THEIRS)
    assert raised.value.variables == ["RELAY_SPOOL_URL"]
    assert "both set" in str(raised.value)
    with pytest.raises(ConfigError) as bad:
        Settings.from_env(env(RELAY_SPOOL_URL="mysql://relay:s3cret-pw@db/relay"), THEIRS)
    assert "s3cret-pw" not in str(bad.value)


GLITCHTIP_TOKEN = "0123456789abcdef" * 4


GLITCHTIP_URL = "https://glitchtip.example.org"


def glitchtip_of(settings: Settings) -> GlitchTipConfig:
    """GlitchTip's variables as its capability read them: a test that set one finds them."""
    found = settings.of(GLITCHTIP_SETTINGS)
    assert found is not None
    return found


def test_a_glitchtip_token_turns_buttons_on_and_polls_for_their_presses() -> None:
    settings = Settings.from_env(
        env(GLITCHTIP_API_TOKEN=GLITCHTIP_TOKEN, GLITCHTIP_URL=GLITCHTIP_URL), THEIRS
    )
    glitchtip = glitchtip_of(settings)
    assert glitchtip.api_token == GLITCHTIP_TOKEN
    assert GLITCHTIP_TOKEN not in repr(settings)
    assert settings.telegram_updates == "poll"
    assert glitchtip.links == GLITCHTIP_URL  # issues with links there get buttons
    assert settings.action_user_ids == frozenset()
    assert Settings.from_env(env(), THEIRS).telegram_updates == "off"


def test_the_glitchtip_token_needs_the_address_it_goes_to_named_at_start() -> None:
    with pytest.raises(ConfigError) as raised:
        Settings.from_env(env(GLITCHTIP_API_TOKEN=GLITCHTIP_TOKEN, TELEGRAM_CHAT_ID=""), THEIRS)
    # Reported with the others, at start: not guessed from the links of the alerts.
    assert raised.value.variables == ["GLITCHTIP_URL", "TELEGRAM_CHAT_ID"]
    assert "the token is sent there and nowhere else" in str(raised.value)
    assert GLITCHTIP_TOKEN not in str(raised.value)


@pytest.mark.parametrize("variable", ["GLITCHTIP_URL", "GLITCHTIP_PUBLIC_URL"])
def test_glitchtip_addresses_may_not_carry_a_login(variable: str) -> None:
    with pytest.raises(ConfigError) as raised:
        Settings.from_env(
            env(
                GLITCHTIP_API_TOKEN=GLITCHTIP_TOKEN,
                **{"GLITCHTIP_URL": GLITCHTIP_URL, variable: "https://ada:hunter2@gt.example"},
            ),
            THEIRS,
        )
    assert raised.value.variables == [variable]
    assert "hunter2" not in str(raised.value)


@pytest.mark.parametrize(
    "url", ["https://ada:hunter2@gt.example/?x=1", "ftp://ada:hunter2@gt.example", "http://[::1"]
)
def test_a_url_that_is_refused_is_named_without_its_password(url: str) -> None:
    with pytest.raises(ConfigError) as raised:
        Settings.from_env(env(GLITCHTIP_API_TOKEN=GLITCHTIP_TOKEN, GLITCHTIP_URL=url), THEIRS)
    assert raised.value.variables == ["GLITCHTIP_URL"]
    assert "hunter2" not in str(raised.value)


def test_glitchtips_public_address_is_where_the_links_must_point() -> None:
    settings = Settings.from_env(
        env(
            GLITCHTIP_API_TOKEN=GLITCHTIP_TOKEN,
            GLITCHTIP_URL="http://web:8000",
            GLITCHTIP_PUBLIC_URL="HTTPS://GlitchTip.Example.org:443/",
        ),
        THEIRS,
    )
    assert glitchtip_of(settings).url == "http://web:8000"  # where the token goes
    assert glitchtip_of(settings).links == "https://glitchtip.example.org"  # the links' origin


def test_glitchtip_organizations_are_the_only_ones_whose_issues_get_buttons() -> None:
    settings = Settings.from_env(
        env(
            GLITCHTIP_API_TOKEN=GLITCHTIP_TOKEN,
            GLITCHTIP_URL=GLITCHTIP_URL,
            GLITCHTIP_ORGANIZATIONS=" acme, acme-staging ,",
        ),
        THEIRS,
    )
    assert glitchtip_of(settings).organizations == frozenset({"acme", "acme-staging"})
    assert Settings.from_env(env(), THEIRS).of(GLITCHTIP_SETTINGS) is None  # none of them set
    with pytest.raises(ConfigError) as raised:
        Settings.from_env(
            env(GLITCHTIP_ORGANIZATIONS="acme, ../secret", TELEGRAM_CHAT_ID=""), THEIRS
        )
    assert raised.value.variables == ["GLITCHTIP_ORGANIZATIONS", "TELEGRAM_CHAT_ID"]
    assert "'../secret' is not an organization's slug" in str(raised.value)


def test_every_secret_is_listed_for_redaction() -> None:
    settings = Settings.from_env(
        env(GLITCHTIP_API_TOKEN=GLITCHTIP_TOKEN, GLITCHTIP_URL=GLITCHTIP_URL), THEIRS
    )
    assert set(settings.secrets) == {
        settings.telegram_bot_token,
        settings.webhook_secret,
        GLITCHTIP_TOKEN,
    }


def test_every_variable_for_acting_on_alerts_is_read() -> None:
    settings = Settings.from_env(
        env(
            GLITCHTIP_API_TOKEN=GLITCHTIP_TOKEN,
            GLITCHTIP_URL="https://glitchtip.internal:8000/",
            TELEGRAM_UPDATES="Webhook",
            TELEGRAM_ACTION_USER_IDS="12345678, 87654321,,",
        ),
        THEIRS,
    )
    assert glitchtip_of(settings).url == "https://glitchtip.internal:8000"
    assert settings.telegram_updates == "webhook"
    assert settings.action_user_ids == frozenset({12345678, 87654321})


def test_every_problem_with_acting_on_alerts_is_named_at_once() -> None:
    with pytest.raises(ConfigError) as raised:
        Settings.from_env(
            env(
                GLITCHTIP_API_TOKEN="a token with spaces",
                GLITCHTIP_URL="glitchtip.example.org",
                TELEGRAM_UPDATES="sometimes",
                TELEGRAM_ACTION_USER_IDS="@ada",
            ),
            THEIRS,
        )
    assert raised.value.variables == [
        "GLITCHTIP_API_TOKEN",
        "GLITCHTIP_URL",
        "TELEGRAM_UPDATES",
        "TELEGRAM_ACTION_USER_IDS",
    ]
    assert "a token with spaces" not in str(raised.value)


@pytest.mark.parametrize("mode", ["poll", "webhook"])
def test_reading_presses_without_buttons_is_a_mistake_said_plainly(mode: str) -> None:
    with pytest.raises(ConfigError) as raised:
        Settings.from_env(env(TELEGRAM_UPDATES=mode), THEIRS)
    assert raised.value.variables == ["TELEGRAM_UPDATES"]
    assert "GLITCHTIP_API_TOKEN" in str(raised.value)


def test_buttons_need_a_spool_to_keep_what_they_act_on() -> None:
    with pytest.raises(ConfigError) as raised:
        Settings.from_env(
            env(
                GLITCHTIP_API_TOKEN=GLITCHTIP_TOKEN,
                GLITCHTIP_URL=GLITCHTIP_URL,
                RELAY_SPOOL_PATH="off",
            ),
            THEIRS,
        )
    assert raised.value.variables == ["GLITCHTIP_API_TOKEN"]
    assert "RELAY_SPOOL_PATH=off" in str(raised.value)


@pytest.mark.parametrize("token", ["abc", "g" * 64, "a" * 63, "a" * 65, "é" * 64])
def test_a_glitchtip_token_is_64_hex_characters_and_is_never_echoed(token: str) -> None:
    with pytest.raises(ConfigError) as raised:
        Settings.from_env(
            env(GLITCHTIP_API_TOKEN=token, GLITCHTIP_URL="https://gt.example"), THEIRS
        )
    said = str(raised.value)
    assert "GLITCHTIP_API_TOKEN: is not a GlitchTip API token: GlitchTip's are 64 hex" in said
    assert token not in said


def test_the_default_destination_is_marked_as_the_one_alerts_follow() -> None:
    settings = Settings.from_env(env(), THEIRS)
    assert settings.default_destination.default
    assert Settings.destination_from_env(env()) == settings.default_destination


def test_time_is_one_setting_that_compresses_every_interval_but_telegrams_own_pace() -> None:
    production = Settings.from_env(env(), THEIRS).timing
    assert production == PRODUCTION
    assert production.pace.group_interval == 61.0 / 20  # Telegram's limits, with their margin
    stand_in = Settings.from_env(
        env(RELAY_TIME_SCALE="0.1", TELEGRAM_API_URL="http://127.0.0.1:8081"), THEIRS
    ).timing
    assert stand_in.pace.group_interval == pytest.approx(0.305)
    assert stand_in.pace.chat_interval == pytest.approx(0.12)
    assert stand_in.lease_margin == pytest.approx(0.5)
    assert stand_in.poll_interval == pytest.approx(0.1)
    assert stand_in.probe_interval == pytest.approx(0.2)
    # Talking to Telegram itself, its pace holds whatever the scale: only the relay's own
    # intervals shrink, and none below the floor.
    telegram = Settings.from_env(env(RELAY_TIME_SCALE="0.01"), THEIRS).timing
    assert telegram.pace == PRODUCTION.pace
    assert telegram.poll_interval == FLOOR
    with pytest.raises(ConfigError, match="RELAY_TIME_SCALE"):
        Settings.from_env(env(RELAY_TIME_SCALE="2"), THEIRS)


def test_the_pollers_intervals_are_compressed_in_whole_seconds_of_long_poll() -> None:
    timing = Settings.from_env(
        env(RELAY_TIME_SCALE="0.25", TELEGRAM_API_URL="http://127.0.0.1:8081"), THEIRS
    ).timing
    assert (timing.long_poll, timing.leader_look) == (2, 0.25)  # getUpdates takes whole s
    assert Settings.from_env(env(RELAY_TIME_SCALE="0.01"), THEIRS).timing.long_poll == 1
