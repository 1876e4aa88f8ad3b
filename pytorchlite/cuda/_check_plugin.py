"""pytest plugin of the GPU check (pytorchlite/cuda/check.py): one JSON line per test
event, appended and closed as it happens, so a run that dies (a kernel that kills the
process, a deadline) still says which test it was in; and deselection of the tests a
resumed run has already been through.

    PTL_CHECK_PROGRESS=path   where the JSON lines go
    PTL_CHECK_DESELECT=path   node ids (one a line) not to run again
"""

import json
import os

PROGRESS_ENV = "PTL_CHECK_PROGRESS"
DESELECT_ENV = "PTL_CHECK_DESELECT"
MESSAGE_CHARS = 3000


def _write(record):
    path = os.environ.get(PROGRESS_ENV)
    if path:
        with open(path, "a", encoding="utf-8") as f:
            f.write(json.dumps(record) + "\n")


def pytest_collection_modifyitems(config, items):
    path = os.environ.get(DESELECT_ENV)
    if not path or not os.path.exists(path):
        return
    with open(path, encoding="utf-8") as f:
        done = set(f.read().splitlines())
    dropped = [i for i in items if i.nodeid in done]
    if dropped:
        config.hook.pytest_deselected(items=dropped)
        items[:] = [i for i in items if i.nodeid not in done]


def pytest_runtest_logstart(nodeid, location):
    _write({"event": "start", "nodeid": nodeid})


def _message(report):
    if report.skipped and isinstance(report.longrepr, tuple):
        return str(report.longrepr[2])
    text = report.longreprtext or ""
    return text if len(text) <= MESSAGE_CHARS else "...\n" + text[-MESSAGE_CHARS:]


def pytest_runtest_logreport(report):
    # one outcome per test: its call, or the setup/teardown phase that did not pass
    if report.when == "call" or report.outcome != "passed":
        _write({"event": "result", "nodeid": report.nodeid, "when": report.when, "outcome": report.outcome,
                "duration": round(report.duration, 4), "message": "" if report.passed else _message(report)})


def pytest_runtest_logfinish(nodeid, location):
    _write({"event": "finish", "nodeid": nodeid})
