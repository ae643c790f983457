"""Routes: which alerts go where and who is called, from one file the operator can test
(RELAY_ROUTES; docs/routing.md). table.py reads and checks the file, split.py routes each issue
of a webhook, in_force.py keeps the last good file in force across reloads."""

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
