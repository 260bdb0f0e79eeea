"""``python -m raider_sync.shell [--cwd DIR] [--allow WORD ...]``: serve-shell."""
import sys

from .cli import main

sys.exit(main())
