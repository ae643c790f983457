"""Routes: which alerts go where and who is called, from one file the operator can test
(RELAY_ROUTES; docs/routing.md). table.py reads and checks the file (with each route's
`sound.py`, `steps.py`, `summary_time.py` and the `rotation.py` it names: what they do lives
in their capabilities), split.py routes each issue of a webhook; operating/routes_file.py keeps
the last good file in force across reloads."""

from .split import Dropped, Part, Split, split
from .table import NO_ROUTES, Route, RoutesError, RouteTable, parse_routes, read_routes

__all__ = [
    "NO_ROUTES",
    "Dropped",
    "Part",
    "Route",
    "RouteTable",
    "RoutesError",
    "Split",
    "parse_routes",
    "read_routes",
    "split",
]
