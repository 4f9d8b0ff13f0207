"""Type stub of the C extension engine/_scc.c (see there)."""
from array import array

def nontrivial(offsets: array[int], dst: array[int], n: int) -> list[list[int]]: ...
