"""Users' labels are never lost nor fatal (issue 50, items 2, 5, 6 and the label paths): every write holds
the workspace's lock across threads and processes and is whole or not made; a damaged line is set aside in
`<labels>.rejected` and the good ones kept; a full disk is "unavailable … nothing was changed"; a label
names a workspace file.

Real parts: writer processes (`python -c`), threads, the engine served on 127.0.0.1 (httpx), a real tmpfs
filled up (the suite's tmpfs tests run as root)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import threading
from pathlib import Path

import httpx
import pytest

from services.storage.labels import default_labels_file, labels_for, record_label
from tests.helpers.engine_server import ROOT, env, index_and_wait, one_file_server
from tests.helpers.stand_in_encoder import stand_in_settings

pytestmark = [pytest.mark.slow, pytest.mark.stand_in_encoder]  # processes and a server; the model is not the point

WRITER = """
import sys
from services.storage.labels import record_label
file, name, count = sys.argv[1], sys.argv[2], int(sys.argv[3])
print("ready", flush=True)
sys.stdin.read()  # every writer starts at once: when the test closes its input
for n in range(count):
    record_label(file, f"question {name} {n}", f"src/{name}_{n}.py", "", n % 2 == 0)
"""


def stored_questions(file: Path) -> list[str]:
    return [json.loads(line)["text"] for line in file.read_text(encoding="utf-8").splitlines()]


def test_labels_written_by_many_processes_and_threads_at_once_are_all_kept(tmp_path):
    """The last writer won: 8 clients x 10 labels kept 57 of 80."""
    file = tmp_path / "labels" / "ws.jsonl"
    writers = [subprocess.Popen([sys.executable, "-c", WRITER, str(file), f"p{n}", "10"], cwd=ROOT, env=env(),
                                stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True) for n in range(8)]
    threads = [threading.Thread(target=lambda n=n: [record_label(file, f"question t{n} {k}", f"t{n}.py", "", True)
                                                    for k in range(10)]) for n in range(4)]
    assert [writer.stdout.readline() for writer in writers] == ["ready\n"] * 8
    for writer in writers:
        writer.stdin.close()
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert all(writer.wait(timeout=300) == 0 for writer in writers)
    questions = stored_questions(file)
    assert len(questions) == len(set(questions)) == 120
    assert labels_for(file, "question p7 9") == {("src/p7_9.py", ""): 0}
    assert not list(file.parent.glob(".labels-*.tmp"))  # no staging file left behind


RECORDER = """
import sys
from services.transport.roots import record_owner_folder
data, name = sys.argv[1], sys.argv[2]
print("ready", flush=True)
sys.stdin.read()
for n in range(10):
    record_owner_folder(data, f"{data}/../projects/{name}-{n}")
