"""The architecture, enforced: import-linter's contracts (pyproject.toml) and an import graph without cycles."""

import sys
from pathlib import Path

import grimp

ROOT = Path(__file__).resolve().parents[1]


def test_import_contracts_hold(capsys, monkeypatch):
    """import-linter in this process (the unit tier starts none): pyproject.toml's contracts, all kept."""
    from importlinter.application import use_cases
    from importlinter.configuration import configure

    monkeypatch.chdir(ROOT)
    configure()
    passed = use_cases.lint_imports(config_filename=str(ROOT / "pyproject.toml"), cache_dir=None, no_logo=True)
    shown = capsys.readouterr().out
    assert passed == use_cases.SUCCESS, shown
    assert "Contracts: 8 kept, 0 broken" in shown


def cycles(imports: dict[str, set[str]]) -> list[list[str]]:
    """Strongly connected components of more than one module (Tarjan, iterative)."""
    index, low, stack, on_stack, found, counter = {}, {}, [], set(), [], 0
    for start in imports:
        if start in index:
            continue
        work = [(start, iter(sorted(imports[start])))]
        index[start] = low[start] = counter = counter + 1
        stack.append(start)
        on_stack.add(start)
        while work:
            node, edges = work[-1]
            for nxt in edges:
                if nxt not in index:
                    index[nxt] = low[nxt] = counter = counter + 1
                    stack.append(nxt)
                    on_stack.add(nxt)
                    work.append((nxt, iter(sorted(imports.get(nxt, ())))))
                    break
                if nxt in on_stack:
                    low[node] = min(low[node], index[nxt])
            else:
                work.pop()
                if work:
                    low[work[-1][0]] = min(low[work[-1][0]], low[node])
                if low[node] == index[node]:
                    component = []
                    while True:
                        member = stack.pop()
                        on_stack.discard(member)
                        component.append(member)
                        if member == node:
                            break
                    if len(component) > 1:
                        found.append(sorted(component))
    return found


def test_cycle_finder_finds_a_cycle():
    assert cycles({"a": {"b"}, "b": {"c"}, "c": {"a"}, "d": {"a"}}) == [["a", "b", "c"]]
    assert cycles({"a": {"b"}, "b": set()}) == []


def test_no_import_cycles():
    """No module reaches itself through the imports that run, function-level imports included. Imports for
    the type checker alone are left out: the window's parts (ui/code_navigation.py, ...) name the MainWindow
    that owns them in their annotations, a reference back that never runs."""
    sys.path.insert(0, str(ROOT))
    graph = grimp.build_graph("services", "ui", "app", exclude_type_checking_imports=True)
    imports = {m: graph.find_modules_directly_imported_by(m) for m in graph.modules}
    assert cycles(imports) == []


# the places that build the in-process engine: the CLI's local engine and the server that owns a data dir
BUILDERS = {("app/cli.py", "local_engine"), ("app/server.py", "run_server")}


def concrete_engine_uses(path: Path, root: Path = ROOT) -> set[tuple[str, str]]:
    """(file, enclosing function) of every name, attribute or import of LocalEngine in the file's code
    (docstrings and comments do not count; a quoted annotation needs the import, which does)."""
    import ast

    found, relative = set(), path.relative_to(root).as_posix()

    def visit(node, function: str) -> None:
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
            function = node.name
        named = (isinstance(node, ast.Name) and node.id == "LocalEngine"
                 or isinstance(node, ast.Attribute) and node.attr == "LocalEngine"
                 or isinstance(node, ast.ImportFrom) and node.module == "services.engine.service"
                 or isinstance(node, ast.Import) and any(a.name == "services.engine.service" for a in node.names))
        if named:
            found.add((relative, function))
        for child in ast.iter_child_nodes(node):
            visit(child, function)

    visit(ast.parse(path.read_text(encoding="utf-8")), "")
    return found


def test_faces_and_the_window_name_the_engine_protocol_not_the_concrete_engine():
    uses = set().union(*(concrete_engine_uses(p) for folder in ("ui", "app") for p in (ROOT / folder).rglob("*.py")))
    assert uses <= BUILDERS, f"ui/ and app/ depend on services.engine.protocol.Engine: {sorted(uses - BUILDERS)}"
    assert uses == BUILDERS  # the builders still build it (else this test checks nothing)


def test_the_concrete_engine_check_sees_a_quoted_annotation(tmp_path):
    module = tmp_path / "ui" / "view.py"
    module.parent.mkdir()
    module.write_text('from typing import TYPE_CHECKING\nif TYPE_CHECKING:\n'
                      '    from services.engine.service import LocalEngine\n'
                      'def f(engine: "LocalEngine") -> None: ...\n')
    assert concrete_engine_uses(module, tmp_path) == {("ui/view.py", "")}

