"""Security: nothing Hermes would not offer, no paid call for strangers, no arbitrary reads, no credentials, caps.

The session's Hermes home (see conftest) holds, next to the example skills,
one skill per reason Hermes would not offer it, each written to be the best
match for its own query: the tests show the filter, not the ranking, keeps
it out.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import textwrap
from pathlib import Path

import numpy as np
import pytest

from semantic_skills.builder import build_index
from semantic_skills.embedders.litellm import LiteLLMEmbedder
from semantic_skills.index.store import load_index
from semantic_skills.injection import neutralise
from semantic_skills.settings import EmbedderSettings
from semantic_skills.skills.discovery import SkillsRoot
from semantic_skills.skills.front_matter import strip_front_matter
from semantic_skills.skills.parsing import MAX_DESCRIPTION_CHARS

from hermes_testkit import Gateway, subprocess_env
from reliability_kit import (
    FORBIDDEN,
    HERMES_NAME_LENGTH,
    KEY_ENV,
    OVERSIZED_QUERY,
    OVERSIZED_SKILL,
    WORKER_READY_SECONDS,
    agent_context,
    litellm_settings,
    make_home,
    plugin_loaded,
)
from support import REPO, FakeEmbeddingServer, write_skill

REMOTE_DOCKER = "docker compose services keep restarting or cannot reach each other"  # close for the fake vectors
BLOCK_OVERHEAD = 1000  # delimiters, the note and the truncation line around a capped body


def search_skills(args) -> dict:
    """``search_skills`` dispatched through Hermes' tool registry, as the agent calls it."""
    from tools.registry import registry

    answer = registry.dispatch("search_skills", args)
    assert isinstance(answer, str)
    return json.loads(answer)


# --------------------------------------------------------------------------- what Hermes would not offer


def test_the_quarantine_is_never_indexed(plugin):
    manifest, _ = load_index(plugin.index_dir)
    assert "tarot-reading" not in {r.name for r in manifest.skills}
    assert not [r.path for r in manifest.skills if "/.hub/" in r.path]


@pytest.mark.parametrize("why", [w for w in FORBIDDEN if w != "quarantined"])
def test_each_forbidden_skill_would_win_its_query_without_the_filters(plugin, onnx_embedder, why):
    """The control for the tests below: left unfiltered, the forbidden skill is the best match."""
    name, _folder, query = FORBIDDEN[why]
    manifest, vectors = load_index(plugin.index_dir)
    main_rows = vectors[[r.row_start for r in manifest.skills]]  # each skill's main vector
    scores = main_rows @ onnx_embedder.embed_query(query)  # the embedder that built the plugin's index
    assert manifest.skills[int(np.argmax(scores))].name.startswith(name[:HERMES_NAME_LENGTH])
    assert scores.max() >= 0.30  # the injection floor


def test_hermes_itself_does_not_offer_the_skill_for_an_inactive_environment(plugin_env):
    """The premise of that case: Hermes, in this process, finds kanban inactive and so hides the skill."""
    from agent.skill_utils import parse_frontmatter, skill_matches_environment

    _name, folder, _query = FORBIDDEN["for an inactive environment"]
    front, _body = parse_frontmatter((plugin_env.home / "skills" / folder / "SKILL.md").read_text())
    assert front["environments"] == ["kanban"] and not skill_matches_environment(front)


FORBIDDEN_ON = [(why, platform) for why in sorted(FORBIDDEN) for platform in ("whatsapp", "telegram", "cli")
                if why != "disabled on whatsapp" or platform == "whatsapp"]


@pytest.mark.parametrize("why, platform", FORBIDDEN_ON)
def test_a_skill_hermes_would_not_offer_is_never_injected_nor_listed(gateway, monkeypatch, why, platform):
    name, _folder, query = FORBIDDEN[why]
    name = name[:HERMES_NAME_LENGTH]
    monkeypatch.setenv("HERMES_SESSION_PLATFORM", platform)

    if platform == "whatsapp":  # the gateway path: the hook rewrites, or pre_llm_call adds context
        turn = gateway.send(query, gateway.new_user())
        delivered = turn.text + turn.context
    else:  # the CLI, cron and API-server path
        delivered = agent_context(query, platform, f"{platform}-{name}")
    found = search_skills({"query": query, "limit": 10})

    assert f'name="{name}' not in delivered  # a prefix: the long name must not get in under its full length
    listed = [r["name"] for r in found["results"]] + [(found["best"] or {}).get("name") or ""]
    assert not [n for n in listed if n.startswith(name)]


