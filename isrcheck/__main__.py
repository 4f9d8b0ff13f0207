"""``python -m isrcheck``: the same as the ``isrcheck`` command."""
from isrcheck.cli import main

if __name__ == "__main__":
    main(prog_name="isrcheck")
