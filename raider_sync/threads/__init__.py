"""Threads and time, below everything that does I/O: futures with one deadline
(:mod:`.futures`), the shared timer thread (:mod:`.timer`), a bounded worker pool
(:mod:`.workers`), the steps a Ctrl-C cannot tear in half (:mod:`.interrupts`) and one
renewal at a time however many threads find a thing stale (:mod:`.renewal`).
Nothing here knows MCP or JSON-RPC."""
