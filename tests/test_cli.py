"""The command line, in-process through CliRunner and as a real subprocess."""

from __future__ import annotations

import json
import re
import shutil
import subprocess
import sys
import textwrap
import time

import pytest
from click.testing import CliRunner

from semantic_skills import builder, router
from semantic_skills.cli import main
from semantic_skills.embedders.factory import configured_identity, create_embedder
from semantic_skills.index.manifest import MANIFEST
from semantic_skills.settings import EmbedderSettings

from support import EXAMPLES, REPO, on_terminal, shared_path, write_skill

PDF_QUERY = "Can you turn this scanned contract PDF into markdown with the tables intact?"
COUNT_KEYS = ("added", "updated", "removed", "unchanged", "skipped")


@pytest.fixture()
def loaded_model(monkeypatch, bundled_embedder):
    """In-process commands reuse the session's loaded bundled model instead of loading it again."""
    default = configured_identity(EmbedderSettings())

    def create(settings):
        return bundled_embedder if configured_identity(settings) == default else create_embedder(settings)

    monkeypatch.setattr(builder, "create_embedder", create)
    monkeypatch.setattr(router, "create_embedder", create)


def cli(*args: str):
    """Run the CLI in-process; stdout and stderr stay separate."""
    return CliRunner().invoke(main, [str(a) for a in args])


def run(*args: str, timeout: float = 300) -> subprocess.CompletedProcess:
    """Run ``python -m semantic_skills ARGS`` from the repository root."""
    return subprocess.run(
        [sys.executable, "-m", "semantic_skills", *map(str, args)],
        cwd=REPO, capture_output=True, text=True, timeout=timeout,
    )


def last_json(output: str):
    return json.loads(output.strip().splitlines()[-1])


@pytest.fixture()
def indexed(examples_copy, tmp_path, loaded_model):
    """examples/skills copied and built through the CLI: ``(skills_dir, index_dir)``."""
    index_dir = tmp_path / "index"
    result = cli("build", "--skills-dir", examples_copy, "--index-dir", index_dir)
    assert result.exit_code == 0, result.output
    return examples_copy, index_dir


# --------------------------------------------------------------------------- help


@pytest.mark.parametrize("command", ["", *sorted(main.commands)])
def test_help_works_for_every_command(command):
    result = cli(*([command] if command else []), "--help")
    assert result.exit_code == 0, result.output
    assert result.stdout.startswith("Usage:")


def test_build_embeddings_script_shows_the_build_help():
    result = subprocess.run([sys.executable, "build_embeddings.py", "--help"], cwd=REPO, capture_output=True,
                            text=True, timeout=120)
    assert result.returncode == 0, result.stderr
    assert "Usage: build_embeddings.py" in result.stdout
    assert "--skills-dir" in result.stdout and "--full" in result.stdout


# --------------------------------------------------------------------------- build


def test_build_prints_a_summary_with_skipped_files_and_name_conflicts(examples_copy, tmp_path, loaded_model):
    write_skill(examples_copy, "broken/empty", b"")
    write_skill(examples_copy, "broken/binary", b"\x00\x01\x02 binary")
    second = write_skill(examples_copy, "zz/second-pdf", "---\nname: pdf-to-markdown\ndescription: same name\n---\n")

    result = cli("build", "--skills-dir", examples_copy, "--index-dir", tmp_path / "index")

    assert result.exit_code == 0, result.output
    lines = result.stdout.splitlines()
    assert lines[0].startswith(f"Indexed 9 skills in {tmp_path / 'index'} (sentence-transformers")
    assert lines[1] == "  added 9, updated 0, removed 0, unchanged 0, skipped 2"
    assert f"  skipped {examples_copy / 'broken/empty/SKILL.md'}: empty file" in lines
    assert any(line.startswith(f"  skipped {examples_copy / 'broken/binary/SKILL.md'}: binary file") for line in lines)
    first = examples_copy / "documents/pdf-to-markdown/SKILL.md"
    assert (f'  not routed, for its name: {first}, {second} (2 skills answer to the name "pdf-to-markdown" in the '
            "same skills folders, and the agent's skill_view refuses to choose between them: rename all but one)"
            ) in lines

    again = cli("build", "--skills-dir", examples_copy, "--index-dir", tmp_path / "index")
    assert again.stdout.startswith("Index already up to date: 9 skills")


