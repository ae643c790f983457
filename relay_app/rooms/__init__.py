"""Incident rooms: in a forum, each issue a topic of its own that opens and closes with it."""
