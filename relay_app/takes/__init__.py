"""On it, as a capability: who has an issue in a chat (plugin.py says all it adds)."""