def test_build_json_ends_with_the_counts(indexed):
    skills_dir, index_dir = indexed
    (skills_dir / "media" / "image-resize" / "SKILL.md").unlink()
    write_skill(skills_dir, "broken/empty", b"")

    result = cli("build", "--skills-dir", skills_dir, "--index-dir", index_dir, "--json")

    assert result.exit_code == 0, result.output
    report = last_json(result.stdout)
    assert isinstance(report, dict)
    assert {k: report[k] for k in COUNT_KEYS} == {"added": 0, "updated": 0, "removed": 1, "unchanged": 9, "skipped": 1}
    assert all(type(report[k]) is int for k in COUNT_KEYS)


def test_build_without_skills_dir_indexes_the_hermes_skills_folders(_isolated_hermes_home, tmp_path, loaded_model):
    home = _isolated_hermes_home
    write_skill(home / "skills", "local", "---\nname: shared\ndescription: the local one\n---\n")
    write_skill(tmp_path / "team", "theirs", "---\nname: shared\ndescription: the team one\n---\n")
    write_skill(tmp_path / "team", "extra", "---\nname: team-extra\n---\n")
    (home / "config.yaml").write_text(f"skills:\n  external_dirs: [{tmp_path / 'team'}]\n")

    report = last_json(cli("build", "--index-dir", tmp_path / "index", "--json").stdout)

    assert report["added"] == 2
    assert report["duplicates"] == [{
        "name": "shared",
        "kept": str(home / "skills" / "local" / "SKILL.md"),
        "dropped": str(tmp_path / "team" / "theirs" / "SKILL.md"),
    }]


def test_the_default_index_dir_follows_the_environment(examples_copy, tmp_path, monkeypatch, loaded_model):
    monkeypatch.setenv("SEMANTIC_SKILLS_INDEX_DIR", str(tmp_path / "from-env"))

    assert cli("build", "--skills-dir", examples_copy).exit_code == 0
    assert (tmp_path / "from-env" / MANIFEST).is_file()
    assert last_json(cli("status", "--json").stdout)["index_dir"] == str(tmp_path / "from-env")
    assert last_json(cli("route", "--json", PDF_QUERY).stdout)["skill"] == "pdf-to-markdown"


# --------------------------------------------------------------------------- search, route, status


def test_search_json_lists_the_best_skills_first(indexed):
    _, index_dir = indexed
    result = cli("search", "--index-dir", index_dir, "-k", "3", "--json", "convert a PDF to markdown")
    assert result.exit_code == 0, result.output
    ranked = json.loads(result.stdout)
    assert [c["name"] for c in ranked][0] == "pdf-to-markdown"
    assert len(ranked) == 3
    assert [c["score"] for c in ranked] == sorted((c["score"] for c in ranked), reverse=True)


def test_route_json_explains_the_decision(indexed):
    _, index_dir = indexed
    decision = json.loads(cli("route", "--index-dir", index_dir, "--json", PDF_QUERY).stdout)
    assert decision["query"] == PDF_QUERY
    assert decision["skill"] == "pdf-to-markdown" and decision["mode"] == "full"
    assert decision["named"] == ["pdf-to-markdown"]
    assert decision["score"] == decision["candidates"][0]["score"] and decision["reason"]
    assert decision["candidates"][0]["name"] == "pdf-to-markdown"

    small_talk = json.loads(cli("route", "--index-dir", index_dir, "--json", "thanks!").stdout)
    assert small_talk["skill"] is None and small_talk["mode"] is None and "small talk" in small_talk["reason"]
    text = cli("route", "--index-dir", index_dir, PDF_QUERY).stdout.splitlines()
    assert text[0].startswith("inject pdf-to-markdown whole (score ") and "similarity " in text[0]
    assert text[1].startswith("(score ranks the skills: the similarity plus a small bonus")
    assert "similarity (cosine" in text[1] and "is what the floor checks" in text[1]
    hint = cli("route", "--index-dir", index_dir, "I accidentally pushed our AWS key to GitHub, what do I do?")
    assert hint.stdout.startswith("inject a hint naming secret-scan and ") and "plausible" in hint.stdout


@pytest.mark.parametrize("query", ["", "   "])
def test_search_with_an_empty_query_is_a_one_line_error(query):
    result = cli("search", query)
    assert result.exit_code == 1 and result.stdout == ""
    assert result.stderr.splitlines() == ['semantic-skills: error: QUERY is empty; describe the task in a few words, '
                                          'for example: search "convert a PDF to markdown"']


