"""The routes file (routes/): read and checked whole, each issue of a webhook routed on its own,
mentions named once per message, and `relay-app routes check|test`."""

from __future__ import annotations

import io
import json
import logging
import tomllib
from pathlib import Path
from typing import Any
from zoneinfo import ZoneInfo

import pytest

from relay_app.cli import main
from relay_app.core.alerts import Alert, Issue, IssueAlert
from relay_app.core.metrics import Metrics
from relay_app.core.routing import Destination
from relay_app.glitchtip import webhook as glitchtip_webhook
from relay_app.glitchtip.source import GLITCHTIP as GLITCHTIP_SOURCE
from relay_app.glitchtip.webhook import read_kept
from relay_app.intake import receive as receive_module
from relay_app.intake import route as route_module
from relay_app.intake.receive import Received
from relay_app.intake.route import RoutedWebhooks
from relay_app.intake.taken import Taken
from relay_app.message.digest import compose
from relay_app.message.formatting import format_alert, with_mentions
from relay_app.message.subjects import Home, IssueHomes
from relay_app.operating.config import ConfigError, Settings
from relay_app.operating.routes_file import (
    IN_FORCE,
    RefusedAgain,
    RoutesInForce,
    forget_in_force,
    put_in_force,
    routes_from_env,
)
from relay_app.routes import RoutesError, RouteTable, parse_routes, read_routes, split
from relay_app.routes import table as table_module
from relay_app.routes.table import MAX_ROUTES, MAX_ROUTES_BYTES
from relay_app.routes.zones import Zones
from relay_app.sentry.source import SENTRY as SENTRY_SOURCE
from relay_app.words import ENGLISH, RUSSIAN
from tests import payloads
from tests.conftest import ROUTE_SOURCES, THEIRS, FakeTime
from tests.payloads import read

ROOT = Path(__file__).resolve().parents[1]
EXAMPLE = ROOT / "examples" / "routes.toml"
DEFAULT = Destination(-1001234567890, None, default=True)
ON_CALL = -1002000000001


def fields(project: str, environment: str) -> list[dict[str, Any]]:
    return [
        {"title": "Project", "value": project, "short": True},
        {"title": "Environment", "value": environment, "short": True},
    ]


def issue(number: int, project: str, environment: str, **more: Any) -> dict[str, Any]:
    return payloads.issue(number, fields=fields(project, environment), **more)


def example() -> RouteTable:
    return read_routes(str(EXAMPLE), ROUTE_SOURCES)


def test_the_example_reads_as_written() -> None:
    table = example()
    assert [route.name for route in table.routes] == [
        "health checks",
        "payments on call",
        "production errors",
        "staging",
    ]
    assert table.routes[0].drop
    assert table.routes[1].mention == ("@oncall_ivan", "tg:123456789")
    assert (table.routes[3].chat, table.routes[3].thread) == (None, 7)
    assert table.chats == (ON_CALL,)


