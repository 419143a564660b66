"""Run mode (topos.playground.run_main): the script runs as __main__ and its output streams out in batches."""

import json
import signal
import sys
import types

import pytest

from topos import playground, show
from topos.playground.program import APPEND_INTERVAL, CHANGE_INTERVAL, OutputStream
from topos.show import Line, Plot


class FakeClock:
    def __init__(self):
        self.now = 0.0

    def __call__(self):
        return self.now


class FakeTimer:
    """Records when the stream asks to be woken; the test wakes it by hand."""

    signal = signal.SIGUSR1

    def __init__(self):
        self.started = []
        self.running = False

    def start(self, milliseconds):
        self.started.append(milliseconds)
        self.running = True

    def stop(self):
        self.running = False


def stream_with_fakes():
    batches = []
    clock = FakeClock()
    timer = FakeTimer()
    stream = OutputStream(lambda text: batches.append(json.loads(text)), timer, clock=clock)
    return stream, batches, clock, timer


def printed(batches):
    return "".join(item["text"] for batch in batches for item in batch["append"] if item["kind"] == "print")


def run(code, timer=None):
    batches = []
    end = json.loads(playground.run_main(code, lambda text: batches.append(json.loads(text)), timer))
    return batches, end


def test_the_main_guard_runs_and_what_it_prints_comes_out():
    code = 'print("module", __name__)\nif __name__ == "__main__":\n    print("training")\n'
    batches, end = run(code)
    assert printed(batches) == "module __main__\ntraining\n"
    assert end["error"] is None
    assert end["seconds"] >= 0


def test_main_is_put_back_and_the_script_leaves_no_trace():
    main = sys.modules["__main__"]
    limit = playground.MAX_OUTPUT_CHARACTERS
    _, end = run("import topos.playground\ntopos.playground.MAX_OUTPUT_CHARACTERS = 5\n")
    assert end["error"] is None
    assert sys.modules["__main__"] is main
    assert playground.MAX_OUTPUT_CHARACTERS == limit


def test_an_error_is_shown_as_the_readings_show_it_with_the_users_line():
    batches, end = run('print("before")\n\ndef f():\n    return 1 / 0\n\nf()\n')
    assert printed(batches) == "before\n"
    assert end["error"]["type"] == "ZeroDivisionError"
    assert end["error"]["line"] == 4
    assert "Traceback" in end["error"]["traceback"]


def test_sys_exit_with_no_code_ends_the_run_normally_and_another_code_is_an_error():
    _, end = run("import sys\nprint('done')\nsys.exit()\nprint('never')\n")
    assert end["error"] is None
    _, end = run("import sys\nsys.exit(3)\n")
    assert end["error"]["type"] == "SystemExit"
    assert end["error"]["line"] == 2


def test_printed_text_goes_at_once_then_at_most_every_append_interval():
    stream, batches, clock, timer = stream_with_fakes()
    stream.write("first\n")
    assert printed(batches) == "first\n"  # the first batch goes at once
    clock.now = APPEND_INTERVAL / 2
    stream.write("second\n")
    stream.write("third\n")
    assert len(batches) == 1, "text within the interval is held"
    assert timer.running and timer.started[-1] == pytest.approx(APPEND_INTERVAL * 500, abs=1)
    clock.now = APPEND_INTERVAL
    stream._wake(timer.signal, None)  # the timer goes off while the script is busy elsewhere
    assert len(batches) == 2 and batches[1]["append"] == [{"kind": "print", "text": "second\nthird\n"}]
    assert not timer.running


def test_a_line_shows_once_it_ends():
    stream, batches, clock, timer = stream_with_fakes()
    stream.write("loading")
    assert batches == [] and not timer.running, "half a line waits for its end, not for the timer"
    stream.write("... done\nnext")
    assert printed(batches) == "loading... done\n"
    stream.finish()
    assert printed(batches) == "loading... done\nnext"


