"""One rule for every public ``timeout`` (see raider_sync.threads.timeouts.seconds): None is the
method's documented default, a finite number above 0 is that many seconds, and 0, a negative,
NaN, infinity, a bool or a string raise InvalidArgument naming ``timeout`` and the method,
before anything is sent. The polls (Tasks.notifications, Subscription.next, events and
wait_acknowledged, Monitor.join) take 0 as "do not wait" and refuse the rest the same way.

The methods are found by introspection, so a new public method that takes a timeout fails
here until it has a recipe below, and so a check."""
from __future__ import annotations

import inspect
import math
import sys
import time
from concurrent.futures import Future
from typing import Any, Callable

import pytest

from raider_sync import InvalidArgument, McpHub, McpServer, Resources, TaskHandle, Tasks, ToolServer
from raider_sync.auth import MemoryTokenStore, OAuth
from raider_sync.client.eras.listen import Subscription
from raider_sync.llm import ToolCaller
from raider_sync.shell import Monitor

from ..conftest import config_of

#: the spec's timeout (ms): a call timeout no default of the library has
CALL_TIMEOUT_MS = 7000
DEMO = {"command": sys.executable, "args": ["-m", "raider_sync.demo"], "timeout": CALL_TIMEOUT_MS}
CLASSES = (McpServer, McpHub, Resources, ToolServer, ToolCaller, Tasks, Subscription, Monitor,
           OAuth)
POLLS = {"Tasks.notifications", "Subscription.next", "Subscription.events",
         "Subscription.wait_acknowledged", "Monitor.join"}
#: made by BashTools only, with the model's timeout_ms held between its bounds
INTERNAL = {"Monitor"}
REFUSED = (0, 0.0, -1, math.nan, math.inf, True, False, "5")
POLL_REFUSED = (-1, -0.5, math.nan, math.inf, True, "5")
ECHO = "mcp__demo__echo"


def public_timeout_methods() -> list[str]:
    """``Class.method`` (``Class`` for a constructor) of every public callable of the
    public classes that takes a ``timeout``."""
    found = []
    for cls in CLASSES:
        for name, fn in inspect.getmembers(cls, inspect.isfunction):
            if (name.startswith("_") and name != "__init__") or fn.__qualname__.startswith("object."):
                continue
            if "timeout" in inspect.signature(fn).parameters:
                found.append(cls.__name__ if name == "__init__" else f"{cls.__name__}.{name}")
    return sorted(set(found) - INTERNAL)


class World:
    """What the recipes call, made on first use: a hub with the demo server over stdio, its
    client (whose session records what is sent), Resources of the hub, a ToolServer in this
    process, a ToolCaller of it, Tasks, a Subscription, a Monitor and an OAuth."""

    def __init__(self, tmp_path) -> None:
        self.tmp_path = tmp_path
        self.sent: list[tuple[str, Any]] = []
        self._hub: McpHub | None = None
        self._tools: ToolServer | None = None

    @property
    def hub(self) -> McpHub:
        if self._hub is None:
            self._hub = McpHub(config_of({"demo": DEMO}), kill_grace=0.5)
            self._hub.start()
            assert self.server.status == "connected", self.server.reason
            self.record()
        return self._hub

    @property
    def server(self) -> McpServer:
        return self.hub.client("demo")

    def record(self) -> None:
        """Have the client's session note every request and notification it is given."""
        session = self.server._session
        request_f, notify = session.request_f, session.notify

        def recorded_request_f(method, params=None, **options):
            deadline = options.get("deadline")  # what is left of the caller's one deadline
            self.sent.append((method, deadline.left() if deadline is not None
                              else options.get("timeout")))
            return request_f(method, params, **options)

        def recorded_notify(method, params=None):
            self.sent.append((method, None))
            return notify(method, params)

        session.request_f, session.notify = recorded_request_f, recorded_notify

    @property
    def resources(self) -> Resources:
        return Resources(lambda: self.hub.clients)

    @property
    def tools(self) -> ToolServer:
        if self._tools is None:
            self._tools = ToolServer("local")
            self._tools.add_tool("echo", lambda message: message)
            self._tools.add_resource("local://a", lambda: "a")
            self._tools.add_prompt("hello", lambda: "hello")
        return self._tools

    def close(self) -> None:
        if self._hub is not None:
            self._hub.stop()
        if self._tools is not None:
            self._tools.close()


def _monitor(w: World) -> Monitor:
    return Monitor("m1", "true", "nothing", str(w.tmp_path), 5.0, tasks=Tasks(),
                   bash_path="/bin/bash")


def _handle(w: World) -> TaskHandle:
    """A handle of a task the demo server never had: a resume asks, and is told so."""
    return TaskHandle(era="v2", task_id="no-such-task", **w.server._task_identity())