def test_route_and_search_leave_out_what_the_hermes_config_turns_off(indexed, _isolated_hermes_home):
    _, index_dir = indexed
    (_isolated_hermes_home / "config.yaml").write_text(
        "skills:\n  platform_disabled:\n    telegram: [pdf-to-markdown]\n", encoding="utf-8")

    def top(*args):
        return json.loads(cli(*args, "--index-dir", index_dir, "--json", PDF_QUERY).stdout)

    assert top("route")["skill"] == "pdf-to-markdown"
    assert top("route", "--platform", "discord")["skill"] == "pdf-to-markdown"
    on_telegram = top("route", "--platform", "telegram")
    assert on_telegram["skill"] != "pdf-to-markdown"
    assert "pdf-to-markdown" not in [c["name"] for c in on_telegram["candidates"]]
    assert "pdf-to-markdown" not in [c["name"] for c in top("search", "--platform", "telegram")]

    (_isolated_hermes_home / "config.yaml").write_text("skills:\n  disabled: [pdf-to-markdown]\n", encoding="utf-8")
    assert top("search")[0]["name"] != "pdf-to-markdown"


def test_route_needs_exactly_one_of_message_and_queries(indexed, tmp_path):
    _, index_dir = indexed
    queries = tmp_path / "q.jsonl"
    queries.write_text('{"query": "x"}\n')
    assert cli("route", "--index-dir", index_dir).exit_code == 2
    assert cli("route", "--index-dir", index_dir, "--queries", queries, "hello").exit_code == 2


def test_route_queries_prints_one_decision_per_line_in_order(indexed, tmp_path):
    _, index_dir = indexed
    queries = [PDF_QUERY, "thanks!", "My postgres container keeps restarting", "What's a good recipe for banana bread?"]
    lines = [json.dumps({"query": q, "gold": []}) for q in queries]
    lines[2:2] = ["", "   "]
    lines.append("{not json")
    path = tmp_path / "queries.jsonl"
    path.write_text("\n".join(lines) + "\n")

    result = cli("route", "--index-dir", index_dir, "--queries", path)

    assert result.exit_code == 0, result.output
    decisions = [json.loads(line) for line in result.stdout.splitlines()]
    assert [d["query"] for d in decisions] == [*queries, None]
    for d in decisions[:-1]:
        assert {"query", "skill", "score", "reason", "candidates"} <= d.keys()
        assert len(d["candidates"]) == 5
        assert all(c.keys() == {"name", "score"} for c in d["candidates"])
    assert (decisions[0]["skill"], decisions[0]["mode"]) == ("pdf-to-markdown", "full")
    assert decisions[1]["skill"] is None and decisions[1]["mode"] is None
    assert "line 7: invalid input" in decisions[-1]["reason"]


def test_status_reports_the_embedder_and_what_changed_on_disk(indexed):
    skills_dir, index_dir = indexed
    status = last_json(cli("status", "--index-dir", index_dir, "--json").stdout)
    assert status["embedder"]["backend"] == "sentence-transformers"
    assert status["embedder"]["dimension"] == 384
    assert status["skills"] == 10 and status["up_to_date"] is True

    edited = skills_dir / "git" / "commit-messages" / "SKILL.md"
    edited.write_text(edited.read_text() + "\nOne more rule.\n")
    shutil.rmtree(skills_dir / "media" / "image-resize")
    write_skill(skills_dir, "cooking/sourdough", "---\nname: sourdough\n---\n")

    status = last_json(cli("status", "--index-dir", index_dir, "--json").stdout)
    assert (status["changed"], status["new"], status["deleted"]) == (
        ["commit-messages"], ["sourdough"], ["image-resize"])
    assert status["up_to_date"] is False
    text = cli("status", "--index-dir", index_dir).stdout
    assert "changed since the build (1): commit-messages" in text
    assert "run `semantic-skills build`" in text


def test_status_names_the_look_alike_a_name_conflict_leaves_out_and_the_fix(indexed):
    skills_dir, index_dir = indexed
    look_alike = write_skill(skills_dir, "aa/look-alike", "---\nname: csv-c1eanup\n---\n")  # 1 for l, path first

    status = last_json(cli("status", "--index-dir", index_dir, "--json").stdout)

    real = skills_dir / "data" / "csv-cleanup" / "SKILL.md"
    assert status["new"] == status["deleted"] == status["left_out"] == []  # the skill routed first keeps the name
    assert [c["left_out"] for c in status["conflicts"]] == [[str(look_alike)]]
    text = cli("status", "--index-dir", index_dir).stdout.splitlines()
    assert text[-1] == (f'not routed, for its name: {look_alike} ("csv-c1eanup" reads as "csv-cleanup" ({real}), '
                        "which keeps that name: rename this skill so that its name reads differently)")


