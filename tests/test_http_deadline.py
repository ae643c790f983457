"""The urllib3 and PySocks internals that core/http_deadline.py builds on, the one module that
may: each is checked here, so that a release that changes one fails this test by name rather
than letting a stalled proxy or server hold a webhook past GlitchTip's 10 s. What the deadline
does with them is tried in tests/test_telegram.py and tests/test_socks.py."""

from __future__ import annotations

import inspect

from urllib3 import poolmanager
from urllib3.connection import HTTPConnection, HTTPSConnection
from urllib3.contrib.socks import SOCKSConnection, SOCKSHTTPSConnection, SOCKSProxyManager

from relay_app.core import http_deadline


def test_urllib3_makes_each_connection_in_new_conn_and_picks_pools_by_scheme() -> None:
    # Overridden so that the SOCKS socket is watched before the proxy's handshake.
    for connection in (HTTPConnection, SOCKSConnection, SOCKSHTTPSConnection):
        assert list(inspect.signature(connection._new_conn).parameters) == ["self"]
    # Replaced on a session's pool manager by the adapter, for http and https alike.
    assert set(poolmanager.pool_classes_by_scheme) == {"http", "https"}
    manager = SOCKSProxyManager("socks5h://127.0.0.1:1080")
    assert set(manager.pool_classes_by_scheme) == {"http", "https"}
    assert HTTPSConnection.connect is not HTTPConnection.connect  # TLS wraps in connect()


def test_a_socks_connection_still_carries_its_proxys_options() -> None:
    manager = SOCKSProxyManager("socks5h://user:secret@127.0.0.1:1080")
    pool = manager.connection_from_url("https://api.telegram.org/")
    connection = pool.ConnectionCls(host="api.telegram.org", port=443, **pool.conn_kw)
    assert isinstance(connection, SOCKSConnection)
    options = connection._socks_options
    assert {"socks_version", "proxy_host", "proxy_port", "rdns", "username", "password"} <= set(
        options
    )
    assert (options["proxy_host"], options["username"], options["rdns"]) == (
        "127.0.0.1",
        "user",
        True,
    )


def test_the_deadline_module_is_where_these_names_are_used() -> None:
    source = inspect.getsource(http_deadline)
    assert "_socks_options" in source
    assert "_new_conn" in source
