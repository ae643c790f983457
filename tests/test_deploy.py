"""The files an operator loads rather than reads: deploy/prometheus-rules.yml,
deploy/grafana-dashboard.json and the compose files. promtool (Debian's `prometheus` package;
.ci/run installs it) checks the rules and their unit tests, and the dashboard's PromQL; every
metric either names must be one the relay's /metrics exports."""

from __future__ import annotations

import json
import os
import re
import subprocess
from pathlib import Path
from typing import Any

import pytest
import yaml
from flask.testing import FlaskClient
from prometheus_client.parser import text_string_to_metric_families

from relay_app.spool import open_spool
from tests.conftest import required_tool

ROOT = Path(__file__).resolve().parents[1]
RULES = ROOT / "deploy" / "prometheus-rules.yml"
RULES_TEST = ROOT / "tests" / "deploy" / "prometheus-rules-test.yml"
DASHBOARD = ROOT / "deploy" / "grafana-dashboard.json"
# A metric's name, not a label's value (job="relay_app").
METRIC_NAME = re.compile(r"""(?<![\w"])relay_[a-z_]+\b""")
# Grafana's own variables, as Prometheus would see them once Grafana has filled them in.
GRAFANA_VARIABLES = {
    "$__rate_interval": "5m",
    "$__interval": "1m",
    "$__range": "1h",
    "$instance": ".+",  # the dashboard's own: All
}


def promtool() -> str:
    return required_tool("promtool", "prometheus")


def run_promtool(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [promtool(), *args], capture_output=True, text=True, timeout=60, check=False, cwd=ROOT
    )


def rule_expressions() -> list[str]:
    rules = yaml.safe_load(RULES.read_text())
    return [rule["expr"] for group in rules["groups"] for rule in group["rules"]]


def dashboard_expressions() -> list[str]:
    dashboard: dict[str, Any] = json.loads(DASHBOARD.read_text())
    return [target["expr"] for panel in dashboard["panels"] for target in panel["targets"]]


def exported_names(client: FlaskClient) -> set[str]:
    """Every sample name /metrics can carry, those of metrics with no sample yet included."""
    reply = client.get("/metrics")
    assert reply.status_code == 200
    suffixes = {
        "counter": ("_total", "_created"),
        "histogram": ("_bucket", "_sum", "_count", "_created"),
    }
    names = set()
    for family in text_string_to_metric_families(reply.text):
        names.add(family.name)
        names.update(family.name + suffix for suffix in suffixes.get(family.type, ()))
    return names


def test_the_alert_rules_pass_promtool() -> None:
    checked = run_promtool("check", "rules", str(RULES))
    assert checked.returncode == 0, checked.stdout + checked.stderr
    assert "SUCCESS: 15 rules found" in checked.stdout


def test_each_alert_rule_fires_when_it_should_and_only_then() -> None:
    tested = run_promtool("test", "rules", str(RULES_TEST))
    assert tested.returncode == 0, tested.stdout + tested.stderr


def test_the_dashboards_queries_are_valid_promql(tmp_path: Path) -> None:
    expressions = dashboard_expressions()
    assert len(expressions) >= 14
    rules = []
    for index, expr in enumerate(expressions):
        for variable, value in GRAFANA_VARIABLES.items():
            expr = expr.replace(variable, value)
        rules.append({"record": f"dashboard:query_{index}", "expr": expr})
    as_rules = tmp_path / "dashboard-queries.yml"
    as_rules.write_text(yaml.safe_dump({"groups": [{"name": "dashboard", "rules": rules}]}))
    checked = run_promtool("check", "rules", str(as_rules))
    assert checked.returncode == 0, checked.stdout + checked.stderr