"""


def test_folders_the_owner_opened_recorded_by_many_clis_at_once_are_all_kept(tmp_path):
    """Each CLI read, added and replaced `owner-workspaces.json` with no lock across processes: the last
    one won, and the server then refused a folder its owner had opened."""
    from services.transport.roots import owner_folders

    data = tmp_path / "data"
    clis = [subprocess.Popen([sys.executable, "-c", RECORDER, str(data), f"cli{n}"], cwd=ROOT, env=env(),
                             stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True) for n in range(8)]
    assert [process.stdout.readline() for process in clis] == ["ready\n"] * 8
    for process in clis:
        process.stdin.close()
    assert all(process.wait(timeout=300) == 0 for process in clis)
    assert len(owner_folders(data)) == 80


@pytest.fixture
def server(tmp_path):
    with one_file_server(tmp_path, "a.py", "def add(a, b):\n    return a + b\n", stand_in_settings()) as (
            url, key, service, workspace):
        yield url, key, default_labels_file(tmp_path / "data", workspace)


def test_labels_put_by_many_clients_at_once_are_all_kept(server):
    url, key, file = server

    def client(n: int) -> list[int]:
        with httpx.Client(base_url=url, timeout=120) as http:
            return [http.put(f"/v1/workspaces/{key}/labels",
                             json={"question": f"client {n} asks {k}", "path": "a.py", "relevant": True}).status_code
                    for k in range(10)]

    answers: list[int] = []
    threads = [threading.Thread(target=lambda n=n: answers.extend(client(n))) for n in range(8)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert answers == [200] * 80
    assert len(set(stored_questions(file))) == 80


GOOD = {"id": "q-1", "text": "add numbers", "relevant": [{"path": "a.py", "grade": 1}]}
LATER = {"id": "q-2", "text": "sum", "relevant": [{"path": "a.py", "symbol": "add", "grade": 1}]}


def damage(file: Path) -> None:
    """A good line, a line cut off, a JSON array, a line that is not UTF-8, a good line."""
    file.parent.mkdir(parents=True, exist_ok=True)
    file.write_bytes(json.dumps(GOOD).encode() + b"\n" + b'{"id": "q-9", "text": "cut o\n' + b"[1,2,3]\n"
                     + b'{"id": "q-8", "text": "caf\xe9"}\n' + json.dumps(LATER).encode() + b"\n")


def test_a_damaged_labels_file_keeps_its_good_lines_and_sets_the_others_aside(server):
    """A cut-off line or `[1,2,3]` made GET and PUT labels answer 500, and only editing the file fixed it."""
    url, key, file = server
    damage(file)
    got = httpx.get(f"{url}/v1/workspaces/{key}/labels", params={"question": "add numbers"})
    assert got.status_code == 200, got.text
    assert got.json()["labels"] == [{"path": "a.py", "symbol": "", "grade": 1}]
    put = httpx.put(f"{url}/v1/workspaces/{key}/labels", json={"question": "new one", "path": "a.py"})
    assert put.status_code == 200, put.text
    assert stored_questions(file) == ["add numbers", "sum", "new one"]
    notes = file.with_name(file.name + ".rejected").read_bytes().split(b"\n")
    assert [line.split(b": ", 1)[0].rsplit(b" ", 2)[1:] for line in notes if line.startswith(b"# set aside")] == [
        [b"line", b"2"], [b"line", b"3"], [b"line", b"4"]]
    assert b'{"id": "q-8", "text": "caf\xe9"}' in notes  # set aside byte for byte: nothing lost
    assert b"not UTF-8" in notes[4] and b"not valid JSON" in notes[0] and b"not a JSON object" in notes[2]
    health = httpx.get(f"{url}/v1/workspaces/{key}/health").json()
    assert health["repaired"] == [f"labels: 3 damaged lines set aside in {file}.rejected"]


def test_a_tuned_question_over_a_damaged_labels_file_is_answered(server):
    """A label line that is not UTF-8 made every `tuned` query answer 500."""
    url, key, file = server
    with httpx.Client(base_url=url, timeout=300) as http:
        assert index_and_wait(http, key)["state"] == "done"
        damage(file)
        answer = http.post(f"/v1/workspaces/{key}/query", json={"question": "add numbers", "strategy": "tuned"})
    assert answer.status_code == 200, answer.text
    assert answer.json()["results"][0]["chunk"]["path"] == "a.py"
    health = httpx.get(f"{url}/v1/workspaces/{key}/health").json()  # checks the labels file, repairs it
    assert health["repaired"] == [f"labels: 3 damaged lines set aside in {file}.rejected"]
    assert stored_questions(file) == ["add numbers", "sum"]


@pytest.mark.parametrize("path", ["~/.bashrc", "file:///etc/passwd", "C:\\Windows\\win.ini", "https://x.org/a.py"])
def test_a_label_must_name_a_workspace_file(server, path):
    """`~/.bashrc` and `file:///etc/passwd` were stored as labels."""
    url, key, file = server
    put = httpx.put(f"{url}/v1/workspaces/{key}/labels", json={"question": "add", "path": path})
    assert (put.status_code, put.json()["error"]["code"]) == (400, "path_escape")
    assert "not a relative path inside the workspace" in put.json()["error"]["message"]
    assert not file.exists()


@pytest.fixture
def full_disk_server(tmp_path):
    """The engine served with its data dir on a real 4 MiB tmpfs, which the test fills."""
    data = tmp_path / "data"
    data.mkdir()
    made = subprocess.run(["mount", "-t", "tmpfs", "-o", "size=4m", "tmpfs", str(data)], capture_output=True, text=True)
    if made.returncode:
        pytest.fail(f"cannot mount a tmpfs here ({made.stderr.strip()}): this test needs root")
    try:
        with one_file_server(tmp_path, "a.py", "def add(a, b):\n    return a + b\n", stand_in_settings()) as (
                url, key, service, workspace):
            yield url, key, default_labels_file(data, workspace)
    finally:
        subprocess.run(["umount", "-l", str(data)], check=True)


def fill(folder: Path) -> None:
    """Write real bytes until the file system under `folder` has no block left."""
    with open(folder / "filler", "wb") as out:
        try:
            while True:
                out.write(b"\0" * 65536)
                out.flush()
        except OSError:
            pass
    os.sync()


def test_a_label_written_on_a_full_disk_is_unavailable_and_changes_nothing(full_disk_server):
    """It answered 500 "internal" (OSError: [Errno 28] unmapped)."""
    url, key, file = full_disk_server
    first = httpx.put(f"{url}/v1/workspaces/{key}/labels", json={"question": "add numbers", "path": "a.py"})
    assert first.status_code == 200, first.text
    before = file.read_bytes()
    fill(file.parent.parent)
    put = httpx.put(f"{url}/v1/workspaces/{key}/labels",
                    json={"question": "a long question " * 400, "path": "a.py"})
    assert (put.status_code, put.json()["error"]["code"]) == (503, "index_unavailable"), put.text
    message = put.json()["error"]["message"]
    assert message.startswith("unavailable: the labels file") and "No space left" in message
    assert "nothing was changed" in message and "\n" not in message
    assert file.read_bytes() == before and not list(file.parent.glob(".labels-*.tmp"))
    (file.parent.parent / "filler").unlink()
    again = httpx.put(f"{url}/v1/workspaces/{key}/labels", json={"question": "sum", "path": "a.py"})
    assert again.status_code == 200 and stored_questions(file) == ["add numbers", "sum"]
