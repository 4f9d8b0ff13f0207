"""Type stub of the C extension engine/_newtuple.c (see there)."""
from typing import Any

def new(cls: type, *items: object) -> Any: ...