TITLE_AND_RETURN = "\x1b]0;pwned\x07\r"  # sets the terminal's window title, then overwrites the line
SHOWN = "\\x1b]0;pwned\\x07\\r"  # what the terminal gets instead: the same characters written out


def test_no_command_passes_a_terminal_control_sequence_from_a_path_or_name_to_the_terminal(
        tmp_path, _isolated_hermes_home, loaded_model):
    from semantic_skills.decision_log import DecisionEntry, DecisionLog
    from semantic_skills.hermes.config import decision_record_path

    skills = tmp_path / f"skills{TITLE_AND_RETURN}"
    shutil.copytree(EXAMPLES / "skills", skills)
    refused = write_skill(skills, f"bad/evil{TITLE_AND_RETURN}name", "A skill named by its folder.\n")
    index = tmp_path / f"index{TITLE_AND_RETURN}"
    record = DecisionLog(decision_record_path(_isolated_hermes_home), 1_000_000)
    record.append(DecisionEntry(time=1.7e9, path="gateway", platform="telegram\u202e", outcome="injected",
                                skill="pdf-to-markdown\u202e", mode="full", latency_ms=12.0))
    record.close()

    runs = {
        "build": cli("build", "--skills-dir", skills, "--index-dir", index),
        "status": cli("status", "--index-dir", index),
        "search": cli("search", "pdf to markdown", "--index-dir", index),
        "route": cli("route", "convert this scanned PDF into markdown", "--index-dir", index),
        "history": cli("history"),
        "an error": cli("status", "--index-dir", tmp_path / f"none{TITLE_AND_RETURN}"),
    }
    for command, result in runs.items():
        for stream in (result.stdout, result.stderr):
            assert not {"\x1b", "\x07", "\r", "\u202e"} & set(stream), (command, stream)
    assert f"  skipped {str(refused).replace(TITLE_AND_RETURN, SHOWN)}: its folder's name" in runs["build"].stdout
    assert f"index:    {str(index).replace(TITLE_AND_RETURN, SHOWN)}" in runs["status"].stdout
    assert "pdf-to-markdown\\u202e" in runs["history"].stdout
    assert str(tmp_path / f"none{SHOWN}") in runs["an error"].stderr

    as_json = cli("build", "--skills-dir", skills, "--index-dir", index, "--json").stdout.strip().splitlines()[-1]
    assert as_json.isascii() and json.loads(as_json)["skipped_files"][0]["path"] == str(refused)


def test_an_empty_library_is_a_state_build_status_route_and_search_say_so_in_a_line(indexed):
    skills_dir, index_dir = indexed
    for skill in list(skills_dir.rglob("SKILL.md")):
        skill.unlink()

    build = cli("build", "--skills-dir", skills_dir, "--index-dir", index_dir)
    status = cli("status", "--index-dir", index_dir)
    route = cli("route", "convert this scanned PDF into markdown", "--index-dir", index_dir)
    search = cli("search", "pdf to markdown", "--index-dir", index_dir)

    assert [r.exit_code for r in (build, status, route, search)] == [0, 0, 0, 0]
    assert build.stdout.splitlines() == [
        f"No skill under {skills_dir}: emptied the index in {index_dir} (removed 10 skills); routing injects "
        "nothing until SKILL.md files are added there and `semantic-skills build` runs again"]
    assert status.stdout.splitlines()[3:] == [
        f"skills:   0 from {skills_dir}", "up to date with the skills on disk",
        f"the index holds no skills: routing injects nothing until SKILL.md files are added under {skills_dir} "
        "and `semantic-skills build` runs"]
    assert route.stdout == "inject nothing: the index holds no skills\n"
    assert search.stdout == (f"the index in {index_dir} holds no skills: add SKILL.md files and run "
                             "`semantic-skills build`\n")
    assert "$HERMES_HOME" not in build.stdout + status.stdout + route.stdout + search.stdout

    write_skill(skills_dir, "documents/pdf", "---\nname: pdf\ndescription: Convert a PDF to markdown\n---\nBody.\n")
    assert "new since the build (1): pdf" in cli("status", "--index-dir", index_dir).stdout
    assert cli("build", "--skills-dir", skills_dir, "--index-dir", index_dir).stdout.startswith("Indexed 1 skills")