def test_a_skill_disabled_on_one_platform_is_still_offered_on_another(plugin_env):
    name, _folder, query = FORBIDDEN["disabled on whatsapp"]
    assert agent_context(query, "telegram", "telegram-birds").startswith(f'<skill-context name="{name}"')
    assert f'name="{name}"' not in agent_context(query, "whatsapp", "whatsapp-birds")


# --------------------------------------------------------------------------- strangers cost nothing


@pytest.fixture()
def remote_plugin(plugin, tmp_path, monkeypatch):
    """The plugin loaded for a Hermes home whose index uses the fake remote embeddings server.

    Depends on the session ``plugin`` so that one is loaded first and is back in place afterwards.
    """
    monkeypatch.setenv(KEY_ENV, "sk-paid-key")
    with FakeEmbeddingServer() as server:
        home = make_home(tmp_path, {"route_timeout_ms": 10000, **litellm_settings(server.url)})
        embedder = LiteLLMEmbedder("openai/fake-embed", api_base=server.url, api_key_env=KEY_ENV)
        build_index([SkillsRoot(home / "skills")], home / "skills_index", embedder)
        with plugin_loaded(home) as runtime:
            assert runtime.client.wait_ready(WORKER_READY_SECONDS), runtime.client.status.detail
            server.requests.clear()
            yield server


def test_an_unauthorized_sender_never_causes_a_remote_embedding_call(remote_plugin, tmp_path, monkeypatch):
    from hermes_cli.plugins import invoke_hook

    owner = "15550000000@s.whatsapp.net"
    for name in ("GATEWAY_ALLOWED_USERS", "WHATSAPP_ALLOW_ALL_USERS", "GATEWAY_ALLOW_ALL_USERS"):
        monkeypatch.delenv(name, raising=False)
    monkeypatch.setenv("WHATSAPP_ALLOWED_USERS", owner)
    gateway = Gateway(tmp_path / "sessions")
    strangers = [gateway.new_user() for _ in range(3)]

    assert [gateway.send(REMOTE_DOCKER, stranger) for stranger in strangers] == [None] * 3
    direct = invoke_hook("pre_gateway_dispatch", event=gateway.event(REMOTE_DOCKER, strangers[0]),
                         gateway=gateway.runner, session_store=gateway.runner.session_store)
    assert direct == [] and remote_plugin.requests == []

    turn = gateway.send(REMOTE_DOCKER, owner)  # the control: the owner's message is embedded remotely
    assert turn.text.startswith('<skill-context name="docker-compose-debug"')
    assert len(remote_plugin.requests) == 1


# --------------------------------------------------------------------------- search_skills reads only indexed skills


CANARY = "CANARY-4b1d-never-return-this"


@pytest.fixture()
def canary(tmp_path) -> Path:
    """A SKILL.md outside every skills root, and a plain file beside it."""
    path = write_skill(tmp_path / "elsewhere", "secret", f"---\nname: secret\ndescription: {CANARY}\n---\n{CANARY}\n")
    (tmp_path / "elsewhere" / "notes.txt").write_text(CANARY)
    return path


def crafted_arguments(canary: Path) -> list:
    relative = os.path.relpath(canary, REPO)
    return [
        {"query": str(canary)}, {"query": "../" * 12 + str(canary).lstrip("/")}, {"query": relative},
        {"query": f"file://{canary}"}, {"query": "$(cat /etc/passwd)"}, {"query": "{{ path }}", "path": str(canary)},
        {"query": "docker", "path": str(canary), "skill": str(canary), "name": str(canary), "file": str(canary)},
        {"query": "docker", "limit": 10**30}, {"query": "docker", "limit": -7}, {"query": "docker", "limit": "9" * 50},
        {"query": "docker", "limit": float("inf")}, {"query": "docker", "limit": float("nan")},
        {"query": "docker", "limit": [1]}, {"query": "docker", "limit": {"n": 1}}, {"query": "docker", "limit": None},
        {"query": ["docker"]}, {"query": {"text": "docker"}}, {"query": None}, {"query": 7}, {"query": ""},
        {"query": "docker" * 100_000}, {"query": "\x00" + str(canary)}, {}, None, [str(canary)], str(canary),
    ]


