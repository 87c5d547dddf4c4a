"""Check and run a unittest file written for a module.

Usage: python3 check_tests.py TEST_FILE.py --module MODULE.py

Checks, reading the test file with the ast module: it imports the module; it has TestCase
classes; every public function api.py lists is called in at least one test; every test asserts
something. Then runs ``python3 -m unittest -v`` on it (the module's folder on PYTHONPATH, no
bytecode written) and reports each failing test with the end of its traceback. Tests marked
``@unittest.expectedFailure`` count as documented bugs. Prints what it found, then OK or each
problem with what to fix.
"""

from __future__ import annotations

import argparse
import ast
import os
import re
import subprocess
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from api import public_api  # noqa: E402

RESULT = re.compile(r"^(test\w*) \(([\w.]+)\)(?:\n.*?)? \.\.\. (ok|FAIL|ERROR|expected failure|unexpected success|skipped.*)$", re.M)


def called_names(node: ast.AST) -> set[str]:
    """Names of every function or attribute called inside ``node``."""
    names = set()
    for call in (n for n in ast.walk(node) if isinstance(n, ast.Call)):
        if isinstance(call.func, ast.Name):
            names.add(call.func.id)
        elif isinstance(call.func, ast.Attribute):
            names.add(call.func.attr)
    return names


def asserts(test: ast.FunctionDef) -> bool:
    """The test checks something: an assert statement, self.assert*/fail, or assertRaises."""
    return any(isinstance(n, ast.Assert) for n in ast.walk(test)) or any(
        name.startswith(("assert", "fail")) for name in called_names(test)
    )


def static_problems(tree: ast.Module, module: str, api: list[tuple[str, str, str]]) -> tuple[list[str], list[ast.FunctionDef]]:
    """Problems found without running the tests, and the test methods."""
    problems: list[str] = []
    imported = any(
        (isinstance(n, ast.Import) and any(a.name == module for a in n.names)) or (isinstance(n, ast.ImportFrom) and n.module == module)
        for n in ast.walk(tree)
    )
    if not imported:
        problems.append(f"the tests do not import the module; add 'from {module} import ...' at the top")
    classes = [n for n in tree.body if isinstance(n, ast.ClassDef) and any("TestCase" in ast.unparse(b) for b in n.bases)]
    tests = [f for c in classes for f in c.body if isinstance(f, ast.FunctionDef) and f.name.startswith("test")]
    if not tests:
        problems.append("no tests found; write 'class Test<Name>(unittest.TestCase):' with 'def test_...(self):' methods")
    called = set().union(*(called_names(t) for t in tests)) if tests else set()
    for name, sig, _ in api:
        if name.split(".")[-1] not in called:
            problems.append(f"no test calls {sig}; add a test method for it")
    for test in tests:
        if not asserts(test):
            problems.append(f"{test.name} checks nothing; add self.assertEqual(...) or self.assertRaises(...)")
    return problems, tests


def run_tests(test_file: Path, module_dir: Path) -> tuple[str, int]:
    """The output of ``python3 -m unittest -v`` on ``test_file`` and its exit code."""
    env = dict(os.environ, PYTHONPATH=str(module_dir.resolve()), PYTHONDONTWRITEBYTECODE="1")
    try:
        done = subprocess.run(
            [sys.executable, "-m", "unittest", "-v", test_file.stem],
            cwd=test_file.parent, env=env, capture_output=True, text=True, timeout=120,
        )
    except subprocess.TimeoutExpired:
        return "the tests ran longer than 120 s; look for an endless loop or a blocking call", 1
    return done.stderr + done.stdout, done.returncode


def main() -> None:
    parser = argparse.ArgumentParser(description="Check and run a unittest file.")
    parser.add_argument("tests")
    parser.add_argument("--module", required=True, help="the module under test (.py)")
    args = parser.parse_args()
    test_file, module = Path(args.tests), Path(args.module)
    if not test_file.is_file():
        sys.exit(f"problem: {test_file} does not exist; write the tests there first")
    if not module.is_file():
        sys.exit(f"problem: --module {module} does not exist")
    if not re.fullmatch(r"test_\w+\.py", test_file.name):
        sys.exit(f"problem: name the test file test_<module>.py (not {test_file.name}) so unittest finds it")
    try:
        tree = ast.parse(test_file.read_text(encoding="utf-8"))
    except SyntaxError as error:
        print(f"problem: {test_file.name} line {error.lineno}: {error.msg}; fix the Python syntax")
        sys.exit(1)
    api = public_api(module)
    problems, tests = static_problems(tree, module.stem, api)
    output, code = run_tests(test_file, module.parent)
    results = RESULT.findall(output)
    ran = re.search(r"^Ran (\d+) tests?", output, re.M)
    print(f"{test_file.name}: {len(tests)} tests for {len(api)} public functions of {module.name}")
    print(f"ran: python3 -m unittest -v {test_file.stem} (in {test_file.parent}, PYTHONPATH={module.parent})")
    for name, where, status in results:
        parts = where.split(".")
        print(f"  {parts[-2] if parts[-1] == name else parts[-1]}.{name}: {status}")
    bugs = [name for name, _, status in results if status == "expected failure"]
    if bugs:
        print(f"documented bugs (expected failures): {', '.join(bugs)}")
    for name, _, status in results:
        if status in ("FAIL", "ERROR"):
            block = re.search(rf"^(?:FAIL|ERROR): {name} .*?\n-+\n(.*?)(?=\n={{10,}}|\n-{{10,}}\nRan)", output, re.M | re.S)
            tail = block[1].strip().splitlines()[-3:] if block else []
            problems.append(f"{name} {'failed' if status == 'FAIL' else 'raised an error'}: {' | '.join(t.strip() for t in tail)}")
        if status == "unexpected success":
            problems.append(f"{name} passes but is marked @unittest.expectedFailure; remove the mark")
    if not ran:
        problems.append("unittest could not load the tests:\n" + "\n".join(output.strip().splitlines()[-6:]))
    elif code != 0 and not any(s in ("FAIL", "ERROR") for _, _, s in results):
        problems.append("unittest failed:\n" + "\n".join(output.strip().splitlines()[-6:]))
    if problems:
        print("\n".join(f"problem: {p}" for p in problems))
        sys.exit(1)
    print("OK")


if __name__ == "__main__":
    main()