# --------------------------------------------------------------------------- errors


@pytest.fixture()
def error_cases(tmp_path, examples_index):
    corrupt = tmp_path / "corrupt"
    shutil.copytree(examples_index, corrupt)
    (corrupt / MANIFEST).write_text('{"format": "semantic-skills-index"')
    return {
        "no index (route)": (["route", "--index-dir", tmp_path / "none", "hello there"], "no skill index in"),
        "no index (search)": (["search", "--index-dir", tmp_path / "none", "pdf"], "no skill index in"),
        "no index (status)": (["status", "--index-dir", tmp_path / "none"], "no skill index in"),
        "embedder mismatch": (["route", "--index-dir", examples_index, "--model", tmp_path / "other-model", "pdf"],
                              "rebuild with"),
        "corrupt index": (["search", "--index-dir", corrupt, "pdf"], "is corrupt"),
    }


@pytest.mark.parametrize(
    "case", ["no index (route)", "no index (search)", "no index (status)", "embedder mismatch",
             "corrupt index"]
)
def test_errors_are_one_line_on_stderr_with_a_non_zero_exit(error_cases, case):
    args, expected = error_cases[case]
    result = run(*args, timeout=120)
    assert result.returncode != 0
    assert len(result.stderr.strip().splitlines()) == 1, result.stderr
    assert result.stderr.startswith("semantic-skills: error: ") and expected in result.stderr
    assert "Traceback" not in result.stdout + result.stderr


# --------------------------------------------------------------------------- whole commands as subprocesses


@pytest.mark.parametrize("reader", ["closes at once", "reads one line"])
def test_a_reader_that_closes_the_pipe_early_ends_every_command_quietly(tmp_path, reader):
    """``semantic-skills history | head -12``: the closed pipe ends the command with status 1 and nothing on stderr
    (no error line, no traceback), whichever write meets it."""
    for n in range(2000):  # a build whose report of skipped files (over 130 KB) outgrows the pipe's 64 KB buffer
        write_skill(tmp_path / "skills", f"broken-{n:04d}", b"")
    commands = [["build", "--skills-dir", tmp_path / "skills", "--index-dir", tmp_path / "index"], ["history"],
                ["status", "--index-dir", tmp_path / "index"], ["--version"]]
    for command in commands:
        child = subprocess.Popen([sys.executable, "-m", "semantic_skills", *map(str, command)], cwd=REPO,
                                 stdout=subprocess.PIPE, stderr=subprocess.PIPE)
        if reader == "reads one line":
            child.stdout.readline()
        child.stdout.close()
        stderr = child.stderr.read().decode()
        assert stderr == "" and child.wait(timeout=120) in (0, 1), command  # 0: it had written all before
        assert command[0] != "build" or child.returncode == 1  # its report goes on after the line read


def test_build_embeddings_script_builds_an_index(tmp_path, onnx_embedder):  # onnx: a build without PyTorch
    result = subprocess.run(
        [sys.executable, "build_embeddings.py", "--skills-dir", EXAMPLES / "skills", "--index-dir", tmp_path / "index",
         "--embedder", "onnx", "--json"],
        cwd=REPO, capture_output=True, text=True, timeout=300,
    )
    assert result.returncode == 0, result.stderr
    assert last_json(result.stdout)["added"] == 10
    assert (tmp_path / "index" / MANIFEST).is_file()


