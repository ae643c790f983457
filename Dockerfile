# The relay as a container: `docker build -t relay_app .`, then see docs/container.md.
FROM python:3.11-slim-bookworm

# The spool lives on the volume; everything else in the image is read-only to the relay.
ENV PYTHONDONTWRITEBYTECODE=1 \
    PYTHONUNBUFFERED=1 \
    PIP_NO_CACHE_DIR=1 \
    PIP_DISABLE_PIP_VERSION_CHECK=1 \
    RELAY_BIND=0.0.0.0:8780 \
    RELAY_SPOOL_PATH=/data/relay-spool.sqlite3 \
    PATH=/app/.venv/bin:$PATH

WORKDIR /app
COPY pyproject.toml README.md LICENSE wsgi.py gunicorn.conf.py ./
COPY relay_app ./relay_app

# The README's install steps, word for word (tests/e2e/test_container.py runs this line).
RUN python3 -m venv .venv && .venv/bin/pip install .

RUN useradd --system --uid 10001 --no-create-home --shell /usr/sbin/nologin relay \
    && mkdir /data \
    && chown relay /data
USER 10001
VOLUME ["/data"]
EXPOSE 8780

# Readiness, not mere liveness: a spool the relay cannot write (a /data volume it may not
# write to, a full disk) keeps alerts in memory only, and turns the container unhealthy.
# relay-app ready asks /readyz on RELAY_ADMIN_BIND when it is set, else on RELAY_BIND.
HEALTHCHECK --interval=30s --timeout=5s --start-period=10s --retries=3 \
    CMD ["relay-app", "ready"]

CMD ["gunicorn", "wsgi:app"]