def test_cards_keep_their_place_among_printed_lines_and_changes_are_sent_at_most_ten_a_second():
    stream, batches, clock, timer = stream_with_fakes()
    with show.watch(stream):
        stream.write("before\n")
        clock.now = 0.01
        curve = show.plot(Plot().layer(Line.y([3.0])).title("loss"))
        curve.update(Plot().layer(Line.y([3.0, 2.0])).title("loss"))  # still waiting: no change to send
        stream.write("after\n")
        clock.now = APPEND_INTERVAL + 0.01
        stream.flush()
        assert [item["kind"] for batch in batches for item in batch["append"]] == ["print", "plot", "print"]
        assert batches[-1]["append"][0]["layers"][0]["y"] == [3.0, 2.0]
        assert all(batch["changed"] == [] for batch in batches)
        # The card has been sent: each change is sent again as card 0, at most every CHANGE_INTERVAL.
        clock.now = 1.0
        curve.update(Plot().layer(Line.y([3.0, 2.0, 1.5])).title("loss"))
        clock.now = 1.0 + CHANGE_INTERVAL / 2
        curve.update(Plot().layer(Line.y([3.0, 2.0, 1.5, 1.2])).title("loss"))
        changes = [change for batch in batches for change in batch["changed"]]
        assert [number for number, _ in changes] == [0]
        assert changes[0][1]["layers"][0]["y"] == [3.0, 2.0, 1.5]
        stream.finish()
        changes = [change for batch in batches for change in batch["changed"]]
        assert changes[-1][1]["layers"][0]["y"] == [3.0, 2.0, 1.5, 1.2]
    assert str(curve).startswith("loss (x against y)\n  line 1: 4 points, first 3, last 1.2")


def test_progress_reports_the_newest_step_with_its_time():
    stream, batches, clock, timer = stream_with_fakes()
    with show.watch(stream):
        clock.now = 0.5
        show.progress(1, total=10)
        clock.now = 0.55
        show.progress(2, total=10)
        clock.now = 0.7
        show.progress(3, total=10)
    assert [batch["progress"] for batch in batches] == [
        {"step": 1, "total": 10, "seconds": 0.5},
        {"step": 3, "total": 10, "seconds": 0.7},
    ]


def test_progress_takes_whole_numbers_and_does_nothing_outside_run_mode():
    show.progress(3)
    show.progress(3, total=5)
    with pytest.raises(TypeError, match="whole number as step"):
        show.progress(1.5)
    with pytest.raises(ValueError, match="total of 0 or more"):
        show.progress(1, total=-1)


def test_a_card_made_by_hand_cannot_be_updated_and_an_update_checks_its_value():
    with pytest.raises(ValueError, match="cannot be updated"):
        show.Card("custom", {}, "text").update("x")
    card = show.lines(["a"])
    assert str(card.update(["b", "c"])) == "b\nc"
    with pytest.raises(TypeError, match="list of strings"):
        card.update("one line")


def test_printed_output_past_the_limit_is_cut_once():
    batches = []
    stream = OutputStream(lambda text: batches.append(json.loads(text)), limit=10)
    stream.write("0123456789abc\n")
    stream.write("more\n")
    stream.finish()
    assert printed(batches) == "0123456789\n… output cut here: printed output past 10 characters is not shown\n"


class AlarmTimer:
    """The timer as the page's worker makes it, from a real signal: SIGALRM, set with setitimer."""

    signal = signal.SIGALRM

    def start(self, milliseconds):
        signal.setitimer(signal.ITIMER_REAL, milliseconds / 1000)

    def stop(self):
        signal.setitimer(signal.ITIMER_REAL, 0)


def test_held_output_is_sent_by_the_timer_while_the_script_computes():
    # The script prints two lines in one instant (the second is held), then computes until the
    # second has been sent or ten seconds pass; only the timer can send it meanwhile.
    probe = types.ModuleType("_run_mode_probe")
    probe.sent = ""
    sys.modules[probe.__name__] = probe
    code = (
        "import sys, time\n"
        "probe = sys.modules['_run_mode_probe']\n"
        "print('first')\n"
        "print('second')\n"
        "deadline = time.monotonic() + 10\n"
        "while 'second' not in probe.sent and time.monotonic() < deadline:\n"
        "    pass\n"
        "print('sent while computing:', 'second' in probe.sent)\n"
    )
    batches = []

    def post(text):
        batches.append(json.loads(text))
        probe.sent = printed(batches)

    try:
        end = json.loads(playground.run_main(code, post, AlarmTimer()))
    finally:
        del sys.modules[probe.__name__]
    assert end["error"] is None
    assert printed(batches) == "first\nsecond\nsent while computing: True\n"
    assert signal.getsignal(signal.SIGALRM) is signal.SIG_DFL
