"""List the public functions of a Python module, with signatures, for writing tests.

Usage: python3 api.py MODULE.py

Reads the module with the ast module (it is not imported, so nothing in it runs): top-level
functions whose names do not start with ``_``, and the public methods of public classes as
``Class.method``. Honours ``__all__`` when the module defines it. check_tests.py uses the same list.
"""

from __future__ import annotations

import ast
import sys
from pathlib import Path


def signature(node: ast.FunctionDef | ast.AsyncFunctionDef) -> str:
    """``name(args) -> returns`` as written in the source."""
    text = f"{node.name}({ast.unparse(node.args)})"
    return text + (f" -> {ast.unparse(node.returns)}" if node.returns else "")


def exported(tree: ast.Module) -> set[str] | None:
    """The names in the module's ``__all__``, when it is a literal list or tuple."""
    for node in tree.body:
        if isinstance(node, ast.Assign) and any(isinstance(t, ast.Name) and t.id == "__all__" for t in node.targets):
            try:
                return set(ast.literal_eval(node.value))
            except ValueError:
                return None
    return None


def public_api(path: Path) -> list[tuple[str, str, str]]:
    """(name, signature, first docstring line) of every public function and method."""
    tree = ast.parse(path.read_text(encoding="utf-8"), filename=str(path))
    allowed = exported(tree)
    api: list[tuple[str, str, str]] = []

    def public(name: str) -> bool:
        return not name.startswith("_") and (allowed is None or name in allowed)

    for node in tree.body:
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)) and public(node.name):
            api.append((node.name, signature(node), (ast.get_docstring(node) or "").split("\n")[0]))
        elif isinstance(node, ast.ClassDef) and public(node.name):
            for item in node.body:
                if isinstance(item, (ast.FunctionDef, ast.AsyncFunctionDef)) and not item.name.startswith("_"):
                    doc = (ast.get_docstring(item) or "").split("\n")[0]
                    api.append((f"{node.name}.{item.name}", f"{node.name}.{signature(item)}", doc))
    return api


def main() -> None:
    if len(sys.argv) != 2:
        sys.exit("usage: python3 api.py MODULE.py")
    path = Path(sys.argv[1])
    if not path.is_file() or path.suffix != ".py":
        sys.exit(f"error: {path} is not a Python file; give the module's .py path")
    try:
        api = public_api(path)
    except SyntaxError as error:
        sys.exit(f"error: {path.name} line {error.lineno}: {error.msg}; the module must parse before it can be tested")
    module = path.stem
    print(f"module {module} ({path}): {len(api)} public functions")
    for _name, sig, doc in api:
        print(f"  {sig}" + (f"  # {doc}" if doc else ""))
    names = sorted({name.split(".")[0] for name, _, _ in api})
    print(f"import line: from {module} import {', '.join(names)}" if names else f"import line: import {module}")
    print(f"write the tests to /mnt/user-data/outputs/test_{module}.py")


if __name__ == "__main__":
    main()