RECIPES: dict[str, Callable[[World, Any], Any]] = {
    "McpServer.initialize": lambda w, t: w.server.initialize(t),
    "McpServer.restart": lambda w, t: w.server.restart(t),
    "McpServer.list_tools": lambda w, t: w.server.list_tools(t),
    "McpServer.call_tool": lambda w, t: w.server.call_tool(ECHO, {"message": "x"}, timeout=t),
    "McpServer.call_tool_f": lambda w, t: w.server.call_tool_f(ECHO, {"message": "x"},
                                                               timeout=t),
    "McpServer.listen": lambda w, t: w.server.listen(tools=True, timeout=t).close(),
    "McpServer.list_prompts": lambda w, t: w.server.list_prompts(t),
    "McpServer.get_prompt": lambda w, t: w.server.get_prompt("review", {"topic": "x"},
                                                             timeout=t),
    "McpServer.get_prompt_f": lambda w, t: w.server.get_prompt_f("review", {"topic": "x"},
                                                                 timeout=t),
    "McpServer.list_resources": lambda w, t: w.server.list_resources(t),
    "McpServer.list_resource_templates": lambda w, t: w.server.list_resource_templates(t),
    "McpServer.read_resource": lambda w, t: w.server.read_resource("demo://guide.md",
                                                                   timeout=t),
    "McpServer.read_resource_f": lambda w, t: w.server.read_resource_f("demo://guide.md",
                                                                       timeout=t),
    "McpServer.list_skills": lambda w, t: w.server.list_skills(timeout=t),
    "McpServer.list_skills_f": lambda w, t: w.server.list_skills_f(timeout=t),
    "McpServer.get_skill": lambda w, t: w.server.get_skill("skill://none/SKILL.md", timeout=t),
    "McpServer.get_skill_f": lambda w, t: w.server.get_skill_f("skill://none/SKILL.md",
                                                               timeout=t),
    "McpServer.ping": lambda w, t: w.server.ping(t),
    "McpServer.set_log_level": lambda w, t: w.server.set_log_level("info", timeout=t),
    "McpServer.set_log_level_f": lambda w, t: w.server.set_log_level_f("info", timeout=t),
    "McpServer.complete": lambda w, t: w.server.complete("review", ("topic", "x"), timeout=t),
    "McpServer.complete_f": lambda w, t: w.server.complete_f("review", ("topic", "x"),
                                                             timeout=t),
    "McpServer.subscribe": lambda w, t: w.server.subscribe("demo://guide.md", timeout=t),
    "McpServer.subscribe_f": lambda w, t: w.server.subscribe_f("demo://guide.md", timeout=t),
    "McpServer.unsubscribe": lambda w, t: w.server.unsubscribe("demo://guide.md", timeout=t),
    "McpServer.unsubscribe_f": lambda w, t: w.server.unsubscribe_f("demo://guide.md",
                                                                   timeout=t),
    "McpServer.request": lambda w, t: w.server.request("ping", timeout=t),
    "McpServer.request_f": lambda w, t: w.server.request_f("ping", timeout=t),
    "McpServer.tool_budget": lambda w, t: w.server.tool_budget(t),
    "McpServer.list_events": lambda w, t: w.server.list_events(timeout=t),
    "McpServer.events": lambda w, t: w.server.events("ticks", timeout=t).close(),
    "McpServer.resume_task": lambda w, t: w.server.resume_task(_handle(w), timeout=t),
    "McpServer.resume_task_f": lambda w, t: w.server.resume_task_f(_handle(w), timeout=t),
    "McpHub.start": lambda w, t: w.hub.start(t),
    "McpHub.restart": lambda w, t: w.hub.restart("demo", t),
    "McpHub.tools": lambda w, t: w.hub.tools(t),
    "McpHub.tool_budget": lambda w, t: w.hub.tool_budget(t),
    "McpHub.resource_templates": lambda w, t: w.hub.resource_templates(timeout=t),
    "McpHub.call_tool": lambda w, t: w.hub.call_tool(ECHO, {"message": "x"}, timeout=t),
    "McpHub.call_tool_f": lambda w, t: w.hub.call_tool_f(ECHO, {"message": "x"}, timeout=t),
    "Resources": lambda w, t: Resources(lambda: w.hub.clients, timeout=t),
    "Resources.list": lambda w, t: w.resources.list(timeout=t),
    "Resources.read": lambda w, t: w.resources.read("demo", "demo://guide.md", timeout=t),
    "Resources.read_f": lambda w, t: w.resources.read_f("demo", "demo://guide.md", timeout=t),
    "Resources.attachments": lambda w, t: w.resources.attachments("see @demo:demo://guide.md",
                                                                  timeout=t),
    "Resources.attachments_f": lambda w, t: w.resources.attachments_f(
        "see @demo:demo://guide.md", timeout=t),
    "ToolServer.initialize": lambda w, t: w.tools.initialize(t),
    "ToolServer.list_tools": lambda w, t: w.tools.list_tools(t),
    "ToolServer.call_tool": lambda w, t: w.tools.call_tool("echo", {"message": "x"}, timeout=t),
    "ToolServer.call_tool_f": lambda w, t: w.tools.call_tool_f("echo", {"message": "x"},
                                                               timeout=t),
    "ToolServer.list_resources": lambda w, t: w.tools.list_resources(t),
    "ToolServer.list_resource_templates": lambda w, t: w.tools.list_resource_templates(t),
    "ToolServer.read_resource": lambda w, t: w.tools.read_resource("local://a", timeout=t),
    "ToolServer.read_resource_f": lambda w, t: w.tools.read_resource_f("local://a", timeout=t),
    "ToolServer.list_prompts": lambda w, t: w.tools.list_prompts(t),
    "ToolServer.get_prompt": lambda w, t: w.tools.get_prompt("hello", timeout=t),
    "ToolServer.close": lambda w, t: ToolServer("closing").close(t),
    "ToolCaller": lambda w, t: ToolCaller(w.tools, timeout=t),
    "ToolCaller.call": lambda w, t: ToolCaller(w.tools).call("echo", {"message": "x"},
                                                             timeout=t),
    "ToolCaller.call_f": lambda w, t: ToolCaller(w.tools).call_f("echo", {"message": "x"},
                                                                 timeout=t),
    "Tasks.notifications": lambda w, t: Tasks().notifications("main", block=True, timeout=t),
    "Subscription.next": lambda w, t: Subscription({}).next(t),
    "Subscription.events": lambda w, t: list(Subscription({}).events(t)),
    "Subscription.wait_acknowledged": lambda w, t: Subscription({}).wait_acknowledged(t),
    "Monitor.join": lambda w, t: _monitor(w).join(t),
    "OAuth": lambda w, t: OAuth(store=MemoryTokenStore(), timeout=t),
    "OAuth.login": lambda w, t: OAuth(store=MemoryTokenStore()).login(timeout=t),
}


