"""The package's folders are its layers (docs/architecture.md): a module imports only from the
layers under its own. Every import is read from the source, the ones inside functions too;
the few that still reach up are listed here, with the page's reasons, so a new one fails."""
from __future__ import annotations

import ast
from pathlib import Path

PACKAGE = Path(__file__).resolve().parents[1] / "raider_sync"

#: top first; a module belongs to the first entry that names it or a package above it
LAYERS = [
    ("raider_sync.__main__", "raider_sync.cli"),
    ("raider_sync.shell", "raider_sync.llm", "raider_sync.gateway"),
    ("raider_sync.serve",),
    ("raider_sync.client",),
    ("raider_sync.jsonrpc",),
    ("raider_sync.session",),
    ("raider_sync.transports", "raider_sync.auth"),
    ("raider_sync.threads",),
    ("raider_sync.config",),
    ("raider_sync.protocol",),
    ("raider_sync.errors", "raider_sync._version", "raider_sync._moved"),
]

#: the imports that reach up: none (import-linter checks the same in `make lint`)
UPWARD: set[tuple[str, str]] = set()


def _modules() -> dict[str, tuple[Path, bool]]:
    found = {}
    for path in PACKAGE.rglob("*.py"):
        dotted = ".".join(path.relative_to(PACKAGE.parent).with_suffix("").parts)
        is_package = dotted.endswith(".__init__")
        found[dotted.removesuffix(".__init__")] = (path, is_package)
    return found


def _imports(modules) -> set[tuple[str, str]]:
    """(importer, imported) for every import of one package module by another."""
    edges = set()
    for name, (path, is_package) in modules.items():
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if isinstance(node, ast.ImportFrom):
                if node.level:
                    parts = name.split(".") if is_package else name.split(".")[:-1]
                    parts = parts[:len(parts) - node.level + 1]
                    base = ".".join(parts + ([node.module] if node.module else []))
                else:
                    base = node.module or ""
                targets = [f"{base}.{a.name}" if f"{base}.{a.name}" in modules else base
                           for a in node.names]
            elif isinstance(node, ast.Import):
                targets = [a.name for a in node.names]
            else:
                continue
            for target in targets:
                while target and target not in modules:
                    target = target.rpartition(".")[0]
                if target and target != name and target != "raider_sync":
                    edges.add((name, target))
    return edges


def _layer(module: str) -> tuple[int, str]:
    for index, names in enumerate(LAYERS):
        for top in names:
            if module == top or module.startswith(top + "."):
                return index, top
    raise AssertionError(f"{module} is in no layer: add it to LAYERS and docs/architecture.md")


def test_every_module_imports_only_from_the_layers_under_it():
    modules = _modules()
    upward = set()
    for importer, imported in _imports(modules):
        if importer == "raider_sync":  # the package face names everything
            continue
        (low, low_top), (high, high_top) = _layer(importer), _layer(imported)
        if high < low or (high == low and low_top != high_top and low != 0):
            upward.add((importer, imported))
    assert upward == UPWARD


def test_the_top_of_the_package_holds_few_modules():
    top = sorted(p.stem for p in PACKAGE.glob("*.py") if not p.stem.startswith("_"))
    assert top == ["errors", "jsonrpc"]