def test_demo_runs_without_network(default_model):
    script = textwrap.dedent("""\
        import runpy, socket, sys
        def refuse(*args, **kwargs):
            raise OSError("network access attempted")
        socket.getaddrinfo = refuse
        socket.create_connection = refuse
        socket.socket.connect = lambda self, address: refuse(address)
        sys.argv = ["semantic-skills", "demo"]
        runpy.run_module("semantic_skills", run_name="__main__")
        """)
    child = subprocess.Popen([sys.executable, "-c", script], cwd=REPO, stdout=subprocess.PIPE,
                             stderr=subprocess.PIPE, text=True)
    timed = [(time.monotonic(), line) for line in child.stdout]  # when each line arrives
    stderr = child.stderr.read()
    assert child.wait(timeout=300) == 0, stderr
    stdout = "".join(line for _, line in timed)
    assert timed[0][1].startswith(f"Building an index of the example skills in {EXAMPLES / 'skills'} with the "
                                  "default embedder...")
    built = next(at for at, line in timed if line.startswith("Built an index of 10 example skills"))
    assert built - timed[0][0] > 1.0  # said at once, not with everything else once the model has loaded
    assert "inject pdf-to-markdown" in stdout
    assert "inject nothing (small talk" in stdout
    # one number per message, or how the two add up (#34.10: "score 0.498" and "similarity 0.472", unexplained)
    hint = re.search(r"inject a hint naming .*\(score (\S+) = similarity (\S+) \+ word match (\S+)\)", stdout)
    assert hint and abs(float(hint[1]) - float(hint[2]) - float(hint[3])) <= 0.0015, stdout


def test_a_build_on_a_terminal_says_at_once_what_it_waits_for_then_counts_the_texts_and_the_time_left(
        tmp_path, default_model):
    argv = [sys.executable, "-m", "semantic_skills", "build", "--skills-dir", str(EXAMPLES / "skills"), "--index-dir",
            str(tmp_path / "index"), "--full"]
    status, screen = on_terminal(argv, cwd=REPO)

    assert status == 0, screen
    (_, first), *_ = screen
    assert first == "Loading the embedder (sentence-transformers bundled:all-MiniLM-L6-v2)..."  # before that wait
    bars = [(at, re.search(r"^Embedding +\[[#-]+\] +(\d+)/(\d+)( +\d\d:\d\d:\d\d)? +\d+ s$", text), text)
            for at, text in screen if text.startswith("Embedding")]
    assert bars and all(found for _, found, _ in bars), bars  # each with the texts done, the total, the seconds
    total = int(bars[-1][1].group(2))
    assert bars[0][1].group(1) == "0" and bars[-1][1].group(1) == str(total) and total > 10  # a view per text
    for _, found, _ in bars:  # the time left from the pace so far, once anything is done and until the end
        assert bool(found.group(3)) == (0 < int(found.group(1)) < total), bars
    piped = subprocess.run([*argv, "--embedder", "onnx"], cwd=REPO, capture_output=True, text=True, timeout=300)
    assert piped.returncode == 0 and piped.stderr == ""  # a pipe gets the report alone (from any embedder)
    assert piped.stdout.startswith("Indexed 10 skills in ")


def test_a_wait_longer_than_two_seconds_is_announced_on_a_terminal_only(capsys, monkeypatch):
    from semantic_skills.cli.progress import announced

    for terminal in (True, False):
        monkeypatch.setattr(sys.stderr, "isatty", lambda: terminal)
        with announced("loading the model", after=0.05):
            time.sleep(0.5)
        with announced("never said", after=5):
            pass
    time.sleep(0.1)
    assert capsys.readouterr().err == "loading the model...\n"  # once: on the terminal, for the slow wait


def test_a_model_that_loads_for_seconds_has_them_counted_on_its_line(capsys, monkeypatch):
    from semantic_skills.cli import progress

    monkeypatch.setattr(progress, "TICK_SECONDS", 0.05, raising=False)
    with progress.TerminalProgress().loading("onnx bundled:all-MiniLM-L6-v2-int8"):
        time.sleep(0.4)

    note = "Loading the embedder (onnx bundled:all-MiniLM-L6-v2-int8)..."
    err = capsys.readouterr().err
    counts = re.fullmatch(rf"{re.escape(note)}((?:\r{re.escape(note)} \d+ s)+)\n", err)
    assert counts and counts.group(1).count("\r") >= 3, repr(err)  # said at once, then counted on its line


def test_a_bar_whose_first_batch_takes_seconds_counts_them_meanwhile(monkeypatch, tmp_path):
    from semantic_skills.cli import progress

    monkeypatch.setattr(progress, "TICK_SECONDS", 0.05, raising=False)
    with (tmp_path / "tty").open("w+") as terminal:
        monkeypatch.setattr(sys, "stderr", terminal)
        monkeypatch.setattr(terminal, "isatty", lambda: True)
        bar = progress.TerminalBar(50)
        time.sleep(1.3)  # the first batch, not done yet
        drawn_before_the_batch = terminal.tell()
        bar.advance(16)
        bar.close()
        terminal.seek(0)
        drawn = terminal.read()

    waiting = re.findall(r"Embedding +\[-+\] +0/50 +(\d+) s", drawn[:drawn_before_the_batch])
    assert waiting[:2] == ["0", "1"], repr(drawn)  # redrawn while the batch ran, with the seconds it took
    assert re.search(r"16/50 .*\d s", drawn)


