"""The floor for bench/intake.py: a bare Flask endpoint that makes only the relay's one
`requests.post` to Telegram, under the same gunicorn settings. Not part of the product.

It posts the very body the relay would post for the bench's payload (built once, at import), so
the fake Telegram does the same work for both and the difference is the relay's own cost.
"""

from __future__ import annotations

import os

import requests
from flask import Flask

from bench.payload import PAYLOAD
from relay_app.glitchtip.webhook import read_webhook
from relay_app.message.formatting import format_alert
from relay_app.words import ENGLISH

SEND_URL = f"{os.environ['TELEGRAM_API_URL']}/bot{os.environ['TELEGRAM_BOT_TOKEN']}/sendMessage"
TIMEOUT = float(os.environ.get("RELAY_SEND_TIMEOUT", "5"))
BODY = {
    "chat_id": int(os.environ["TELEGRAM_CHAT_ID"]),
    "text": format_alert(read_webhook(PAYLOAD), ENGLISH).html,
    "link_preview_options": {"is_disabled": True},
    "parse_mode": "HTML",
}

app = Flask(__name__)
session = requests.Session()  # the relay reuses connections too


@app.get("/healthz")
def healthz() -> dict[str, str]:
    return {"status": "ok"}


@app.post("/webhook/<secret>")
def webhook(secret: str) -> tuple[dict[str, str], int]:
    try:
        session.post(SEND_URL, json=BODY, timeout=(TIMEOUT, TIMEOUT))
    except requests.RequestException:
        return {"status": "failed"}, 502
    return {"status": "sent"}, 200