@pytest.fixture
def world(tmp_path):
    made = World(tmp_path)
    yield made
    made.close()


def refusal(outcome: Callable[[], Any]) -> BaseException | None:
    """What ``outcome()`` raised, or the error of the future it returned, which must be
    failed already (nothing was waited for)."""
    try:
        value = outcome()
    except Exception as exc:  # noqa: BLE001 - the error is what is looked at
        return exc
    if isinstance(value, Future):
        assert value.done(), "a refused timeout must fail the future at once"
        return value.exception(0)
    return None


def test_every_public_timeout_has_a_recipe():
    """A new public method with a ``timeout`` has to be added here, and so checked."""
    assert sorted(RECIPES) == public_timeout_methods()


@pytest.mark.parametrize("method", public_timeout_methods())
def test_a_timeout_that_is_not_a_number_of_seconds_is_refused_naming_it(world, method):
    recipe = RECIPES[method]
    if method.startswith(("McpServer.", "McpHub.", "Resources")):
        assert world.hub  # started first: what the refusals send is recorded
    before = list(world.sent)
    for bad in POLL_REFUSED if method in POLLS else REFUSED:
        error = refusal(lambda bad=bad: recipe(world, bad))
        assert isinstance(error, InvalidArgument), (bad, error)
        assert isinstance(error, ValueError)
        assert f"timeout of {method} must be a number of seconds" in str(error), str(error)
        assert repr(bad) in str(error)
    assert world.sent == before, "nothing is sent for a refused timeout"


@pytest.mark.parametrize("method", sorted(set(RECIPES) - POLLS - {"OAuth.login"}))
def test_none_is_the_default(world, method):
    """None is never refused; a request it sends carries the call timeout (the spec's)."""
    recipe = RECIPES[method]
    if method.startswith(("McpServer.", "McpHub.", "Resources")):
        assert world.hub
    before = len(world.sent)
    error = refusal(lambda: _settled(recipe(world, None)))
    assert not isinstance(error, InvalidArgument), error
    sent = [timeout for _, timeout in world.sent[before:] if timeout is not None]
    if method in ("McpServer.call_tool", "McpServer.call_tool_f", "McpServer.request",
                  "McpServer.request_f", "McpServer.get_prompt", "McpServer.read_resource",
                  "McpHub.call_tool", "Resources.read"):
        assert sent and CALL_TIMEOUT_MS / 1000 - 2 < sent[0] <= CALL_TIMEOUT_MS / 1000, sent


def _settled(value: Any) -> Any:
    """A future's result (its error raised), waited for within a bound."""
    return value.result(30) if isinstance(value, Future) else value


@pytest.mark.parametrize("method", sorted(POLLS))
def test_zero_is_a_poll_on_the_methods_that_take_what_has_arrived(world, method):
    started = time.monotonic()
    error = refusal(lambda: RECIPES[method](world, 0))
    assert error is None
    assert time.monotonic() - started < 1.0, "0 waits for nothing"


def test_the_same_zero_raises_on_a_listing_a_call_and_a_hub(world):
    """Before, ``timeout=0`` was the call timeout on list_tools, the listings, subscribe,
    listen and McpHub.tools, ended a ToolServer call at once, and was refused on call_tool."""
    for method in ("McpServer.list_tools", "McpServer.list_resources", "McpServer.listen",
                   "McpHub.tools", "ToolServer.call_tool", "McpServer.call_tool",
                   "Resources.read"):
        with pytest.raises(InvalidArgument, match=f"timeout of {method} "):
            _settled(RECIPES[method](world, 0))
