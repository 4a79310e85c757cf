"""A small workspace shaped like pytest (issue 52): the code that resolves fixtures and injects them into test
functions (`src/_pytest/fixtures.py`, `python.py`, `hookspec.py`) beside documentation and a changelog that talk
about fixtures in the same words, so a question in words finds the documentation's passages first."""

from __future__ import annotations

from pathlib import Path

QUESTION = "how are fixtures resolved and injected into test functions"
FIXTURES_FILE = "src/_pytest/fixtures.py"

FILES = {
    FIXTURES_FILE: '''"""Fixture definitions, requests and the manager that finds the fixtures a test function asks for."""

from __future__ import annotations


class FixtureLookupError(LookupError):
    """Could not find the fixture a test function or another fixture requested by name."""


class FixtureDef:
    """A fixture function with its scope and params, as registered by @pytest.fixture."""

    def __init__(self, argname, func, scope="function", params=None):
        self.argname = argname
        self.func = func
        self.scope = scope
        self.params = params
        self.cached_result = None

    def execute(self, request):
        """Run the fixture function once per scope (its own fixtures first) and cache its value."""
        for argname in self.argnames():
            request.getfixturevalue(argname)
        if self.cached_result is None:
            kwargs = {name: request.getfixturevalue(name) for name in self.argnames()}
            self.cached_result = self.func(**kwargs)
        return self.cached_result

    def argnames(self):
        return getfuncargnames(self.func)


def getfuncargnames(function):
    """The names of the arguments of `function` that must be supplied as fixtures."""
    code = function.__code__
    return tuple(code.co_varnames[:code.co_argcount])


class FixtureRequest:
    """The `request` object: resolves fixture values for one test function by name."""

    def __init__(self, pyfuncitem, fixturemanager):
        self._pyfuncitem = pyfuncitem
        self._fixturemanager = fixturemanager
        self._fixture_values = {}

    def getfixturevalue(self, argname):
        """Dynamically resolve a fixture by name: look up its definition, execute it, return its value."""
        if argname not in self._fixture_values:
            fixturedef = self._get_active_fixturedef(argname)
            self._fixture_values[argname] = fixturedef.execute(self)
        return self._fixture_values[argname]

    def _get_active_fixturedef(self, argname):
        fixturedefs = self._fixturemanager.getfixturedefs(argname, self._pyfuncitem.nodeid)
        if not fixturedefs:
            raise FixtureLookupError(argname)
        return fixturedefs[-1]  # the closest definition overrides the outer ones

    def _fillfixtures(self):
        """Inject every fixture the test function requests into its funcargs."""
        item = self._pyfuncitem
        for argname in item.fixturenames:
            if argname not in item.funcargs:
                item.funcargs[argname] = self.getfixturevalue(argname)


def fillfixtures(function):
    """Fill the missing fixture arguments of a test function (the old entry point)."""
    function._request._fillfixtures()


class FixtureManager:
    """Collects fixture definitions from plugins, conftest files and test modules, and computes the closure
    of fixtures each test function needs."""

    def __init__(self, session):
        self.session = session
        self._arg2fixturedefs = {}

    def parsefactories(self, holder, nodeid=""):
        """Register every @pytest.fixture function of a module, class or plugin under its name."""
        for name in dir(holder):
            obj = getattr(holder, name)
            marker = getattr(obj, "_pytestfixturefunction", None)
            if marker is not None:
                fixturedef = FixtureDef(marker.name or name, obj, marker.scope, marker.params)
                self._arg2fixturedefs.setdefault(fixturedef.argname, []).append((nodeid, fixturedef))

    def getfixturedefs(self, argname, nodeid):
        """The definitions of fixture `argname` visible from the test at `nodeid`, outermost first."""
        return [fixturedef for base, fixturedef in self._arg2fixturedefs.get(argname, ())
                if nodeid.startswith(base)]

    def getfixtureclosure(self, initialnames, nodeid):
        """All fixture names a test function needs: its arguments, autouse fixtures and what they request."""
        closure = list(initialnames)
        for argname in closure:
            for fixturedef in self.getfixturedefs(argname, nodeid):
                closure.extend(name for name in fixturedef.argnames() if name not in closure)
        return closure

    def getfixtureinfo(self, node, func):
        argnames = getfuncargnames(func)
        return self.getfixtureclosure(argnames, node.nodeid)
''',
    "src/_pytest/python.py": '''"""Python test discovery: modules, classes and test functions, and calling them."""

from __future__ import annotations

from _pytest.fixtures import FixtureRequest


class Function:
    """A test function collected from a module: its fixture names, funcargs and request."""

    def __init__(self, name, parent, callobj, fixturemanager):
        self.name = name
        self.parent = parent
        self.obj = callobj
        self.nodeid = f"{parent.nodeid}::{name}"
        self.fixturenames = fixturemanager.getfixtureinfo(self, callobj)
        self.funcargs = {}
        self._request = FixtureRequest(self, fixturemanager)

    def setup(self):
        """Resolve the fixtures this test function requests before it runs."""
        self._request._fillfixtures()

    def runtest(self):
        self.ihook.pytest_pyfunc_call(pyfuncitem=self)


def pytest_pyfunc_call(pyfuncitem):
    """Call the test function with its fixture values passed as keyword arguments."""
    testfunction = pyfuncitem.obj
    funcargs = pyfuncitem.funcargs
    testargs = {arg: funcargs[arg] for arg in pyfuncitem.fixturenames if arg in funcargs}
    testfunction(**testargs)
    return True


def pytest_collect_file(file_path, parent):
    """Collect test modules: files named test_*.py or *_test.py."""
    if file_path.name.startswith("test_") or file_path.name.endswith("_test.py"):
        return Module(file_path, parent)
    return None


class Module:
    def __init__(self, path, parent):
        self.path = path
        self.parent = parent
        self.nodeid = str(path)
''',
    "src/_pytest/hookspec.py": '''"""Hook specifications: the hooks plugins implement."""


def pytest_fixture_setup(fixturedef, request):
    """Perform fixture setup execution: return the value of the fixture function for this request."""


def pytest_fixture_post_finalizer(fixturedef, request):
    """Called after fixture teardown, before the cache is cleared."""


def pytest_pyfunc_call(pyfuncitem):
    """Call underlying test function with its arguments."""


def pytest_collection_modifyitems(session, config, items):
    """Called after collection: filter or reorder the test items in place."""
''',
    "src/_pytest/runner.py": '''"""Running one test item: setup, call and teardown, with reports."""


def runtestprotocol(item, log=True):
    """Run setup, call and teardown of `item`, each reported."""
    reports = [call_and_report(item, "setup", log)]
    if reports[0].passed:
        reports.append(call_and_report(item, "call", log))
    reports.append(call_and_report(item, "teardown", log))
    return reports


def call_and_report(item, when, log=True):
    call = CallInfo.from_call(lambda: getattr(item, {"call": "runtest"}.get(when, when))(), when)
    return TestReport.from_item_and_call(item, call)


class CallInfo:
    @classmethod
    def from_call(cls, func, when):
        try:
            return cls(func(), None, when)
        except Exception as error:
            return cls(None, error, when)

    def __init__(self, result, excinfo, when):
        self.result, self.excinfo, self.when = result, excinfo, when


class TestReport:
    @classmethod
    def from_item_and_call(cls, item, call):
        return cls(item.nodeid, call.when, call.excinfo is None)

    def __init__(self, nodeid, when, passed):
        self.nodeid, self.when, self.passed = nodeid, when, passed
''',
    "src/_pytest/terminal.py": '''"""The terminal reporter: progress, summaries and the final line."""


class TerminalReporter:
    def __init__(self, config):
        self.config = config
        self.stats = {}

    def pytest_runtest_logreport(self, report):
        self.stats.setdefault("passed" if report.passed else "failed", []).append(report)

    def summary_stats(self):
        parts = [f"{len(reports)} {key}" for key, reports in self.stats.items()]
        return ", ".join(parts) or "no tests ran"
''',
    "doc/en/how-to/fixtures.rst": '''How to use fixtures
===================

Requesting fixtures
-------------------

At a basic level, test functions request fixtures they require by declaring them as arguments.

When pytest goes to run a test, it looks at the parameters in that test function's signature, and then
searches for fixtures that have the same names as those parameters. Once pytest finds them, it runs those
fixtures, captures what they returned (if anything), and passes those objects into the test function as
arguments.

Fixtures can request other fixtures
-----------------------------------

Fixtures can request other fixtures, just like test functions do. When a fixture requests another
fixture, pytest resolves the requested fixture first and injects its value into the requesting fixture.

Override a fixture on a test module level
-----------------------------------------

A fixture with the same name defined closer to the test function overrides the outer one: a fixture in a
test module overrides the one of the same name in a conftest.py file.
''',
    "doc/en/explanation/fixtures.rst": '''About fixtures
==============

pytest fixtures are designed to be explicit, modular and scalable. Test functions receive fixtures
by naming them as arguments; pytest resolves each fixture by name and injects the value into the test.

Fixture resolution follows the scopes: session, package, module, class and function. Fixtures are
resolved in order of scope, then of dependencies, then of autouse.
''',
    "doc/en/reference/fixtures.rst": '''Fixtures reference
==================

Fixture availability
--------------------

Fixture availability is determined from the perspective of the test. A fixture is only available for
tests to request if they are in the scope that fixture is defined in.

Fixture instantiation order
---------------------------

When pytest wants to execute a test, once it knows what fixtures will be executed, it has to figure out
the order they'll be executed in. Higher-scoped fixtures are executed first, and fixtures are resolved
before the fixtures and test functions that request them.
''',
    "changelog/7001.improvement.rst": '''Fixtures requested by a test function through ``request.getfixturevalue`` are now resolved with the
same scope checks as fixtures injected as arguments.
''',
    "README.rst": '''pytest: simple powerful testing with Python
==========================================

The pytest framework makes it easy to write small tests, yet scales to support complex functional testing.
Features: detailed info on failing assert statements, auto-discovery of test modules and functions, and
modular fixtures for managing small or parametrized long-lived test resources.
''',
}


def pytest_like(root: Path) -> Path:
    """The workspace under `root` (created)."""
    folder = root / "pytest-like"
    for path, text in FILES.items():
        (folder / path).parent.mkdir(parents=True, exist_ok=True)
        (folder / path).write_text(text)
    return folder
