"""What every part of the relay uses, and which uses nothing above it: the errors, a
destination (chat and topic), time, logs (with secrets redacted), deadlines for network calls,
Telegram's pacing rules, an attempt's outcomes, the counters /metrics shows, and what a
client's strings may hold."""
