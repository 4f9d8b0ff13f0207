"""Type stub of the C extension engine/_assemble.c (see there)."""
from array import array
from collections.abc import Sequence

def merge(keys: Sequence[bytes], fps: Sequence[bytes], masks: Sequence[Sequence[bytes]], out_fps: array[int],
          out_depth: array[int], out_parent: array[int], out_masks: Sequence[array[int]], first: int,
          level_shift: int, action_bits: int, rank_mask: int) -> None: ...
def rows(srcs: Sequence[array[int]], dsts: Sequence[array[int]], labs: Sequence[bytes], canon: Sequence[array[int]],
         glob: array[int], next: int, out_offsets: array[int], out_dst: array[int],
         out_label: array[int]) -> list[int]: ...