def test_crafted_search_skills_arguments_only_ever_return_indexed_skills(plugin_env, canary):
    manifest, _ = load_index(plugin_env.index_dir)
    bodies = {r.name: strip_front_matter(Path(r.path).read_text(encoding="utf-8")).strip("\n")
              for r in manifest.skills if r.name != OVERSIZED_SKILL}
    for args in crafted_arguments(canary):
        answer = search_skills(args)
        assert CANARY not in json.dumps(answer), args
        if "error" in answer:
            assert answer["status"] in ("invalid_arguments", "error"), answer
            continue
        assert {r["name"] for r in answer["results"]} <= {r.name for r in manifest.skills}
        assert 1 <= len(answer["results"]) <= 10
        best = answer["best"]
        if best and best["name"] in bodies:
            assert best["content"] == neutralise(bodies[best["name"]])  # no tag of the body stays a tag


# --------------------------------------------------------------------------- caps


def test_a_search_skills_result_is_capped(plugin_env):
    cap = plugin_env.runtime.refresh().max_tool_chars
    answer = search_skills({"query": OVERSIZED_QUERY, "limit": 10})

    assert answer["best"]["name"] == OVERSIZED_SKILL and answer["best"]["truncated"] is True
    assert len(answer["best"]["content"]) <= cap + BLOCK_OVERHEAD
    assert all(len(r["description"]) <= MAX_DESCRIPTION_CHARS for r in answer["results"])
    results_budget = 10 * (64 + MAX_DESCRIPTION_CHARS + 100)
    assert len(json.dumps(answer, ensure_ascii=False)) <= cap + BLOCK_OVERHEAD + results_budget + len(OVERSIZED_QUERY)


# --------------------------------------------------------------------------- credentials


AUDIT_SITE = textwrap.dedent("""\
    import os, sys
    _log = os.environ.get("SEMANTIC_SKILLS_AUDIT_OPENS")
    if _log:
        _out = open(_log, "a", buffering=1)

        def _record(event, args):
            if event == "open" and args and isinstance(args[0], (str, bytes)):
                _out.write(os.path.abspath(os.fsdecode(args[0])) + "\\n")

        sys.addaudithook(_record)
    """)

DECOY_CREDENTIALS = [".aws/credentials", ".netrc", ".git-credentials", ".docker/config.json", ".ssh/id_ed25519",
                     ".config/gcloud/application_default_credentials.json", ".cache/huggingface/token",
                     ".huggingface/token", ".kube/config", ".pypirc", ".npmrc", ".config/gh/hosts.yml", ".env",
                     ".config/litellm/config.yaml", ".openai/api_key"]

GATEWAY_SCRIPT = textwrap.dedent("""
    import json, sys
    sys.path[:0] = [{testkit!r}, {tests!r}]
    from hermes_cli.plugins import get_plugin_manager
    from hermes_testkit import Gateway
    from semantic_skills.hermes.runtime import current_runtime
    from pathlib import Path

    get_plugin_manager().discover_and_load(force=True)
    assert current_runtime().client.wait_ready(240), current_runtime().client.status.detail
    gateway = Gateway(Path({sessions!r}))
    turn = gateway.send({message!r}, gateway.new_user())
    from tools.registry import registry
    found = json.loads(registry.dispatch("search_skills", {{"query": {message!r}}}))
    print(json.dumps({{"injected": turn.text.startswith("<skill-context"), "found": found["results"][0]["name"]}}))
""")