def test_every_metric_the_rules_and_dashboard_name_is_exported(client: FlaskClient) -> None:
    exported = exported_names(client)
    in_rules = {name for expr in rule_expressions() for name in METRIC_NAME.findall(expr)}
    in_dashboard = {name for expr in dashboard_expressions() for name in METRIC_NAME.findall(expr)}
    # What the issue asks them to show, so an emptied file cannot pass.
    assert {
        "relay_spool_alerts",
        "relay_spool_oldest_pending_age_seconds",
        "relay_spool_usable",
        "relay_webhooks_total",
    } <= in_rules
    assert {
        "relay_webhooks_total",
        "relay_delivery_seconds_bucket",
        "relay_spool_alerts",
        "relay_telegram_rate_limited_total",
        "relay_digest_alerts_count",
        "relay_silences_active",
        "relay_alerts_silenced_total",
        "relay_button_presses_total",
        "relay_requests_missed_total",
    } <= in_dashboard
    assert in_rules - exported == set()
    assert in_dashboard - exported == set()


def test_a_misspelt_metric_would_be_caught(client: FlaskClient) -> None:
    assert "relay_webhook_total" not in exported_names(client)
    assert "relay_spool_alerts_total" not in exported_names(client)


def test_every_panel_shows_the_instances_the_variable_picks() -> None:
    dashboard: dict[str, Any] = json.loads(DASHBOARD.read_text())
    [variable] = dashboard["templating"]["list"]
    assert variable["name"] == "instance"
    assert variable["includeAll"]
    for expr in dashboard_expressions():
        for selector in re.findall(r"relay_[a-z_]+(\{[^}]*\})?", expr):
            assert 'instance=~"$instance"' in selector, expr


def test_every_panel_queries_prometheus_through_the_imported_data_source() -> None:
    dashboard: dict[str, Any] = json.loads(DASHBOARD.read_text())
    assert [source["name"] for source in dashboard["__inputs"]] == ["DS_PROMETHEUS"]
    for panel in dashboard["panels"]:
        assert panel["datasource"]["uid"] == "${DS_PROMETHEUS}", panel["title"]
        assert panel["targets"], panel["title"]


@pytest.mark.parametrize("name", ["compose.example.yaml", "deploy/compose.postgres.yaml"])
def test_a_compose_file_lists_every_variable_it_needs_in_its_header(name: str) -> None:
    text = (ROOT / name).read_text()
    required = set(re.findall(r"\$\{([A-Z_]+):\?", text))
    optional = set(re.findall(r"\$\{([A-Z_]+):-", text))
    assert {"GLITCHTIP_DOMAIN", "GLITCHTIP_SECRET_KEY", "TELEGRAM_BOT_TOKEN"} <= required
    header = text.split("\n\n", 1)[0]
    listed = set(re.findall(r"^#\s+([A-Z_]+)=", header, re.MULTILINE))
    assert listed == required | optional
    compose = yaml.safe_load(text)
    relay = compose["services"]["relay"]
    # The URL the header tells users to paste into GlitchTip is where the image listens.
    dockerfile = (ROOT / "Dockerfile").read_text()
    [port] = re.findall(r"RELAY_BIND=0\.0\.0\.0:(\d+)", dockerfile)
    assert f"http://relay:{port}/webhook/<RELAY_WEBHOOK_SECRET>" in header
    admin_port = relay["environment"]["RELAY_ADMIN_BIND"].rsplit(":", 1)[1]
    if relay.get("deploy", {}).get("replicas", 1) > 1:
        # Every replica scraped, not whichever one the name resolves to.
        assert f"dns_sd_configs: names [relay], type A, port {admin_port}" in header
    else:
        assert f"http://relay:{admin_port}/metrics" in header
    assert relay["stop_grace_period"] == "40s"
    if "RELAY_SPOOL_URL" in relay["environment"]:
        # Replicas share the database; the file spool's volume would be one replica's only.
        assert relay["deploy"]["replicas"] >= 2
        assert "volumes" not in relay
        # The image's RELAY_SPOOL_PATH would be refused beside the URL; the host's own file
        # goes where the relay's user may write (the image's /data volume), not in /app.
        assert relay["environment"]["RELAY_SPOOL_PATH"] == ""
        assert relay["environment"]["RELAY_LOCAL_SPOOL_PATH"].startswith("/data/")
        assert re.search(r"^VOLUME \[\"/data\"\]$", dockerfile, re.MULTILINE)
        assert (ROOT / "deploy" / relay["build"] / "Dockerfile").exists()


