"""``python -m raider_sync.gateway --config FILE --listen HOST:PORT``: the gateway command alone."""
import sys

from .cli import main

sys.exit(main())