def test_the_plugin_reads_no_other_tools_credential_files(tmp_path, examples_index):
    """CLI builds and routes, the gateway hook, the worker and search_skills, under a HOME full of decoys. The
    route loads the default model: its libraries (huggingface_hub) are the ones that know the token decoys."""
    home = tmp_path / "home"
    for rel in DECOY_CREDENTIALS:
        (home / rel).parent.mkdir(parents=True, exist_ok=True)
        (home / rel).write_text("OPENAI_API_KEY=sk-decoy\naws_secret_access_key = decoy\n")
    (tmp_path / "site").mkdir()
    (tmp_path / "site" / "sitecustomize.py").write_text(AUDIT_SITE)
    opens = tmp_path / "opens.log"

    with FakeEmbeddingServer() as server:
        hermes_home = make_home(tmp_path / "hermes", {"route_timeout_ms": 10000, **litellm_settings(server.url)})
        env = dict(subprocess_env(hermes_home), HOME=str(home), WHATSAPP_ALLOWED_USERS="*",
                   SEMANTIC_SKILLS_AUDIT_OPENS=str(opens), **{KEY_ENV: "sk-from-the-environment"})
        env["PYTHONPATH"] = os.pathsep.join([str(tmp_path / "site"), env["PYTHONPATH"]])

        def run(*args: str) -> str:
            done = subprocess.run([sys.executable, *args], env=env, capture_output=True, text=True, timeout=600,
                                  cwd=tmp_path, stdin=subprocess.DEVNULL)
            assert done.returncode == 0, done.stderr[-3000:]
            return done.stdout

        run("-m", "semantic_skills", "build")
        run("-m", "semantic_skills", "route", "--embedder", "sentence-transformers", "--index-dir",
            str(examples_index), REMOTE_DOCKER)
        report = json.loads(run("-c", GATEWAY_SCRIPT.format(
            testkit=str(REPO / "tests" / "hermes"), tests=str(REPO / "tests"), sessions=str(tmp_path / "sessions"),
            message=REMOTE_DOCKER)).strip().splitlines()[-1])
        assert server.requests and {r["auth"] for r in server.requests} == {"Bearer sk-from-the-environment"}

    assert report == {"injected": True, "found": "docker-compose-debug"}
    opened = set(opens.read_text().splitlines())
    assert any("semantic_skills" in p for p in opened)  # the audit saw the plugin's own reads
    assert sorted(p for p in opened if p.startswith(str(home))) == []


def test_importing_litellm_through_the_embedder_loads_no_dotenv_file():
    """litellm reads the first ``.env`` above its own folder on import unless told not to."""
    script = textwrap.dedent("""\
        import json, dotenv
        calls = []
        dotenv.load_dotenv = lambda *args, **kwargs: calls.append(repr(args)) or False
        from semantic_skills.embedders.litellm import LiteLLMEmbedder
        LiteLLMEmbedder("openai/text-embedding-3-small").load()
        print(json.dumps(calls))
        """)
    env = {k: v for k, v in os.environ.items() if k != "LITELLM_MODE"}
    done = subprocess.run([sys.executable, "-c", script], cwd=REPO, env=env, capture_output=True, text=True,
                          timeout=300)
    assert done.returncode == 0, done.stderr[-2000:]
    assert json.loads(done.stdout.strip().splitlines()[-1]) == []


def test_a_skill_file_swapped_after_the_build_is_read_only_if_it_still_is_a_skill_file(tmp_path, monkeypatch, canary):
    """A SKILL.md replaced by a link out of the skills root, by a link into its quarantine, or by a FIFO, is never
    read into a prompt."""
    import shutil

    from semantic_skills.worker.client import RouterClient
    from semantic_skills.worker.protocol import OK

    monkeypatch.setenv(KEY_ENV, "sk-test")
    skills = tmp_path / "skills"
    shutil.copytree(REPO / "examples" / "skills", skills)
    docker = skills / "devops" / "docker-compose-debug" / "SKILL.md"
    quarantined = write_skill(skills / ".hub" / "quarantine", "docker-compose-debug", canary.read_text())
    with FakeEmbeddingServer() as server:
        build_index([SkillsRoot(skills)], tmp_path / "index",
                    LiteLLMEmbedder("openai/fake-embed", api_base=server.url, api_key_env=KEY_ENV))
        embedder = EmbedderSettings.from_mapping(litellm_settings(server.url)["embedder"])
        client = RouterClient(tmp_path / "index", embedder, stall_seconds=60)
        client.start()
        try:
            assert client.wait_ready(WORKER_READY_SECONDS), client.status.detail
            assert client.route(REMOTE_DOCKER, (), timeout=30).data["skill"] == "docker-compose-debug"
            answers = []
            for replace in (lambda: docker.symlink_to(canary), lambda: docker.symlink_to(quarantined),
                            lambda: os.mkfifo(docker)):
                docker.unlink()
                replace()
                answers.append(client.route(REMOTE_DOCKER, (), timeout=30))
                answers.append(client.search(REMOTE_DOCKER, 3, (), timeout=30))
        finally:
            client.close()

    for answer in answers:
        assert answer.status == OK, answer.error
        assert CANARY not in json.dumps(answer.data)
        assert answer.data.get("skill") is None
        assert (answer.data.get("best") or {}).get("name") != "docker-compose-debug"