@pytest.mark.parametrize(
    ("text", "said"),
    [
        (
            "[[route]]\nenviroment = 'staging'\nchat = -1001\n",
            "x.toml:2: route 1, enviroment: unknown key; did you mean 'environment'?",
        ),
        (
            "[[route]]\nchat = -1001\n\n[[route]]\ntitle = 'x'\nchat = 'nowhere'\n",
            "x.toml:6: route 2, chat: 'nowhere' is not a chat id",
        ),
        ("[[route]\nchat = 1\n", "x.toml: not TOML: "),
        (
            "[[route]]\ntitle = 'x'\ndrop = true\nchat = -1001\n",
            "x.toml:3: route 1, drop: a dropped alert goes nowhere",
        ),
        (
            "[[route]]\nenvironment = ['prod', '!staging']\nchat = -1001\n",
            'x.toml:2: route 1, environment: mixes values and "!" negations',
        ),
        (
            "[[route]]\nlevel = 'critical'\nchat = -1001\n",
            "x.toml:2: route 1, level: 'critical' is not a level of GlitchTip's: fatal, error,",
        ),
        (
            "[[route]]\nsource = 'sentyr'\nchat = -1001\n",
            "x.toml:2: route 1, source: 'sentyr' is not a source of alerts: "
            '"glitchtip" or "sentry"',
        ),
        ("[[route]]\ntitle = 'x'\n", "x.toml:1: route 1: says nothing to do"),
        # A blank line before a route or a key is not where it is.
        (
            "[[route]]\nchat = -1001\n\n[[route]]\ntitle = 'x'\n",
            "x.toml:4: route 2: says nothing to do",
        ),
        (
            "[[route]]\nchat = -1001\n\nmention = ['ivan']\n",
            "x.toml:4: route 1, mention: 'ivan' is neither",
        ),
        (
            "[[route]]\nchat = -1001\nmention = ['ivan']\n",
            "x.toml:3: route 1, mention: 'ivan' is neither @username,"
            " tg:<user id> (1 to 4503599627370496) nor oncall:NAME",
        ),
        (
            "[[route]]\nchat = -1001\nthread = 0\n",
            "x.toml:3: route 1, thread: 0 is not a forum topic's id",
        ),
        (
            "chat = -1001\n",
            "x.toml:1: unknown key 'chat'; the file holds only [[route]] and [[rotation]] tables",
        ),
        (
            "[[route]]\nkind = 'monitor'\nchat = -1001\n",
            "x.toml:2: route 1, kind: 'monitor' is not a kind of alert: "
            '"issue", "uptime" or "created"',
        ),
        (
            "[[route]]\ntitle_prefx = 'Deploy'\nchat = -1001\n",
            "x.toml:2: route 1, title_prefx: unknown key; did you mean 'title_prefix'?",
        ),
    ],
)
def test_a_file_that_cannot_be_used_names_its_line_and_key(text: str, said: str) -> None:
    with pytest.raises(RoutesError) as raised:
        parse_routes(text, "x.toml", ROUTE_SOURCES)
    assert str(raised.value).startswith(said)


def test_matchers_read_fields_colour_title_and_short_id_and_negate() -> None:
    table = parse_routes(
        """
[[route]]
name = "not production warnings"
environment = "!production"
level = "warning"
chat = -1003
[[route]]
name = "by id or title"
issue = ["BACKEND-2A", "BACKEND-9Z"]
chat = -1004
[[route]]
name = "titles"
title = "timeout"
server = "WEB-1"
chat = -1005
[[route]]
name = "monitors"
monitor = "Shop"
chat = -1006
""",
        "x.toml",
        ROUTE_SOURCES,
    )
    warning = issue(1, "shop", "staging", color=None)
    by_id = issue(2, "shop", "production")
    titled = payloads.issue(3, title="Read TimeOut in cart")  # server web-1 in its fields
    other = issue(4, "shop", "production", color="#4b60b4")
    payload = payloads.issue_alert(warning, by_id, titled, other)
    routed = split(read(payload), table, DEFAULT, DEFAULT)
    chats = [(part.destination.chat, part.route and part.route.name) for part in routed.parts]
    assert chats == [
        (-1003, "not production warnings"),
        (-1004, "by id or title"),
        (-1005, "titles"),
        (DEFAULT.chat, None),
    ]
    uptime = split(read(payloads.uptime_alert(down=True, name="shop")), table, DEFAULT, DEFAULT)
    assert [part.destination.chat for part in uptime.parts] == [-1006]


LEVEL_ROUTES = """
[[route]]
name = "fatal"
level = "fatal"
chat = -1001
[[route]]
name = "errors"
level = "error"
chat = -1002
[[route]]
name = "debug"
level = "debug"
chat = -1003
"""