def test_doctors_note_before_a_slow_check_counts_its_seconds_on_a_terminal_only(capsys, monkeypatch):
    from semantic_skills.cli import doctor, progress
    from semantic_skills.hermes.doctor.report import Progress

    monkeypatch.setattr(progress, "TICK_SECONDS", 0.05, raising=False)
    note = "...  starting the routing worker (loading the index and the model; up to 120 s)..."
    for terminal in (True, False):
        monkeypatch.setattr(sys.stdout, "isatty", lambda: terminal)
        with doctor._print(Progress(note[5:])):
            time.sleep(0.4)
        out = capsys.readouterr().out
        if terminal:
            counts = re.fullmatch(rf"{re.escape(note)}((?:\r{re.escape(note)} \d+ s)+)\n", out)
            assert counts and counts.group(1).count("\r") >= 3, repr(out)
        else:
            assert out == note + "\n"  # a pipe gets the line alone


def test_the_command_line_prints_the_plugins_warnings_and_none_of_the_hermes_modules_it_imports():
    """Hermes 0.20.1 runs ``hermesx semantic-skills doctor`` in a process of its own where nothing configured logging,
    and Hermes' tools, imported by the listing check, warned there about Hermes' own SQLite on the user's terminal."""
    script = textwrap.dedent("""\
        import logging, sys
        from semantic_skills.cli.app import main

        @main.command()
        def noisy():
            logging.getLogger("hermes_state").warning("Hermes' own warning")
            logging.getLogger("semantic_skills.hermes.home_index").warning("the plugin's warning")

        sys.argv = ["semantic-skills", "noisy"]
        main()
        """)
    done = subprocess.run([sys.executable, "-c", script], cwd=REPO, capture_output=True, text=True, timeout=120)

    assert done.returncode == 0, done.stderr
    assert done.stderr == "the plugin's warning\n"


def test_the_installed_console_script_runs(examples_index):
    script = shutil.which("semantic-skills")
    if script is None:
        pytest.skip("the semantic-skills console script is not on PATH (the project is not pip-installed here)")
    result = subprocess.run([script, "status", "--index-dir", str(examples_index), "--json"], capture_output=True,
                            text=True, timeout=120)
    assert result.returncode == 0, result.stderr
    assert last_json(result.stdout)["skills"] == 10


def test_importing_the_package_loads_no_heavy_library():
    script = textwrap.dedent("""\
        import json, sys
        import semantic_skills
        from semantic_skills import SkillRouter, build_index, SemanticSkillsError
        import semantic_skills.cli
        heavy = ("torch", "sentence_transformers", "litellm", "transformers")
        print(json.dumps([m for m in heavy if m in sys.modules]))
        """)
    result = subprocess.run([sys.executable, "-c", script], cwd=REPO, capture_output=True, text=True, timeout=120)
    assert result.returncode == 0, result.stderr
    assert json.loads(result.stdout) == []


def test_sgd_dev_set_builds_and_routes_one_decision_per_query(tmp_path, onnx_embedder):
    """The issue's check, on the first 40 queries (the full file is run by hand), indexed with onnx."""
    skills = shared_path("data", "dev", "sgd", "skills")
    queries_file = shared_path("data", "dev", "sgd", "queries.jsonl")
    subset = tmp_path / "queries.jsonl"
    lines = queries_file.read_text(encoding="utf-8").splitlines()[:40]
    subset.write_text("\n".join(lines) + "\n", encoding="utf-8")

    built = run("build", "--skills-dir", skills, "--index-dir", tmp_path / "index", "--embedder", "onnx", "--json")
    assert built.returncode == 0, built.stderr
    assert last_json(built.stdout)["added"] == len(list(skills.glob("*/SKILL.md")))

    routed = run("route", "--index-dir", tmp_path / "index", "--queries", subset)
    assert routed.returncode == 0, routed.stderr
    decisions = [json.loads(line) for line in routed.stdout.splitlines()]
    assert [d["query"] for d in decisions] == [json.loads(line)["query"] for line in lines]
    assert all({"skill", "score", "reason", "candidates"} <= d.keys() for d in decisions)
