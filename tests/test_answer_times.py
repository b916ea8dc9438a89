"""The gateway's wait for a local embedder follows the routing worker's measured answers (issue 35).

The estimator (``worker/answer_times.py``) and the wait it gives
(``hermes/budget.route_timeout``) alone, then the real worker and client: the
warm-up routes seed it, every answer counts when it arrives (also one nobody
waited for), and another worker starts it afresh.
"""

from __future__ import annotations

import pytest

from semantic_skills.hermes.budget import (
    LOCAL_ROUTE_TIMEOUT_MS,
    MAX_LOCAL_ROUTE_TIMEOUT_MS,
    REMOTE_ROUTE_TIMEOUT_MS,
    ROUTE_WAIT_MARGIN,
    route_timeout,
)
from semantic_skills.worker.answer_times import WINDOW, AnswerTimes
from semantic_skills.worker.client import RouterClient
from semantic_skills.worker.pending import result_within
from semantic_skills.worker.protocol import OK, TIMEOUT

from support import WORKER_READY_SECONDS, wait_until

FLOOR, CAP = LOCAL_ROUTE_TIMEOUT_MS / 1000, MAX_LOCAL_ROUTE_TIMEOUT_MS / 1000
PDF = "convert this scanned PDF into clean markdown"


def local_wait(times: AnswerTimes) -> float:
    return route_timeout(0, remote=False, median_answer=times.median)


def test_before_any_answer_is_timed_a_local_embedder_waits_24_ms_and_a_remote_one_200():
    assert AnswerTimes().median is None
    assert local_wait(AnswerTimes()) == FLOOR == 0.024
    assert route_timeout(0, remote=True, median_answer=None) == REMOTE_ROUTE_TIMEOUT_MS / 1000 == 0.200


@pytest.mark.parametrize("median, wait", [(0.005, FLOOR), (0.030, ROUTE_WAIT_MARGIN * 0.030), (0.030, 0.0375),
                                          (0.500, CAP), (3600.0, CAP)])
def test_the_wait_is_a_margin_over_the_median_answer_between_24_and_45_ms(median, wait):
    times = AnswerTimes()
    for seconds in (median, median * 0.9, median * 1.1):
        times.add(seconds)
    assert times.median == pytest.approx(median)
    assert local_wait(times) == pytest.approx(wait)


def test_a_set_route_timeout_wins_and_a_remote_embedder_keeps_200_ms_whatever_was_measured():
    slow = AnswerTimes()
    slow.add(0.040)
    assert route_timeout(80, remote=False, median_answer=slow.median) == 0.080
    assert route_timeout(10, remote=False, median_answer=slow.median) == 0.010
    assert route_timeout(0, remote=True, median_answer=slow.median) == 0.200


def test_the_window_is_bounded_and_a_burst_of_slow_answers_is_forgotten_after_half_of_it():
    times = AnswerTimes()
    for _ in range(10 * WINDOW):
        times.add(5.0)  # a hung worker's answers, or a burst under load
    assert len(times) == WINDOW and local_wait(times) == CAP
    for number in range(WINDOW // 2):
        times.add(0.020)
        assert local_wait(times) == CAP, number  # the slow ones are still half of the window
    times.add(0.020)
    assert local_wait(times) == pytest.approx(ROUTE_WAIT_MARGIN * 0.020)


def test_answers_that_missed_the_wait_count_with_their_real_time():
    """Timeouts are not left out (the estimate would see only the fast answers): a late answer is timed when it
    arrives, and a majority of late ones raises the wait."""
    times = AnswerTimes()
    for _ in range(WINDOW):
        times.add(0.010)
    for _ in range(WINDOW // 2 + 1):
        times.add(0.036)  # each one later than the 24 ms waited for it
    assert local_wait(times) == pytest.approx(ROUTE_WAIT_MARGIN * 0.036)


def test_clearing_forgets_every_time():
    times = AnswerTimes()
    times.add(0.040)
    times.clear()
    assert (len(times), times.median, local_wait(times)) == (0, None, FLOOR)


# --------------------------------------------------------------------------- the real worker and client


@pytest.fixture()
def client(onnx_examples_index):
    served = RouterClient(onnx_examples_index, restart_delays=(0.1,))
    served.start()
    assert served.wait_ready(WORKER_READY_SECONDS), served.status.detail
    yield served
    served.close()


def test_the_worker_reports_its_warm_up_routes_and_the_client_starts_from_them(client):
    assert len(client.route_times) == 1
    assert 0 < client.route_times.median < 5.0  # an answer's time, in seconds, on any machine


def test_every_route_answer_is_timed_when_it_arrives_also_one_nobody_waited_for(client):
    timed_before = len(client.route_times)
    future = client.route_async(PDF, ())
    given_up = result_within(future, 0.0)  # the gateway stopped waiting at once: its answer is late
    answer = future.result(timeout=30)
    wait_until(lambda: len(client.route_times) == timed_before + 1, timeout=5, interval=0.01)

    assert given_up.status == TIMEOUT and answer.status == OK
    on_time = client.route(f"{PDF} again", (), timeout=30)
    wait_until(lambda: len(client.route_times) == timed_before + 2, timeout=5, interval=0.01)
    assert on_time.status == OK
    client.search(PDF, 3, (), timeout=30)
    client.submit("ping").result(timeout=30)
    assert len(client.route_times) == timed_before + 2  # only route answers are a route's time


def test_another_worker_starts_the_times_afresh_from_its_own_warm_up(client):
    for number in range(3):
        client.route(f"{PDF} {number}", (), timeout=30)
    wait_until(lambda: len(client.route_times) == 4, timeout=5, interval=0.01)
    first = client._process.pid
    client._process.kill()
    wait_until(lambda: client._process is not None and client._process.pid != first and client.ready,
               timeout=WORKER_READY_SECONDS, interval=0.05)
    wait_until(lambda: len(client.route_times) == 1, timeout=5, interval=0.01)  # the new worker's warm-up