def test_a_level_is_the_issues_own_when_its_details_came_and_its_colours_without() -> None:
    table = parse_routes(LEVEL_ROUTES, "x.toml", ROUTE_SOURCES)
    assert table.reads_levels
    assert not parse_routes("[[route]]\nchat = 1\n", "x.toml", ROUTE_SOURCES).reads_levels
    fatal, error, debug = issue(1, "shop", "prod"), issue(2, "shop", "prod"), issue(3, "s", "p")
    debug["color"] = None
    payload = payloads.issue_alert(fatal, error, debug)
    own = {fatal["title_link"]: "fatal", error["title_link"]: "error", debug["title_link"]: "debug"}

    def routed(levels: dict[str, str]) -> list[tuple[int | str, str | None]]:
        parts = split(read(payload), table, DEFAULT, DEFAULT, levels).parts
        return [(part.destination.chat, part.route.name if part.route else None) for part in parts]

    assert routed(own) == [(-1001, "fatal"), (-1002, "errors"), (-1003, "debug")]
    # Without the details: GlitchTip's colour for fatal is error's, and debug has none.
    assert routed({}) == [(-1002, "errors"), (DEFAULT.chat, None)]


def test_kind_title_prefix_and_a_negation_that_never_matches_what_lacks_the_field() -> None:
    table = parse_routes(
        """
[[route]]
name = "every monitor but the shop's"
monitor = "!Shop"
chat = -1001
[[route]]
name = "deploys"
title_prefix = ["Deploy", "Release"]
chat = -1002
[[route]]
name = "not staging"
environment = "!staging"
chat = -1003
[[route]]
name = "uptime"
kind = "uptime"
chat = -1004
[[route]]
name = "issues"
kind = "issue"
chat = -1005
""",
        "x.toml",
        ROUTE_SOURCES,
    )

    def route_of(payload: dict[str, Any]) -> str | None:
        [part] = split(read(payload), table, DEFAULT, DEFAULT).parts
        return part.route.name if part.route is not None else None

    assert route_of(payloads.uptime_alert(down=True, name="API")) == "every monitor but the shop's"
    assert route_of(payloads.uptime_alert(down=True, name="Shop")) == "uptime"
    # An issue has no monitor: "!Shop" is not every issue.
    # An issue has no monitor, and this one no environment: neither negation takes it.
    bare = payloads.issue(1, title="KeyError: 'cart'", fields=[])
    assert route_of(payloads.issue_alert(bare)) == "issues"
    assert (
        route_of(payloads.issue_alert(payloads.issue(2, title="deploy hook failed"))) == "deploys"
    )
    # Contains is not starts with.
    after = payloads.issue(3, title="After deploy: 500", fields=[])
    assert route_of(payloads.issue_alert(after)) == "issues"
    assert route_of(payloads.issue_alert(issue(4, "shop", "production"))) == "not staging"
    assert route_of(payloads.issue_alert(issue(5, "shop", "staging"))) == "issues"


def test_routes_check_says_kind_and_title_prefix_in_words(tmp_path: Path) -> None:
    routes = tmp_path / "routes.toml"
    routes.write_text("[[route]]\ntitle_prefix = 'Deploy'\nkind = 'issue'\nchat = -1002\n")
    code, out, _ = run("routes", "check", str(routes))
    assert code == 0
    assert "route 1 “route 1”: kind is 'issue' and title starts with 'deploy': chat -1002" in out


def test_each_issue_goes_on_its_own_and_each_part_reads_as_glitchtip_would_send_it() -> None:
    payload = payloads.issue_alert(
        issue(1, "payments", "prod"),
        issue(2, "shop", "staging"),
        payloads.issue(3, title="HealthCheck failed"),
        issue(4, "payments", "production"),
        total=9,
    )
    asked = Destination(-1009999999999, 5)
    routed = split(read(payload), example(), asked, DEFAULT)
    on_call, staging = routed.parts
    assert (on_call.destination, on_call.mention) == (
        Destination(ON_CALL),
        ("@oncall_ivan", "tg:123456789"),
    )
    assert isinstance(on_call.alert, IssueAlert)
    # The unlisted go first.
    assert (on_call.alert.heading, on_call.alert.total) == ("GlitchTip Alert (7 issues)", 7)
    assert [i.title for i in on_call.alert.issues] == [
        "ZeroDivisionError: division by zero #1",
        "ZeroDivisionError: division by zero #4",
    ]
    assert [i.short_id for i in on_call.alert.issues] == ["BACKEND-1A", "BACKEND-4A"]
    assert staging.destination == Destination(DEFAULT.chat, 7)  # a topic of the default chat
    assert isinstance(staging.alert, IssueAlert)
    assert (staging.alert.heading, staging.alert.total) == ("GlitchTip Alert", 1)
    [dropped] = routed.dropped
    assert (dropped.route.name, dropped.count, dropped.titles) == (
        "health checks",
        1,
        ("HealthCheck failed",),
    )
    whole = payloads.issue_alert(issue(1, "shop", "dev"))
    alert = read(whole)
    [unrouted] = split(alert, example(), asked, DEFAULT).parts
    assert (unrouted.alert, unrouted.destination, unrouted.route) == (alert, asked, None)
    assert unrouted.alert is alert


