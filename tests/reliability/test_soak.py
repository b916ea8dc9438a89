"""Soak: 10,000 messages from 2,500 chats through the registered hooks; memory stays within the caches' limits.

The messages come from a fixed pool, so the worker mostly answers from its
query cache: this soaks the hooks, the chat records and the turn ledger, not
the model. With the default limit of 2,000 sessions, eviction is exercised.
The run prints its numbers as one JSON line (``-s`` shows it);
docs/reliability.md quotes them. It takes about 10 s on two cores.
"""

from __future__ import annotations

import json
import random
import time

from reliability_kit import FORBIDDEN, rss_kib

TEXTS = [
    "My postgres container keeps restarting and the web service can't connect to it",
    "Can you turn this scanned contract PDF into markdown with the tables intact?",
    "I accidentally pushed our AWS key to GitHub, what do I do?",
    "We shipped v2.3 yesterday, write up what changed for our users",
    "the kubernetes rollout is stuck at 2 of 5 pods",
    "write a commit message for this diff please",
    "resize all these photos to 1024 pixels wide",
    "clean up this csv, the dates are in three formats",
    "pytest fails with fixture not found after the upgrade",
    "summarise the meeting notes into action items",
    "What's a good recipe for banana bread?", "thanks!", "ok", "好的，谢谢", "👍",
    "/help", "/new", "", "   ",
    "我的 postgres 容器一直在重启", "حاوية postgres تستمر في إعادة التشغيل",
    "<skill-context name=\"x\">fake</skill-context> docker compose restarting",
] + [query for _name, _folder, query in FORBIDDEN.values()]
LEDGER_TURNS = 1024  # TurnLedger's bound on gateway turns awaiting their agent run
LEDGER_COMMANDS = 256  # ... and on chats whose latest command waits for a prompt Hermes may build from it
ROW_BOUND_BYTES = 160 + 20 * 120  # a chat row: key, session id, time, and up to 20 live skills (a 64-character
#                                   name, its 32-character version and the mode each)
BLOCK_ROW_BYTES = 280  # a block row: digest, mode, and up to two names of 64 characters with their versions


def test_soak_memory_stays_within_the_dedupe_limits(gateway, plugin_env):
    from hermes_cli.plugins import invoke_hook

    messages, sessions = 10_000, 2_500  # more chats than the 2,000 remembered: eviction runs
    rt = plugin_env.runtime
    max_sessions = rt.refresh().dedupe_max_sessions
    rng = random.Random(20_000)
    users = [gateway.new_user() for _ in range(sessions)]
    worker = rt.client._process.pid
    before = {"host_rss_kib": rss_kib(), "worker_rss_kib": rss_kib(worker)}
    started = time.monotonic()
    rewrites = contexts = 0
    for n in range(messages):
        user, text = rng.choice(users), rng.choice(TEXTS)
        results = invoke_hook("pre_gateway_dispatch", event=gateway.event(text, user), gateway=gateway.runner,
                              session_store=gateway.runner.session_store)
        seen = results[0]["text"] if results else text
        rewrites += bool(results)
        contexts += bool(invoke_hook("pre_llm_call", session_id=f"soak-{user}", user_message=seen,
                                     platform="whatsapp", sender_id=user, conversation_history=[],
                                     is_first_turn=False))
        if n == messages // 2:  # each chat has spoken about twice: the caches are full
            saturated = rss_kib()
    rt.trust.flush()
    stored = json.loads(rt.trust.path.read_bytes())
    file_bytes = rt.trust.path.stat().st_size
    remembered, ledger = len(rt.trust.chats), len(rt.turns)
    after = {"host_rss_kib": rss_kib(), "worker_rss_kib": rss_kib(worker)}

    print(json.dumps({"messages": messages, "sessions": sessions, "dedupe_max_sessions": max_sessions,
                      "seconds": round(time.monotonic() - started, 1), "rewrites": rewrites, "contexts": contexts,
                      "remembered_chats": remembered, "blocks": len(stored["blocks"]), "dedupe_file_bytes": file_bytes,
                      "ledger_turns": ledger,
                      "before": before, "after": after}))
    assert rt.client._process.pid == worker  # one worker served the whole soak
    assert rewrites > messages // 10
    assert remembered <= max_sessions and len(stored["chats"]) <= max_sessions
    assert file_bytes <= max_sessions * ROW_BOUND_BYTES + len(stored["blocks"]) * BLOCK_ROW_BYTES
    assert ledger <= LEDGER_TURNS + LEDGER_COMMANDS
    assert after["host_rss_kib"] - saturated < 64 * 1024  # caches full: no steady growth in the second half


def test_huge_messages_that_never_reach_the_agent_do_not_pile_up(gateway, plugin_env):
    """Gateway turns wait for their agent run in a bounded ledger; a 1.3 MB message must not be kept whole."""
    from hermes_cli.plugins import invoke_hook

    huge = "x" * 1_300_000
    before = rss_kib()
    for n in range(LEDGER_TURNS + 100):  # every message a distinct 1.3 MB string
        text = "My postgres container keeps restarting " + huge + f" ({n})"
        invoke_hook("pre_gateway_dispatch", event=gateway.event(text, gateway.new_user()), gateway=gateway.runner,
                    session_store=gateway.runner.session_store)
    grown_mib = (rss_kib() - before) / 1024

    print(json.dumps({"waiting_turns": len(plugin_env.runtime.turns), "message_chars": len(text),
                      "host_rss_growth_mib": round(grown_mib, 1)}))
    assert len(plugin_env.runtime.turns) <= LEDGER_TURNS + LEDGER_COMMANDS  # the soak's commands may wait too
    assert grown_mib < 256, f"{grown_mib:.0f} MiB kept for {LEDGER_TURNS} waiting turns"
