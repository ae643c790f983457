"""Charts of an issue asked for in the chat (plugin.py)."""