def test_the_systemd_unit_passes_systemd_analyze(tmp_path: Path) -> None:
    analyze = required_tool("systemd-analyze", "systemd")
    unit = (ROOT / "deploy" / "relay-app.service").read_text()
    assert "EnvironmentFile=/etc/relay-app.env" in unit
    # verify wants the program to exist: this checkout's, where the unit names /opt/relay-app's.
    here = unit.replace("/opt/relay-app/.venv/bin/gunicorn", f"{ROOT}/.venv/bin/gunicorn")
    here = here.replace("WorkingDirectory=/opt/relay-app", f"WorkingDirectory={ROOT}")
    copy = tmp_path / "relay-app.service"
    copy.write_text(here)
    verified = subprocess.run(
        [analyze, "verify", str(copy)], capture_output=True, text=True, timeout=60, check=False
    )
    # systemd-analyze exits 0 even on keys it ignores: any word about the unit is a failure.
    assert verified.returncode == 0, verified.stderr
    assert "relay-app.service" not in verified.stdout + verified.stderr, verified.stderr


def test_the_unit_reloads_without_closing_its_port() -> None:
    unit = (ROOT / "deploy" / "relay-app.service").read_text()
    # SIGHUP: gunicorn's master keeps its socket and starts workers on the code on disk.
    assert "ExecReload=/bin/kill -s HUP $MAINPID" in unit
    upgrading = (ROOT / "docs" / "operating.md").read_text().split("## Upgrading", 1)[1]
    steps = upgrading.split("\n## ", 1)[0]
    assert "sudo systemctl reload relay-app" in steps
    assert "systemctl restart" not in steps


def test_relay_app_by_hand_finds_the_spool_the_service_writes(tmp_path: Path) -> None:
    """The environment file is the one place the variables live: the unit sets none of its
    own, and the command the docs show for `relay-app` beside the service works as written."""
    unit = (ROOT / "deploy" / "relay-app.service").read_text()
    assert not re.findall(r"^Environment=", unit, re.MULTILINE)
    example = (ROOT / "deploy" / "relay-app.env.example").read_text()
    [state] = re.findall(r"^StateDirectory=(\S+)$", unit, re.MULTILINE)
    [spool] = re.findall(r"^RELAY_SPOOL_PATH=(\S+)$", example, re.MULTILINE)
    assert spool.startswith(f"/var/lib/{state}/")
    documented = re.compile(r"sudo -u relay-app (sh -c '[^']+')")
    commands = set(documented.findall((ROOT / "docs" / "operating.md").read_text()))
    assert commands == set(documented.findall(example))
    [command] = commands
    # The example, filled in, as /etc/relay-app.env; this checkout as /opt/relay-app.
    here = tmp_path / "spool.sqlite3"
    filled = example.replace(spool, str(here))
    filled = filled.replace("TELEGRAM_BOT_TOKEN=\n", "TELEGRAM_BOT_TOKEN=123456:" + "A" * 35 + "\n")
    filled = filled.replace("TELEGRAM_CHAT_ID=\n", "TELEGRAM_CHAT_ID=-1001234567890\n")
    filled = filled.replace("RELAY_WEBHOOK_SECRET=\n", "RELAY_WEBHOOK_SECRET=" + "s" * 32 + "\n")
    env_file = tmp_path / "relay-app.env"
    env_file.write_text(filled)
    made = open_spool(path=str(here))  # the spool the service made
    assert made is not None
    made.admin.counts()
    made.close()
    ran = subprocess.run(
        command.replace("/etc/relay-app.env", str(env_file))
        .replace("/opt/relay-app", str(ROOT))
        .removeprefix("sh -c '")
        .removesuffix("'"),
        shell=True,
        cwd=tmp_path.parent,  # anywhere: not the spool's directory
        env={"PATH": os.environ["PATH"]},
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )
    assert ran.returncode == 0, ran.stderr
    assert f"0 pending, 0 dead in {here}" in ran.stdout