class TakenParts:
    """What the routes hand on: each part's alert."""

    def __init__(self) -> None:
        self.parts: list[Alert] = []

    def take(self, part: Received, *args: Any, **kwargs: Any) -> Any:
        self.parts.append(part.alert)
        return Taken("queued", "attempt", 202)


def test_a_webhook_is_read_once_by_its_page_and_never_again_on_its_way_in(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """The routes, the levels they read and the stages after them read the one alert its
    source's page read (before: each read the payload again, and each part split off was read
    once more): a part is made from the alert, never read from a body."""
    alert = read(payloads.issue_alert(issue(1, "shop", "dev")))
    several = read(payloads.issue_alert(issue(1, "payments", "prod"), issue(2, "shop", "staging")))
    reads: list[object] = []

    def counted(body: dict[str, Any], *, marked: bool) -> Any:
        reads.append(body)
        raise AssertionError("a stage after the page read a body")

    monkeypatch.setattr(glitchtip_webhook, "_read", counted)
    taken = TakenParts()
    routed = RoutedWebhooks(
        taken,  # type: ignore[arg-type]
        example(),
        default=DEFAULT,
        metrics=Metrics(),
    )
    routed.route(receive_module.receive(alert, DEFAULT, 0.0))
    [whole] = taken.parts
    assert whole is alert
    routed.route(receive_module.receive(several, DEFAULT, 0.0))
    assert len(taken.parts) == 3  # the first webhook, then each of the second's two parts
    assert isinstance(several, IssueAlert)
    assert [part.issues for part in taken.parts[1:]] == [(i,) for i in several.issues]  # type: ignore[union-attr]
    assert reads == []


def test_mentions_are_named_once_per_message_in_the_chats_language() -> None:
    message = format_alert(read_kept(payloads.issue_alert(payloads.issue(1))), ENGLISH)
    called = with_mentions(message, ["@oncall_ivan", "tg:123456789"], ENGLISH)
    assert called.text.endswith("\n\n🔔 For @oncall_ivan, user 123456789")
    assert called.html.endswith(
        '\n\n🔔 For @oncall_ivan, <a href="tg://user?id=123456789">user 123456789</a>'
    )
    russian = with_mentions(message, ["tg:42"], RUSSIAN)
    assert russian.text.endswith("🔔 пользователь 42")
    assert with_mentions(message, [], ENGLISH) is message
    digest = compose([message, message], [0.0, 1.0], ENGLISH, now=2.0, late_after=60)
    assert with_mentions(digest, ["@a_person"], ENGLISH).text.count("@a_person") == 1


def test_relay_routes_is_read_with_the_other_variables_and_the_last_good_stays_in_force(
    tmp_path: Path,
) -> None:
    good = tmp_path / "routes.toml"
    good.write_text(EXAMPLE.read_text())
    base = {
        "TELEGRAM_BOT_TOKEN": "123456:" + "A" * 35,
        "TELEGRAM_CHAT_ID": "-1001234567890",
        "RELAY_WEBHOOK_SECRET": "s" * 32,
        "RELAY_ROUTES": str(good),
        "RELAY_SPOOL_PATH": str(tmp_path / "spool.sqlite3"),
    }
    assert len(Settings.from_env(base, THEIRS).routes.routes) == 4
    environ = dict(base)
    put_in_force(environ, ROUTE_SOURCES)
    kept = environ[IN_FORCE]
    good.write_text("[[route]]\ntitel = 'x'\nchat = -1001\n")  # a typo, then a reload
    with pytest.raises(ConfigError, match=r"routes.toml:2: route 1, titel: unknown key"):
        Settings.from_env(base, THEIRS)
    refused = put_in_force(environ, ROUTE_SOURCES)
    assert refused.refused is not None
    assert "route 1, titel: unknown key" in refused.refused
    assert environ[IN_FORCE] == kept  # the workers started now still read the last good one
    assert len(routes_from_env(environ, ROUTE_SOURCES).routes) == 4
    good.write_text("[[route]]\ntitle = 'x'\nchat = -1001\n")
    assert put_in_force(environ, ROUTE_SOURCES).refused is None
    assert not Path(kept).exists()  # the older copy is gone
    assert routes_from_env(environ, ROUTE_SOURCES).routes[0].chat == -1001


def test_the_last_good_routes_are_kept_beside_the_spool_and_a_broken_file_starts_on_them(
    tmp_path: Path,
) -> None:
    routes = tmp_path / "routes.toml"
    routes.write_text(EXAMPLE.read_text())
    spool = tmp_path / "spool.sqlite3"
    environ = {"RELAY_ROUTES": str(routes), "RELAY_SPOOL_PATH": str(spool)}
    accepted = put_in_force(environ, ROUTE_SOURCES, now=1_800_000_000.0)
    kept = Path(f"{spool}.last-good-routes.toml")
    assert (accepted.refused, accepted.accepted_at, accepted.last_good) == (
        None,
        1_800_000_000.0,
        str(kept),
    )
    assert kept.read_bytes() == routes.read_bytes()

    # The file broken, then a restart (a new master, nothing in force): it starts on the last
    # good routes, and says when they were accepted and why the file is refused.
    routes.write_text("[[route]]\ntitel = 'x'\nchat = -1001\n")
    restarted = {"RELAY_ROUTES": str(routes), "RELAY_SPOOL_PATH": str(spool)}
    in_force = put_in_force(restarted, ROUTE_SOURCES)
    assert in_force.refused is not None
    assert "route 1, titel: unknown key" in in_force.refused
    assert in_force.accepted_at == kept.stat().st_mtime
    assert in_force == RoutesInForce.from_env(restarted)  # as every worker reads it
    assert len(routes_from_env(restarted, ROUTE_SOURCES).routes) == 4
    assert kept.read_bytes() != routes.read_bytes()  # a refused file never replaces it
    forget_in_force(restarted)

    # Nothing to start on: the first start, or no spool file to keep the copy beside.
    for elsewhere in (str(tmp_path / "other.sqlite3"), "off"):
        with pytest.raises(RoutesError, match="titel: unknown key"):
            put_in_force(
                {"RELAY_ROUTES": str(routes), "RELAY_SPOOL_PATH": elsewhere}, ROUTE_SOURCES
            )


def test_a_refused_file_is_said_again_at_error_each_interval_until_it_reads_well(
    tmp_path: Path, fake_time: FakeTime, caplog: pytest.LogCaptureFixture
) -> None:
    routes = tmp_path / "routes.toml"
    routes.write_text("[[route]]\ntitel = 'x'\nchat = -1001\n")
    in_force = RoutesInForce(str(routes), 1_800_000_000.0, "titel: unknown key", "kept.toml")
    again = RefusedAgain(in_force, ROUTE_SOURCES, every=60, clock=fake_time)

    def said(level: int) -> list[str]:
        return [r.getMessage() for r in caplog.records if r.levelno == level]

    caplog.set_level(logging.WARNING)
    for _ in range(3):
        fake_time.now += 30
        again.upkeep()
    assert len(said(logging.ERROR)) == 1
    assert said(logging.ERROR)[0].startswith("RELAY_ROUTES REFUSED: ")
    assert "accepted at 2027-01-15 08:00:00 UTC, kept in kept.toml" in said(logging.ERROR)[0]
    routes.write_text(EXAMPLE.read_text())  # fixed on disk, not yet reloaded
    fake_time.now += 60
    again.upkeep()
    fake_time.now += 600
    again.upkeep()
    assert len(said(logging.ERROR)) == 1
    assert said(logging.WARNING) == [
        f"RELAY_ROUTES {routes} reads well now; the relay still routes by the last good file "
        "until it is reloaded (systemctl reload)"
    ]


def run(*args: str, **environ: str) -> tuple[int, str, str]:
    out, err = io.StringIO(), io.StringIO()
    code = main(
        list(args), environ={"TELEGRAM_CHAT_ID": "-1001234567890", **environ}, out=out, err=err
    )
    return code, out.getvalue(), err.getvalue()


def test_routes_check_and_test_say_what_would_happen_and_send_nothing(tmp_path: Path) -> None:
    code, out, _ = run("routes", "check", str(EXAMPLE))
    assert code == 0
    assert out.splitlines()[1] == (
        "route 2 “payments on call”: project is 'payments' and environment is 'production' or "
        "'prod': chat -1002000000001, calling @oncall_ivan, tg:123456789"
    )
    assert out.rstrip().endswith("4 routes, first match wins")
    saved = tmp_path / "webhook.json"
    saved.write_text(
        json.dumps(
            payloads.issue_alert(
                issue(1, "payments", "prod"), payloads.issue(2, title="HealthCheck failed")
            )
        )
    )
    code, out, _ = run(
        "routes", "test", str(saved), "--at", "2026-12-07T12:00", RELAY_ROUTES=str(EXAMPLE)
    )
    assert code == 0
    assert out.splitlines() == [
        "at 2026-12-07 12:00 UTC:",
        "chat -1002000000001: route 2 “payments on call”",
        "  BACKEND-1A ZeroDivisionError: division by zero #1",
        "  calls @oncall_ivan, tg:123456789",
        "  rings",
        "dropped: route 1 “health checks”",
        "  HealthCheck failed",
        "nothing was sent",
    ]
    broken = tmp_path / "broken.toml"
    broken.write_text("[[route]]\nprojekt = 'x'\nchat = -1\n")
    code, _, err = run("routes", "check", str(broken))
    assert code == 1
    assert f"{broken}:2: route 1, projekt: unknown key; did you mean 'project'?" in err


def a_route(number: int) -> str:
    return f"[[route]]\nname = 'r{number}'\nproject = 'p{number}'\nchat = -100{number}\n\n"


def test_a_file_over_its_size_is_refused_naming_the_cap_before_any_of_it_is_parsed(
    tmp_path: Path,
) -> None:
    big = tmp_path / "routes.toml"
    # Valid TOML all the way: the size alone refuses it.
    big.write_text(a_route(1) + "# " + "x" * MAX_ROUTES_BYTES + "\n")
    with pytest.raises(RoutesError) as raised:
        read_routes(str(big), ROUTE_SOURCES)
    said = str(raised.value)
    assert f"holds {big.stat().st_size} bytes, over the cap of {MAX_ROUTES_BYTES} bytes" in said
    assert said.startswith(str(big))
    # Exactly at the cap it is read.
    big.write_text(a_route(1) + "#" * (MAX_ROUTES_BYTES - len(a_route(1)) - 1) + "\n")
    assert big.stat().st_size == MAX_ROUTES_BYTES
    assert len(read_routes(str(big), ROUTE_SOURCES).routes) == 1


def test_a_file_that_never_ends_is_read_no_further_than_its_cap() -> None:
    # A device (or a file still growing) ends at the cap, refused, instead of filling memory.
    with pytest.raises(RoutesError, match=r"/dev/zero: holds more, over the cap of"):
        read_routes("/dev/zero", ROUTE_SOURCES)


def test_a_file_with_more_routes_than_the_cap_is_refused_naming_the_route_past_it() -> None:
    at_cap = "".join(a_route(number) for number in range(1, MAX_ROUTES + 1))
    assert len(parse_routes(at_cap, "x.toml", ROUTE_SOURCES).routes) == MAX_ROUTES
    with pytest.raises(RoutesError) as raised:
        parse_routes(at_cap + a_route(MAX_ROUTES + 1), "x.toml", ROUTE_SOURCES)
    line = at_cap.count("\n") + 1
    assert str(raised.value).startswith(
        f"x.toml:{line}: route {MAX_ROUTES + 1}: the file holds {MAX_ROUTES + 1} routes, "
        f"over the cap of {MAX_ROUTES}"
    )


def test_a_file_over_a_cap_is_refused_at_start_and_on_reload_and_the_last_good_stays(
    tmp_path: Path,
) -> None:
    routes = tmp_path / "routes.toml"
    routes.write_text(EXAMPLE.read_text())
    environ = {
        "TELEGRAM_BOT_TOKEN": "123456:" + "A" * 35,
        "TELEGRAM_CHAT_ID": "-1001234567890",
        "RELAY_WEBHOOK_SECRET": "s" * 32,
        "RELAY_ROUTES": str(routes),
        "RELAY_SPOOL_PATH": str(tmp_path / "spool.sqlite3"),
    }
    put_in_force(environ, ROUTE_SOURCES)
    routes.write_text("".join(a_route(number) for number in range(1, MAX_ROUTES + 2)))
    with pytest.raises(ConfigError, match=rf"RELAY_ROUTES.*over the cap of {MAX_ROUTES}"):
        Settings.from_env({key: v for key, v in environ.items() if key != IN_FORCE}, THEIRS)
    refused = put_in_force(environ, ROUTE_SOURCES).refused  # a reload: refused
    assert refused is not None
    assert "over the cap" in refused
    assert (
        len(routes_from_env(environ, ROUTE_SOURCES).routes) == 4
    )  # the last good file stays in force


class CountedParses:
    """tomllib.loads as the routes module calls it, counting its calls."""

    def __init__(self) -> None:
        self.calls = 0

    def loads(self, text: str) -> dict[str, Any]:
        self.calls += 1
        return tomllib.loads(text)


def test_the_file_is_parsed_once_per_process_for_each_content_it_has(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    parses = CountedParses()
    monkeypatch.setattr(table_module, "tomllib", parses)
    table_module.parse_routes.cache_clear()
    routes = tmp_path / "routes.toml"
    routes.write_text(EXAMPLE.read_text())
    environ = {
        "TELEGRAM_BOT_TOKEN": "123456:" + "A" * 35,
        "TELEGRAM_CHAT_ID": "-1001234567890",
        "RELAY_WEBHOOK_SECRET": "s" * 32,
        "RELAY_ROUTES": str(routes),
        "RELAY_SPOOL_PATH": str(tmp_path / "spool.sqlite3"),
    }
    # gunicorn's master at start: the file put in force, then the variables checked; then a
    # worker, forked from it, reads the copy in force.
    put_in_force(environ, ROUTE_SOURCES)
    Settings.from_env(environ, THEIRS)
    Settings.from_env(environ, THEIRS)
    assert parses.calls == 1
    # A reload with a changed file: parsed once again, for its new content.
    routes.write_text(a_route(1))
    put_in_force(environ, ROUTE_SOURCES)
    assert len(Settings.from_env(environ, THEIRS).routes.routes) == 1
    assert parses.calls == 2


def test_each_chat_reads_times_in_its_routes_zone_else_the_relays() -> None:
    routes = parse_routes(
        "[[route]]\nproject = 'shop'\nchat = '-1002'\ntimezone = 'Europe/Moscow'\n"
        "[[route]]\nproject = 'shop-eu'\nchat = '-1002'\ntimezone = 'Europe/Berlin'\n"
        "[[route]]\nenvironment = 'staging'\nthread = 7\ntimezone = 'Asia/Tokyo'\n",
        "r.toml",
        ROUTE_SOURCES,
    )
    zones = Zones(
        routes, default_destination=Destination(-1001), default=ZoneInfo("America/New_York")
    )
    assert zones.of("-1002") == ZoneInfo("Europe/Moscow")  # the first route there that names one
    assert zones.of(-1002) == ZoneInfo("Europe/Moscow")
    assert zones.of("-1001") == ZoneInfo("Asia/Tokyo")  # a route with no chat: the default chat's
    assert zones.of("-1003") == ZoneInfo("America/New_York")  # no route names one: the relay's


def test_a_route_may_give_each_issue_a_topic_and_keep_a_board(tmp_path: Path) -> None:
    routes = tmp_path / "routes.toml"
    routes.write_text(
        '[[route]]\nname = "ops"\nchat = -1002000000001\nthread = 7\ntopics = "per_issue"\n'
        "board = true\n"
    )
    table = read_routes(str(routes), ROUTE_SOURCES)
    place = Destination(-1002000000001, 7)
    assert table.rooms(Destination(1)) == frozenset({place})
    assert table.boards(Destination(1)) == (place,)
    code, out, _ = run("routes", "check", str(routes))
    assert code == 0
    assert "a forum topic per issue, a pinned board of its open issues" in out
    saved = tmp_path / "webhook.json"
    saved.write_text(json.dumps(payloads.issue_alert(payloads.issue(1))))
    code, out, _ = run("routes", "test", str(saved), RELAY_ROUTES=str(routes))
    assert code == 0
    assert (
        "  each issue in a forum topic of its own (made by its first card sent alone; a digest,"
        " or where Telegram refuses topics: chat -1002000000001 topic 7)"
    ) in out.splitlines()
    assert "  listed on the board pinned in chat -1002000000001 topic 7" in out.splitlines()
    for wrong, said in (
        ('topics = "per_chat"', 'topics: must be "per_issue"'),
        ("board = 1", "board: must be true or false"),
    ):
        with pytest.raises(RoutesError, match=said):
            parse_routes(f"[[route]]\nchat = -1001\n{wrong}\n", "x.toml", ROUTE_SOURCES)


def test_a_routes_levels_are_looked_up_for_the_issues_whose_alert_does_not_say_theirs() -> None:
    """Of a source with a token at its own address, whichever source: GlitchTip's say only a
    colour; a Sentry alert says its event's level, unless the event had none."""
    homes = IssueHomes(
        (
            (GLITCHTIP_SOURCE, Home("https://glitchtip.example.org")),
            (SENTRY_SOURCE, Home("https://sentry.example.org")),
        )
    )
    glitchtips = read(payloads.issue_alert(issue(1, "shop", "prod")))
    [link] = [i.link for i in glitchtips.issues]  # type: ignore[union-attr]
    assert route_module._issue_ids(glitchtips, homes) == {link: "acme/1"}
    elsewhere = IssueHomes(((GLITCHTIP_SOURCE, Home("https://gt.example.org")),))
    assert route_module._issue_ids(glitchtips, elsewhere) == {}
    sentry_link = "https://sentry.example.org/organizations/acme/issues/12/"
    said = Issue("Boom", sentry_link, None, "error", None, (), level="fatal")
    unsaid = Issue("Bang", sentry_link.replace("12", "13"), None, "warning", None, ())
    sentrys = IssueAlert("", (said, unsaid), 2, "sentry")
    assert route_module._issue_ids(sentrys, homes) == {unsaid.link: "sentry:13"}
    # A source without a token is asked nothing.
    assert route_module._issue_ids(sentrys, elsewhere) == {}


def test_a_routes_source_is_one_the_registry_declares() -> None:
    """The sources a route may name are the registry's (each source's capability's), given to
    the parse: the routes' parser names none itself."""
    text = "[[route]]\nsource = ['glitchtip', 'jira']\nchat = -1001\n"
    with pytest.raises(RoutesError, match="'jira' is not a source of alerts"):
        parse_routes(text, "x.toml", ROUTE_SOURCES)
    [route] = parse_routes(text, "x.toml", (*ROUTE_SOURCES, "jira")).routes
    assert route.matchers[0].values == ("glitchtip", "jira")
    with pytest.raises(RoutesError, match="a source of alerts: the relay has none"):
        parse_routes(text, "x.toml", ())
    assert ROUTE_SOURCES == ("glitchtip", "sentry")  # the registry's, in its order
